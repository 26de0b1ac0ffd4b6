//! A small shell lexer: just enough of bash's grammar to know, for every
//! word, its text after quote removal and whether it stands in command
//! position.
//!
//! It knows single, double and `$'...'` quotes, backslash escapes and line
//! continuations, comments, here-documents (their bodies ended where bash
//! ends them; a quoted delimiter's body is data, an unquoted one's is read
//! for the substitutions bash runs in it), the control and redirection
//! operators, subshells, `$(...)`, `$((...))`, `$[...]`, array subscripts
//! where an assignment may stand, backquotes and `${...}`. It expands
//! nothing. A carriage return is an ordinary character, as in bash, but
//! for `\r\n` and a `\r` that ends the line, which end a line. Where it
//! departs from bash it is on the side of seeing more commands, never fewer
//! (`\r\n` ends a line; a substitution bash would refuse to run because it
//! is left open in a here-document's body is read all the same): a line on
//! which bash would run `spear-capability` is never read as data
//! (`core/tests/command_bash.rs` asks bash itself). `shell-words` and `shlex`
//! cannot tell a quoted `";"` from a bare one, which is the whole question.
//!
//! It never fails: a line that leaves a quote or a substitution open is
//! lexed to its end and reported in [`Lexed::unterminated`]. It runs in time
//! linear in the line's length.
//!
//! This file is the state machine's core (its steps through words, quotes
//! and backslashes), kept whole because its steps read together; the
//! frames and words it keeps, operators, here-documents, subscripts and
//! substitutions are its submodules.

use super::token::{Construct, Lexed, Token, TokenKind, Unterminated};

mod frame;
mod heredoc;
mod operators;
mod subscript;
mod substitution;

use frame::{Frame, FrameKind, Word};
use heredoc::Heredoc;
pub(crate) use heredoc::MAX_NESTED_BODIES;
use subscript::is_assignment;

/// Lexes one command line.
pub fn lex(line: &str) -> Lexed {
    // A top-level word's text is never longer than the line, and the texts
    // of a line without substitutions add up to no more than it either: one
    // allocation each instead of growing word by word.
    let mut top = Frame::new(FrameKind::Top, 0, true);
    top.spare.reserve(line.len());
    let mut lexer = Lexer {
        src: line,
        pos: 0,
        frames: vec![top],
        out: Lexed::default(),
        heredoc_next: None,
        heredocs: Vec::new(),
        backquotes: 0,
        after_for: false,
        base: 0,
        bodies: 0,
    };
    lexer.out.tokens.reserve(16);
    lexer.out.reserve_texts(line.len());
    lexer.lex_to_end();
    lexer.out
}

/// Which bytes end a run of ordinary characters, as a table: a lookup per
/// byte instead of a search through the list.
type Specials = [bool; 256];

const fn specials(list: &[u8]) -> Specials {
    let mut table = [false; 256];
    let mut i = 0;
    while i < list.len() {
        table[list[i] as usize] = true;
        i += 1;
    }
    table
}

const UNQUOTED: Specials = specials(b" \t\r\n'\"\\$`;&|()<>[]");
const DQUOTED: Specials = specials(b"\"\\$`");
const BRACED: Specials = specials(b"\"{}'\\$`");
/// In the body of a here-document whose delimiter is unquoted.
const BODY: Specials = specials(b"\\$`");

#[derive(Debug)]
struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    frames: Vec<Frame>,
    out: Lexed,
    /// Set by `<<` / `<<-`: the next word ending at this frame depth is a
    /// delimiter; (strip tabs?, depth).
    heredoc_next: Option<(bool, usize)>,
    /// Here-documents waiting for the end of the line.
    heredocs: Vec<Heredoc>,
    /// How many backquote frames are open (`` \` `` means something inside them).
    backquotes: usize,
    /// The last token was the word `for` in command position: `((` opens
    /// arithmetic.
    after_for: bool,
    /// The depth of the bottom frame: 0, or in a here-document's body the
    /// depth of the here-document.
    base: usize,
    /// How many here-document bodies this lexer is inside.
    bodies: usize,
}

