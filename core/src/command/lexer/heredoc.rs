//! Here-documents: their delimiters, and their bodies up to the line bash
//! would end them at.
//!
//! Bash finds a body's end line by line, before it reads anything in the
//! body. A quoted delimiter makes the body data; an unquoted one's body is
//! expanded when the command runs, so the command substitutions in it (and
//! in its `${...}`, `$((...))` and `$[...]`) run: those are lexed here, in
//! a lexer of their own over the body, the way bash reads them.

use super::{Frame, FrameKind, Lexer};
use crate::command::token::TokenKind;

/// How many here-document bodies may lie inside one another (a body's
/// substitution announcing another here-document, and so on). Each level
/// reads the rest of its body again, so the cap keeps the time linear in
/// the line; past it the lexer stops and says so
/// ([`Lexed::nested_too_deep`](crate::command::Lexed::nested_too_deep)).
pub(crate) const MAX_NESTED_BODIES: usize = 16;

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
            // Only a `$` or a backquote can start a substitution.
            let body = &self.src.as_bytes()[body_start..body_end];
            if !heredoc.quoted && memchr::memchr2(b'$', b'`', body).is_some() {
                self.lex_body(body_start, body_end);
            }
            self.pos = next;
        }
    }

    /// Lexes `start..end`, the body of an unquoted here-document, for the
    /// substitutions bash runs in it. Its tokens go to the same output, one
    /// level under the here-document; what it leaves open is not the line's.
    fn lex_body(&mut self, start: usize, end: usize) {
        if self.bodies == MAX_NESTED_BODIES {
            self.out.nested_too_deep = true;
            return;
        }
        let mut body = Lexer {
            src: &self.src[..end],
            pos: start,
            frames: vec![Frame::new(FrameKind::Body, start, false)],
            out: std::mem::take(&mut self.out),
            heredoc_next: None,
            heredocs: Vec::new(),
            backquotes: 0,
            after_for: false,
            base: self.depth(),
            bodies: self.bodies + 1,
        };
        let open = body.out.unterminated;
        body.lex_to_end();
        body.out.unterminated = open;
        self.out = body.out;
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
