//! Operators, newlines and comments.

use super::{Frame, FrameKind, Lexer};
use crate::command::token::TokenKind;

impl Lexer<'_> {
    pub(super) fn newline(&mut self, len: usize) {
        self.end_word();
        let at = self.pos;
        self.push(TokenKind::Newline, at, at + len, self.depth());
        self.pos += len;
        self.after_for = false;
        self.forget_delimiter();
        let frame = self.frame();
        frame.cmd_pos = !frame.kind.nocmd();
        frame.assign_ok = false;
        self.heredoc_bodies();
    }

    pub(super) fn comment(&mut self) {
        let at = self.pos;
        let in_backquote = matches!(self.frame().kind, FrameKind::Backquote { .. });
        let rest = &self.src.as_bytes()[at..];
        let len = rest
            .iter()
            .position(|&b| b == b'\n' || (in_backquote && b == b'`'))
            .unwrap_or(rest.len());
        // A `\r\n` line ending is the newline's, not the comment's.
        let end = if len > 0 && rest[len - 1] == b'\r' && rest.get(len) == Some(&b'\n') {
            at + len - 1
        } else {
            at + len
        };
        self.push(TokenKind::Comment, at, end, self.depth());
        self.pos = end;
    }

    pub(super) fn operator(&mut self, first: u8) {
        let at = self.pos;
        let rest = &self.src.as_bytes()[at..];
        let starts = |op: &str| rest.starts_with(op.as_bytes());
        let kind = self.frame().kind;
        if first == b'(' {
            let array = self
                .frame()
                .word
                .as_ref()
                .is_some_and(|w| w.text.ends_with('='));
            if array {
                return self.open_in_word(FrameKind::Array, at, 1);
            }
            // `((...))` in command position is arithmetic, as in bash: its
            // `<<` is a shift, not a here-document.
            // So is `for ((...))`'s.
            let frame = self.frame();
            if frame.word.is_none() && (frame.cmd_pos || self.after_for) && starts("((") {
                return self.open_in_word(FrameKind::Arith, at, 2);
            }
            self.end_word();
            let nocmd = kind.nocmd();
            self.push(TokenKind::Operator, at, at + 1, self.depth());
            self.pos = at + 1;
            self.frames
                .push(Frame::new(FrameKind::Subshell { nocmd }, at, true));
            return;
        }
        if first == b')' {
            match kind {
                FrameKind::Arith => return self.close(if starts("))") { 2 } else { 1 }),
                FrameKind::Dollar | FrameKind::Array | FrameKind::Subshell { .. } => {
                    return self.close(1);
                }
                FrameKind::Top
                | FrameKind::Backquote { .. }
                | FrameKind::Bracket
                | FrameKind::Subscript
                | FrameKind::Body => {}
            }
        }
        self.end_word();
        let op = [
            ";;&", ";;", ";&", ";", "&&", "&>>", "&>", "&", "||", "|&", "|", ")", "<<<", "<<-",
            "<<", "<&", "<>", "<", ">>", ">&", ">|", ">",
        ]
        .into_iter()
        .find(|op| starts(op))
        .expect("every operator's first byte has a one-byte form");
        self.push(TokenKind::Operator, at, at + op.len(), self.depth());
        self.pos = at + op.len();
        let depth = self.depth();
        self.heredoc_next = match op {
            _ if kind.nocmd() => None,
            "<<" => Some((false, depth)),
            "<<-" => Some((true, depth)),
            _ => None,
        };
        let separates = matches!(
            op,
            ";;&" | ";;" | ";&" | ";" | "&&" | "&" | "||" | "|&" | "|"
        );
        let frame = self.frame();
        frame.cmd_pos = separates && !frame.kind.nocmd();
        frame.assign_ok = false;
        self.after_for = false;
    }
}
