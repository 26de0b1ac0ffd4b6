//! A small shell lexer: just enough of bash's grammar to know, for every
//! word, its text after quote removal and whether it stands in command
//! position.
//!
//! It knows single, double and `$'...'` quotes, backslash escapes and line
//! continuations, comments, here-documents (their bodies are data), the
//! control and redirection operators, subshells, `$(...)`, `$((...))`,
//! backquotes and `${...}`. It expands nothing. `shell-words` and `shlex`
//! cannot tell a quoted `";"` from a bare one, which is the whole question.
//!
//! It never fails: a line that leaves a quote or a substitution open is
//! lexed to its end and reported in [`Lexed::unterminated`]. It runs in time
//! linear in the line's length.

use super::ansi_c;
use super::token::{Construct, Lexed, Token, TokenKind, Unterminated};

/// Lexes one command line.
pub fn lex(line: &str) -> Lexed {
    let mut lexer = Lexer {
        src: line,
        pos: 0,
        frames: vec![Frame::new(FrameKind::Top, 0, true)],
        out: Lexed::default(),
        heredoc_next: None,
        heredocs: Vec::new(),
    };
    while lexer.pos < line.len() {
        lexer.step();
    }
    lexer.finish();
    lexer.out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrameKind {
    Top,
    /// `( ... )`; `nocmd` inside arithmetic, where nothing is a command.
    Subshell {
        nocmd: bool,
    },
    /// `name=( ... )`: an array's elements, part of the assignment's word.
    Array,
    /// `$( ... )`
    Dollar,
    /// `$(( ... ))`
    Arith,
    /// `` `...` ``; `escaped` when opened by `` \` `` inside another one.
    Backquote {
        escaped: bool,
    },
}

impl FrameKind {
    /// Frames that live inside a word, whose source the word keeps verbatim.
    fn in_word(self) -> bool {
        !matches!(self, FrameKind::Top | FrameKind::Subshell { .. })
    }

    /// Frames where no word is ever a command.
    fn nocmd(self) -> bool {
        matches!(
            self,
            FrameKind::Array | FrameKind::Arith | FrameKind::Subshell { nocmd: true }
        )
    }

    fn construct(self) -> Construct {
        match self {
            FrameKind::Top | FrameKind::Subshell { .. } | FrameKind::Array => {
                Construct::Parenthesis
            }
            FrameKind::Dollar => Construct::CommandSubstitution,
            FrameKind::Arith => Construct::Arithmetic,
            FrameKind::Backquote { .. } => Construct::Backquote,
        }
    }
}

#[derive(Debug)]
struct Frame {
    kind: FrameKind,
    /// Offset of the frame's opener (`$`, `(` or the backquote).
    open_at: usize,
    /// Whether the next word to start stands in command position.
    cmd_pos: bool,
    word: Option<Word>,
}

impl Frame {
    fn new(kind: FrameKind, open_at: usize, cmd_pos: bool) -> Frame {
        Frame {
            kind,
            open_at,
            cmd_pos: cmd_pos && !kind.nocmd(),
            word: None,
        }
    }
}

/// A word being read.
#[derive(Debug)]
struct Word {
    start: usize,
    text: String,
    cmd_pos: bool,
    /// Offset of an open double quote.
    dquote: Option<usize>,
    /// Depth of `${...}` and the offset of the outermost `${`.
    brace_depth: u32,
    brace_at: usize,
    /// A double quote opened inside `${...}`.
    brace_dquote: bool,
}

#[derive(Debug)]
struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    frames: Vec<Frame>,
    out: Lexed,
    /// Set by `<<` / `<<-` (strip tabs?): the next word is a delimiter.
    heredoc_next: Option<bool>,
    /// Delimiters waiting for the end of the line: (delimiter, strip tabs).
    heredocs: Vec<(String, bool)>,
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
        self.frames.len() - 1
    }

    fn word(&mut self) -> &mut Word {
        let pos = self.pos;
        let frame = self.frame();
        if frame.word.is_none() {
            let cmd_pos = std::mem::replace(&mut frame.cmd_pos, false);
            frame.word = Some(Word {
                start: pos,
                text: String::new(),
                cmd_pos,
                dquote: None,
                brace_depth: 0,
                brace_at: 0,
                brace_dquote: false,
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
        let Some(word) = self.frame().word.take() else {
            return;
        };
        if let Some(strip_tabs) = self.heredoc_next.take() {
            self.heredocs.push((word.text.clone(), strip_tabs));
        }
        self.push(
            TokenKind::Word {
                text: word.text,
                command_position: word.cmd_pos,
            },
            word.start,
            end,
            depth,
        );
    }

    /// One step of the state machine, chosen by the innermost frame's word.
    fn step(&mut self) {
        match self.frames.last().and_then(|f| f.word.as_ref()) {
            Some(w) if w.brace_depth > 0 => self.step_brace(),
            Some(w) if w.dquote.is_some() => self.step_dquote(),
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
            b'\r' if self.byte(self.pos + 1) == Some(b'\n') => self.newline(2),
            b'\r' => {
                self.end_word();
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
            _ => self.plain_run(b" \t\r\n'\"\\$`;&|()<>"),
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
            _ => self.plain_run(b"\"\\$`"),
        }
    }

    /// Inside `${...}` everything is kept as written; only its end, its
    /// quotes and the substitutions inside it matter.
    fn step_brace(&mut self) {
        let at = self.pos;
        let b = self.src.as_bytes()[at];
        let (in_dquote, outer_dquote) = {
            let w = self.word();
            (w.brace_dquote, w.dquote.is_some())
        };
        let len = match b {
            b'"' => {
                let w = self.word();
                w.brace_dquote = !w.brace_dquote;
                1
            }
            b'}' if !in_dquote => {
                self.word().brace_depth -= 1;
                1
            }
            b'{' if !in_dquote && at > 0 && self.byte(at - 1) == Some(b'$') => {
                self.word().brace_depth += 1;
                1
            }
            b'\'' if !in_dquote && !outer_dquote => match self.src[at + 1..].find('\'') {
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
                    .position(|b| b"\"{}'\\$`".contains(b))
                    .unwrap_or(self.src.len() - at);
                run.max(1)
            }
        };
        let end = (at + len).min(self.src.len());
        let text = &self.src[at..end];
        self.word().text.push_str(text);
        self.pos = end;
    }

    /// Appends the run of ordinary characters at `pos` to the word.
    fn plain_run(&mut self, specials: &[u8]) {
        let at = self.pos;
        let run = self.src.as_bytes()[at..]
            .iter()
            .position(|b| specials.contains(b))
            .unwrap_or(self.src.len() - at)
            .max(1);
        let text = &self.src[at..at + run];
        self.word().text.push_str(text);
        self.pos = at + run;
    }

    fn newline(&mut self, len: usize) {
        self.end_word();
        let at = self.pos;
        self.push(TokenKind::Newline, at, at + len, self.depth());
        self.pos += len;
        self.heredoc_next = None;
        let frame = self.frame();
        frame.cmd_pos = !frame.kind.nocmd();
        self.heredoc_bodies();
    }

    fn comment(&mut self) {
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

    /// Reads the bodies of the here-documents this line announced.
    fn heredoc_bodies(&mut self) {
        for (delimiter, strip_tabs) in std::mem::take(&mut self.heredocs) {
            let body_start = self.pos;
            let mut body_end = self.src.len();
            let mut next = self.src.len();
            let mut line_start = self.pos;
            while line_start < self.src.len() {
                let eol = self.src[line_start..]
                    .find('\n')
                    .map_or(self.src.len(), |n| line_start + n);
                let mut line = &self.src[line_start..eol];
                line = line.strip_suffix('\r').unwrap_or(line);
                if strip_tabs {
                    line = line.trim_start_matches('\t');
                }
                if line == delimiter {
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

    fn backslash(&mut self, in_dquote: bool) {
        let at = self.pos;
        let next = self.src[at + 1..].chars().next();
        match next {
            None => {
                self.unterminated(Construct::Backslash, at);
                self.pos = at + 1;
            }
            Some('\n') => self.pos = at + 2,
            Some('\r') if self.byte(at + 2) == Some(b'\n') => self.pos = at + 3,
            Some('`')
                if self
                    .frames
                    .iter()
                    .any(|f| matches!(f.kind, FrameKind::Backquote { .. })) =>
            {
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

    fn dollar(&mut self, in_dquote: bool) {
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
    fn open_in_word(&mut self, kind: FrameKind, at: usize, len: usize) {
        self.word();
        self.pos = at + len;
        self.frames.push(Frame::new(kind, at, true));
        self.push(TokenKind::SubstitutionOpen, at, at + len, self.depth());
    }

    /// Closes the innermost frame, whose closer spans `pos..pos + len`.
    fn close(&mut self, len: usize) {
        self.end_word();
        let end = (self.pos + len).min(self.src.len());
        let depth = self.depth();
        let frame = self.frames.pop().expect("only called above the top frame");
        self.pos = end;
        self.heredoc_next = None;
        // At the end of the line (`len == 0`) there is no closer to report.
        if frame.kind.in_word() {
            if len > 0 {
                self.push(TokenKind::SubstitutionClose, end - len, end, depth);
            }
            let raw = &self.src[frame.open_at..end];
            self.word().text.push_str(raw);
        } else {
            if len > 0 {
                self.push(TokenKind::Operator, end - len, end, self.depth());
            }
            self.frame().cmd_pos = false;
        }
    }

    fn backquote(&mut self) {
        if self.frame().kind == (FrameKind::Backquote { escaped: false }) {
            self.close(1);
        } else {
            let at = self.pos;
            self.open_in_word(FrameKind::Backquote { escaped: false }, at, 1);
        }
    }

    /// `` \` `` inside backquotes: a backquote one level further in.
    fn backquote_escaped(&mut self, at: usize) {
        if self.frame().kind == (FrameKind::Backquote { escaped: true }) {
            self.pos = at;
            self.close(2);
        } else {
            self.open_in_word(FrameKind::Backquote { escaped: true }, at, 2);
        }
    }

    fn operator(&mut self, first: u8) {
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
            self.end_word();
            let nocmd = kind.nocmd();
            self.push(TokenKind::Operator, at, at + 1, self.depth());
            self.pos = at + 1;
            self.frames
                .push(Frame::new(FrameKind::Subshell { nocmd }, at, true));
            self.heredoc_next = None;
            return;
        }
        if first == b')' {
            match kind {
                FrameKind::Arith => return self.close(if starts("))") { 2 } else { 1 }),
                FrameKind::Dollar | FrameKind::Array | FrameKind::Subshell { .. } => {
                    return self.close(1);
                }
                FrameKind::Top | FrameKind::Backquote { .. } => {}
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
        self.heredoc_next = match op {
            "<<" => Some(false),
            "<<-" => Some(true),
            _ => None,
        };
        let separates = matches!(
            op,
            ";;&" | ";;" | ";&" | ";" | "&&" | "&" | "||" | "|&" | "|"
        );
        let frame = self.frame();
        frame.cmd_pos = separates && !frame.kind.nocmd();
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
                self.end_word();
                return;
            }
            let frame = self.frames.last().expect("more than one frame");
            let (kind, open_at) = (frame.kind, frame.open_at);
            self.unterminated(kind.construct(), open_at);
            self.close(0);
        }
    }
}
