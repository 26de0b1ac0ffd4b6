//! Here-documents: their delimiters, and their bodies read as data up to
//! the line bash would end them at.

use super::Lexer;
use crate::command::token::TokenKind;

/// A here-document announced on the line, read after its end.
#[derive(Debug)]
pub(super) struct Heredoc {
    /// The delimiter after quote removal, as bash compares it.
    pub(super) delimiter: String,
    /// `<<-`: leading tabs of each body line are removed.
    pub(super) strip_tabs: bool,
    /// Any quoting in the delimiter: the body's `\`-newlines stay as they are.
    pub(super) quoted: bool,
}

impl Lexer<'_> {
    /// A pending `<<` announced in this frame or deeper is forgotten: its
    /// word cannot come any more.
    pub(super) fn forget_delimiter(&mut self) {
        if self.heredoc_next.is_some_and(|(_, at)| at >= self.depth()) {
            self.heredoc_next = None;
        }
    }

    /// Reads the bodies of the here-documents this line announced, each up
    /// to the first line that is its delimiter exactly, as bash compares
    /// them: carriage returns count, and in the body of an unquoted
    /// delimiter a `\`-newline joins two lines first.
    pub(super) fn heredoc_bodies(&mut self) {
        let mut joined = String::new();
        for heredoc in std::mem::take(&mut self.heredocs) {
            let body_start = self.pos;
            let mut body_end = self.src.len();
            let mut next = self.src.len();
            let mut line_start = self.pos;
            while line_start < self.src.len() {
                let (line, eol) = self.logical_line(line_start, heredoc.quoted, &mut joined);
                let line = if heredoc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line
                };
                if line == heredoc.delimiter {
                    body_end = line_start;
                    next = (eol + 1).min(self.src.len());
                    break;
                }
                line_start = eol + 1;
            }
            self.push(TokenKind::HeredocBody, body_start, body_end, self.depth());
            self.pos = next;
        }
    }

    /// The body line starting at `start` and the offset of its newline (or
    /// the end): unless `quoted`, a line ending in an odd number of
    /// backslashes goes on, without the `\`-newline, on the next.
    fn logical_line<'s>(
        &'s self,
        start: usize,
        quoted: bool,
        joined: &'s mut String,
    ) -> (&'s str, usize) {
        let src = self.src;
        let eol_from = |at: usize| src[at..].find('\n').map_or(src.len(), |n| at + n);
        let continues =
            |line: &str| !quoted && line.len() - line.trim_end_matches('\\').len() % 2 == 1;
        let mut eol = eol_from(start);
        if eol == src.len() || !continues(&src[start..eol]) {
            return (&src[start..eol], eol);
        }
        joined.clear();
        let mut from = start;
        loop {
            let line = &src[from..eol];
            if eol < src.len() && continues(line) {
                joined.push_str(&line[..line.len() - 1]);
                from = eol + 1;
                eol = eol_from(from);
            } else {
                joined.push_str(line);
                return (joined.as_str(), eol);
            }
        }
    }
}