impl Lexer<'_> {
    fn byte(&self, at: usize) -> Option<u8> {
        self.src.as_bytes().get(at).copied()
    }

    fn frame(&mut self) -> &mut Frame {
        self.frames
            .last_mut()
            .expect("the top frame is never popped")
    }

    fn depth(&self) -> usize {
        self.base + self.frames.len() - 1
    }

    fn word(&mut self) -> &mut Word {
        let pos = self.pos;
        let frame = self.frame();
        if frame.word.is_none() {
            let cmd_pos = std::mem::replace(&mut frame.cmd_pos, false);
            let assign_pos = cmd_pos || std::mem::replace(&mut frame.assign_ok, false);
            frame.word = Some(Word {
                start: pos,
                text: std::mem::take(&mut frame.spare),
                cmd_pos,
                assign_pos,
                dquote: None,
                brace_depth: 0,
                brace_at: 0,
                brace_dquote: false,
                brace_squote: false,
            });
        }
        frame.word.as_mut().expect("just set")
    }

    fn unterminated(&mut self, construct: Construct, start: usize) {
        if self.out.unterminated.is_none() {
            self.out.unterminated = Some(Unterminated { construct, start });
        }
    }

    fn push(&mut self, kind: TokenKind, start: usize, end: usize, depth: usize) {
        self.out.tokens.push(Token {
            kind,
            start,
            end,
            depth,
        });
    }

    /// Ends the word in progress in the innermost frame, if any.
    fn end_word(&mut self) {
        let end = self.pos;
        let depth = self.depth();
        let Some(mut word) = self.frame().word.take() else {
            return;
        };
        let raw = &self.src[word.start..end];
        self.frame().assign_ok = word.assign_pos && is_assignment(raw);
        self.after_for = word.cmd_pos && word.text == "for";
        if let Some((strip_tabs, at)) = self.heredoc_next
            && at == depth
        {
            self.heredoc_next = None;
            self.heredocs.push(Heredoc {
                delimiter: word.text.clone(),
                strip_tabs,
                quoted: raw.contains(['\'', '"', '\\']),
            });
        }
        let text = self.out.push_text(&word.text);
        word.text.clear();
        self.frame().spare = word.text;
        self.push(
            TokenKind::Word {
                text,
                command_position: word.cmd_pos,
            },
            word.start,
            end,
            depth,
        );
    }

    /// Whether the next word ending at this depth is a here-document's
    /// delimiter.
    fn delimiter_next(&self) -> bool {
        self.heredoc_next.is_some_and(|(_, at)| at == self.depth())
    }

    /// Lexes from `pos` to the end of `src`, then closes what is open. The
    /// one loop over the steps, for a line and for a here-document's body.
    fn lex_to_end(&mut self) {
        while self.pos < self.src.len() {
            self.step();
        }
        self.finish();
    }

    /// One step of the state machine, chosen by the innermost frame's word.
    fn step(&mut self) {
        let frame = self
            .frames
            .last()
            .expect("the bottom frame is never popped");
        match &frame.word {
            Some(w) if w.brace_depth > 0 => self.step_brace(),
            Some(w) if w.dquote.is_some() => self.step_dquote(),
            _ if frame.kind == FrameKind::Body => self.step_body(),
            _ => self.step_unquoted(),
        }
    }

    fn step_unquoted(&mut self) {
        let b = self.src.as_bytes()[self.pos];
        match b {
            b' ' | b'\t' => {
                self.end_word();
                self.pos += 1;
            }
            // Bash reads a carriage return as an ordinary character (so
            // `\rspear-capability` is not the name); here `\r\n` ends a
            // line too, and so does a `\r` at the end, but not in a
            // here-document's delimiter, which bash compares with them.
            b'\r' if self.delimiter_next() => {
                self.word().text.push('\r');
                self.pos += 1;
            }
            b'\r' if self.byte(self.pos + 1) == Some(b'\n') => self.newline(2),
            b'\r' if self.pos + 1 == self.src.len() => {
                self.end_word();
                self.pos += 1;
            }
            b'\r' => {
                self.word().text.push('\r');
                self.pos += 1;
            }
            b'\n' => self.newline(1),
            b'#' if self.frame().word.is_none() && !self.frame().kind.nocmd() => self.comment(),
            b'\'' => {
                let open = self.pos;
                let end = self.src[open + 1..].find('\'').map(|n| open + 1 + n);
                let body_end = end.unwrap_or(self.src.len());
                let body = &self.src[open + 1..body_end];
                self.word().text.push_str(body);
                match end {
                    Some(end) => self.pos = end + 1,
                    None => {
                        self.unterminated(Construct::SingleQuote, open);
                        self.pos = self.src.len();
                    }
                }
            }
            b'"' => {
                let open = self.pos;
                self.word().dquote = Some(open);
                self.pos += 1;
            }
            b'\\' => self.backslash(false),
            b'$' => self.dollar(false),
            b'`' => self.backquote(),
            b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>' => self.operator(b),
            b'[' | b']' => self.bracket(b),
            _ => self.plain_run(&UNQUOTED),
        }
    }

    fn step_dquote(&mut self) {
        match self.src.as_bytes()[self.pos] {
            b'"' => {
                self.word().dquote = None;
                self.pos += 1;
            }
            b'\\' => self.backslash(true),
            b'$' => self.dollar(true),
            b'`' => self.backquote(),
            _ => self.plain_run(&DQUOTED),
        }
    }

    /// In an unquoted here-document's body only `\\`, `$` and the
    /// backquote mean anything: quotes, `#` and operators are text.
    fn step_body(&mut self) {
        match self.src.as_bytes()[self.pos] {
            b'\\' => self.backslash(true),
            b'$' => self.dollar(true),
            b'`' => self.backquote(),
            // Text: nothing of it is kept, the body's word is never read.
            _ => self.pos += self.run(&BODY),
        }
    }

    /// The length of the run of ordinary characters at `pos`, at least 1.
    #[inline(always)]
    fn run(&self, specials: &Specials) -> usize {
        let at = self.pos;
        self.src.as_bytes()[at..]
            .iter()
            .position(|&b| specials[usize::from(b)])
            .unwrap_or(self.src.len() - at)
            .max(1)
    }

    /// Appends the run of ordinary characters at `pos` to the word.
    // Inline, as `is_assignment`: left to itself the compiler stopped
    // inlining them when here-document bodies came (3% more instructions).
    #[inline(always)]
    fn plain_run(&mut self, specials: &Specials) {
        let at = self.pos;
        let run = self.run(specials);
        let text = &self.src[at..at + run];
        self.word().text.push_str(text);
        self.pos = at + run;
    }

    fn backslash(&mut self, in_dquote: bool) {
        let at = self.pos;
        let next = self.src[at + 1..].chars().next();
        match next {
            None => {
                self.unterminated(Construct::Backslash, at);
                self.pos = at + 1;
            }
            // Only a newline continues the line: before `\r\n`, the
            // backslash quotes the carriage return, as in bash.
            Some('\n') => self.pos = at + 2,
            Some('`') if self.backquotes > 0 => {
                self.pos = at + 1;
                self.backquote_escaped(at);
            }
            Some(c) => {
                let kept = !in_dquote || matches!(c, '$' | '`' | '"' | '\\');
                let word = self.word();
                if !kept {
                    word.text.push('\\');
                }
                word.text.push(c);
                self.pos = at + 1 + c.len_utf8();
            }
        }
    }

    /// At the end of the line: close every word and frame, noting what was
    /// left open (the innermost first).
    fn finish(&mut self) {
        loop {
            let open = self
                .frames
                .last()
                .and_then(|f| f.word.as_ref())
                .and_then(|w| {
                    if w.brace_depth > 0 {
                        Some((Construct::ParameterExpansion, w.brace_at))
                    } else {
                        w.dquote.map(|at| (Construct::DoubleQuote, at))
                    }
                });
            if let Some((construct, at)) = open {
                self.unterminated(construct, at);
            }
            if self.frames.len() == 1 {
                // A body's word is its text, which nothing reads.
                if self.frame().kind == FrameKind::Body {
                    self.frame().word = None;
                } else {
                    self.end_word();
                }
                return;
            }
            let frame = self.frames.last().expect("more than one frame");
            let (kind, open_at) = (frame.kind, frame.open_at);
            self.unterminated(kind.construct(), open_at);
            self.close(0);
        }
    }
}

#[cfg(test)]
mod tests;
