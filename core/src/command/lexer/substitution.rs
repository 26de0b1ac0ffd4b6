//! `$(...)`, `$((...))`, backquotes, `${...}` and the other `$` forms.

use super::{BRACED, Frame, FrameKind, Lexer};
use crate::command::ansi_c;
use crate::command::token::{Construct, TokenKind};

impl Lexer<'_> {
    /// Inside `${...}` everything is kept as written; only its end, its
    /// quotes and the substitutions inside it matter.
    pub(super) fn step_brace(&mut self) {
        let at = self.pos;
        let b = self.src.as_bytes()[at];
        // Within double quotes or a here-document's body, bash still runs
        // the substitutions between single quotes inside `${...}`.
        let substitutes = self.frame().kind == FrameKind::Body || self.word().dquote.is_some();
        let after_dollar = at > 0 && self.byte(at - 1) == Some(b'$');
        let word = self.word();
        let quoted = word.brace_dquote || word.brace_squote;
        let len = match b {
            b'"' if !word.brace_squote => {
                word.brace_dquote = !word.brace_dquote;
                1
            }
            b'}' if !quoted => {
                word.brace_depth -= 1;
                1
            }
            b'{' if !quoted && after_dollar => {
                word.brace_depth += 1;
                1
            }
            // Bash matches quotes inside `${...}` even within double
            // quotes: a `"` between single quotes there closes nothing.
            b'\'' if !word.brace_dquote && substitutes => {
                word.brace_squote = !word.brace_squote;
                1
            }
            b'\'' if !word.brace_dquote => match self.src[at + 1..].find('\'') {
                Some(n) => n + 2,
                None => {
                    self.unterminated(Construct::SingleQuote, at);
                    self.src.len() - at
                }
            },
            b'\\' => self.src[at + 1..]
                .chars()
                .next()
                .map_or(1, |c| 1 + c.len_utf8()),
            b'$' if matches!(self.byte(at + 1), Some(b'(')) => return self.dollar(true),
            b'`' => return self.backquote(),
            _ => {
                let run = self.src.as_bytes()[at..]
                    .iter()
                    .position(|&b| BRACED[usize::from(b)])
                    .unwrap_or(self.src.len() - at);
                run.max(1)
            }
        };
        let end = (at + len).min(self.src.len());
        let text = &self.src[at..end];
        self.word().text.push_str(text);
        self.pos = end;
    }

    pub(super) fn dollar(&mut self, in_dquote: bool) {
        let at = self.pos;
        match self.byte(at + 1) {
            Some(b'\'') if !in_dquote => {
                let mut text = std::mem::take(&mut self.word().text);
                let end = ansi_c::decode(self.src, at + 2, &mut text);
                self.word().text = text;
                match end {
                    Some(end) => self.pos = end,
                    None => {
                        self.unterminated(Construct::AnsiCQuote, at);
                        self.pos = self.src.len();
                    }
                }
            }
            Some(b'"') if !in_dquote => {
                // `$"..."` is a double quote translated by locale: same words.
                self.word().dquote = Some(at + 1);
                self.pos = at + 2;
            }
            Some(b'(') if self.byte(at + 2) == Some(b'(') => {
                self.open_in_word(FrameKind::Arith, at, 3);
            }
            Some(b'(') => self.open_in_word(FrameKind::Dollar, at, 2),
            Some(b'[') => self.open_in_word(FrameKind::Bracket, at, 2),
            Some(b'{') => {
                let word = self.word();
                if word.brace_depth == 0 {
                    word.brace_at = at;
                }
                word.brace_depth += 1;
                word.text.push_str("${");
                self.pos = at + 2;
            }
            _ => {
                self.word().text.push('$');
                self.pos = at + 1;
            }
        }
    }

    /// Opens a frame that belongs to the current word (a substitution).
    pub(super) fn open_in_word(&mut self, kind: FrameKind, at: usize, len: usize) {
        self.word();
        self.pos = at + len;
        self.frames.push(Frame::new(kind, at, true));
        if matches!(kind, FrameKind::Backquote { .. }) {
            self.backquotes += 1;
        }
        self.push(TokenKind::SubstitutionOpen, at, at + len, self.depth());
    }

    /// Closes the innermost frame, whose closer spans `pos..pos + len`.
    pub(super) fn close(&mut self, len: usize) {
        self.end_word();
        let end = (self.pos + len).min(self.src.len());
        let depth = self.depth();
        self.forget_delimiter();
        let frame = self.frames.pop().expect("only called above the top frame");
        if matches!(frame.kind, FrameKind::Backquote { .. }) {
            self.backquotes -= 1;
        }
        self.pos = end;
        // At the end of the line (`len == 0`) there is no closer to report.
        if frame.kind.in_word() {
            if len > 0 {
                self.push(TokenKind::SubstitutionClose, end - len, end, depth);
            }
            // A top-level word keeps its substitutions verbatim (they may be
            // a command's arguments). Deeper, only the opener is kept: such a
            // word is never the name, and copying every level's source into
            // every enclosing word would cost time quadratic in the nesting.
            // A here-document's delimiter is compared as typed, so it keeps
            // its substitutions whole too (one word, so still linear).
            // A here-document's body keeps nothing: its text is never read.
            let keep = if self.frame().kind == FrameKind::Body {
                frame.open_at
            } else if self.depth() == 0 || self.delimiter_next() {
                end
            } else {
                frame.open_at + 1
            };
            let raw = &self.src[frame.open_at..keep];
            self.word().text.push_str(raw);
        } else {
            if len > 0 {
                self.push(TokenKind::Operator, end - len, end, self.depth());
            }
            self.frame().cmd_pos = false;
        }
    }

    pub(super) fn backquote(&mut self) {
        if self.frame().kind == (FrameKind::Backquote { escaped: false }) {
            self.close(1);
        } else {
            let at = self.pos;
            self.open_in_word(FrameKind::Backquote { escaped: false }, at, 1);
        }
    }

    /// `` \` `` inside backquotes: a backquote one level further in.
    pub(super) fn backquote_escaped(&mut self, at: usize) {
        if self.frame().kind == (FrameKind::Backquote { escaped: true }) {
            self.pos = at;
            self.close(2);
        } else {
            self.open_in_word(FrameKind::Backquote { escaped: true }, at, 2);
        }
    }
}
