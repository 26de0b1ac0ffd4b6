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

use super::token::{Construct, Lexed, Token, TokenKind, Unterminated};

mod operators;
mod substitution;

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
    };
    lexer.out.tokens.reserve(16);
    lexer.out.reserve_texts(line.len());
    while lexer.pos < line.len() {
        lexer.step();
    }
    lexer.finish();
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

const UNQUOTED: Specials = specials(b" \t\r\n'\"\\$`;&|()<>");
const DQUOTED: Specials = specials(b"\"\\$`");
const BRACED: Specials = specials(b"\"{}'\\$`");

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
    /// The last word's text buffer, kept for the next word so that a line
    /// costs a few allocations rather than one per word.
    spare: String,
}

impl Frame {
    fn new(kind: FrameKind, open_at: usize, cmd_pos: bool) -> Frame {
        Frame {
            kind,
            open_at,
            cmd_pos: cmd_pos && !kind.nocmd(),
            word: None,
            spare: String::new(),
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
    /// How many backquote frames are open (`` \` `` means something inside them).
    backquotes: usize,
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
                text: std::mem::take(&mut frame.spare),
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
        let Some(mut word) = self.frame().word.take() else {
            return;
        };
        if let Some(strip_tabs) = self.heredoc_next.take() {
            self.heredocs.push((word.text.clone(), strip_tabs));
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

    /// Appends the run of ordinary characters at `pos` to the word.
    fn plain_run(&mut self, specials: &Specials) {
        let at = self.pos;
        let run = self.src.as_bytes()[at..]
            .iter()
            .position(|&b| specials[usize::from(b)])
            .unwrap_or(self.src.len() - at)
            .max(1);
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
            Some('\n') => self.pos = at + 2,
            Some('\r') if self.byte(at + 2) == Some(b'\n') => self.pos = at + 3,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every word's text and whether it stands in command position, in the
    /// order words start.
    fn words(line: &str) -> Vec<(String, bool)> {
        let lexed = lex(line);
        let mut tokens = lexed.tokens.clone();
        tokens.sort_by_key(|t| t.start);
        tokens
            .iter()
            .filter_map(|t| match t.kind {
                TokenKind::Word {
                    command_position, ..
                } => Some((lexed.text(t)?.to_owned(), command_position)),
                _ => None,
            })
            .collect()
    }

    fn commands(line: &str) -> Vec<String> {
        words(line)
            .into_iter()
            .filter(|(_, c)| *c)
            .map(|(w, _)| w)
            .collect()
    }

    #[test]
    fn command_positions_follow_the_separators() {
        assert_eq!(
            commands("a b; c | d && e || f & g |& h ;; i\nj (k) $(l m) `n o` x=$(p)"),
            [
                "a", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "n", "p"
            ]
        );
    }

    #[test]
    fn nothing_else_is_a_command_position() {
        assert_eq!(
            commands("VAR=1 a >out b 2>&1 c <<<d e; ) f; { g; } ! h"),
            ["VAR=1", "{", "}"]
        );
        assert_eq!(commands("echo $((a + (b)))"), ["echo"]);
        assert_eq!(commands("arr=(a b c) d"), ["arr=(a b c)"]);
    }

    #[test]
    fn quotes_are_removed_and_nothing_is_expanded() {
        let got: Vec<String> = words(r#"a'b c'd "e $f \" \x" $'g\th' \i ${j:-k l} ~ * {m,n}"#)
            .into_iter()
            .map(|(w, _)| w)
            .collect();
        assert_eq!(
            got,
            [
                "ab cd",
                r#"e $f " \x"#,
                "g\th",
                "i",
                "${j:-k l}",
                "~",
                "*",
                "{m,n}"
            ]
        );
    }

    #[test]
    fn a_substitution_stays_verbatim_in_its_word() {
        let got: Vec<String> = words(r#"x"$(a "b c")"y"#)
            .into_iter()
            .map(|(w, _)| w)
            .collect();
        assert_eq!(got, ["x$(a \"b c\")y", "a", "b c"]);
    }

    #[test]
    fn spans_and_depths_locate_each_token() {
        let line = "ab $(cd) # ef\r\ngh";
        let lexed = lex(line);
        let find = |text: &str| {
            lexed
                .tokens
                .iter()
                .find(|t| lexed.text(t) == Some(text))
                .map(|t| (&line[t.start..t.end], t.depth))
        };
        assert_eq!(find("ab"), Some(("ab", 0)));
        assert_eq!(find("cd"), Some(("cd", 1)));
        assert_eq!(find("$(cd)"), Some(("$(cd)", 0)));
        let comment = lexed
            .tokens
            .iter()
            .find(|t| t.kind == TokenKind::Comment)
            .expect("a comment");
        assert_eq!(&line[comment.start..comment.end], "# ef");
        assert!(
            lexed
                .tokens
                .iter()
                .any(|t| t.kind == TokenKind::Newline && &line[t.start..t.end] == "\r\n")
        );
    }

    #[test]
    fn heredoc_bodies_are_one_data_token() {
        let line = "cat <<A <<-'B'\nx\nA\n\ty\n\tB\nz";
        let lexed = lex(line);
        let bodies: Vec<&str> = lexed
            .tokens
            .iter()
            .filter(|t| t.kind == TokenKind::HeredocBody)
            .map(|t| &line[t.start..t.end])
            .collect();
        assert_eq!(bodies, ["x\n", "\ty\n"]);
        assert_eq!(commands(line), ["cat", "z"]);
    }

    #[test]
    fn the_innermost_open_construct_is_reported() {
        let open = |line: &str| lex(line).unterminated.map(|u| (u.construct, u.start));
        assert_eq!(open("a 'b"), Some((Construct::SingleQuote, 2)));
        assert_eq!(open("a \"$(b 'c"), Some((Construct::SingleQuote, 7)));
        assert_eq!(open("a \"$(b"), Some((Construct::CommandSubstitution, 3)));
        assert_eq!(open("a \"b"), Some((Construct::DoubleQuote, 2)));
        assert_eq!(open("(a"), Some((Construct::Parenthesis, 0)));
        assert_eq!(open("a `b"), Some((Construct::Backquote, 2)));
        assert_eq!(open("a $((1"), Some((Construct::Arithmetic, 2)));
        assert_eq!(open("a ${b"), Some((Construct::ParameterExpansion, 2)));
        assert_eq!(open("a $'b"), Some((Construct::AnsiCQuote, 2)));
        assert_eq!(open("a \\"), Some((Construct::Backslash, 2)));
        assert_eq!(open("a 'b' \"c\" $(d) `e` ${f} $((1))"), None);
    }

    #[test]
    fn top_level_tokens_come_in_the_lines_order() {
        let line = "a \"$(b `c`)\" (d; e) <<X f\nbody\nX\n# g\nh=(i j) $((1))";
        let starts: Vec<usize> = lex(line)
            .tokens
            .iter()
            .filter(|t| t.depth == 0)
            .map(|t| t.start)
            .collect();
        assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
    }

    #[test]
    fn heredocs_left_open_end_at_the_end_of_the_line() {
        // Found by the fuzzer: the later bodies are empty, at the line's end.
        let line = "a <<A <<B\nx\n# c";
        let lexed = lex(line);
        let bodies: Vec<(usize, usize)> = lexed
            .tokens
            .iter()
            .filter(|t| t.kind == TokenKind::HeredocBody)
            .map(|t| (t.start, t.end))
            .collect();
        assert_eq!(bodies, [(10, 15), (15, 15)]);
        let starts: Vec<usize> = lexed.tokens.iter().map(|t| t.start).collect();
        assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{starts:?}");
    }

    #[test]
    fn deep_nesting_keeps_the_texts_linear() {
        let n = 20_000;
        let line = format!("echo {}x{}", "\"$(a `b ".repeat(n), "`)\"".repeat(n));
        let lexed = lex(&line);
        assert_eq!(lexed.unterminated, None);
        let total: usize = lexed
            .tokens
            .iter()
            .filter_map(|t| lexed.text(t))
            .map(str::len)
            .sum();
        assert!(
            total <= 2 * line.len(),
            "{total} bytes of text for {} bytes",
            line.len()
        );
        let outer = lexed.tokens.last().expect("the outer word");
        // The top-level word keeps its substitution whole, quotes removed.
        let whole = &line[6..line.len() - 1];
        assert!(
            lexed.text(outer) == Some(whole),
            "the outer word lost its text"
        );
    }

    #[test]
    fn operators_take_their_longest_form() {
        let line = "a;;&b&>>c|&d<<<e<>f>|g 2>&1";
        let ops: Vec<&str> = lex(line)
            .tokens
            .iter()
            .filter(|t| t.kind == TokenKind::Operator)
            .map(|t| &line[t.start..t.end])
            .collect();
        assert_eq!(ops, [";;&", "&>>", "|&", "<<<", "<>", ">|", ">&"]);
    }
}
