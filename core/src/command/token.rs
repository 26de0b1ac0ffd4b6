//! What the lexer reports: tokens with their place in the line.

use std::fmt;
use std::ops::Range;

/// The lexer's view of one command line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lexed {
    /// The tokens in the order the line closes them: a word that holds a
    /// `$(...)` comes after the tokens inside it.
    pub tokens: Vec<Token>,
    /// The innermost construct the line leaves open, if any.
    pub unterminated: Option<Unterminated>,
    /// Here-documents lie inside one another's bodies deeper than the
    /// lexer reads (16, `MAX_NESTED_BODIES`):
    /// the deepest bodies were not read for substitutions, so whether the
    /// line runs a command in them is not known.
    pub nested_too_deep: bool,
    /// Every word's text, one after the other (one buffer, not one
    /// allocation per word).
    texts: String,
}

impl Lexed {
    /// A word's text after quote removal; `None` for other tokens.
    pub fn text(&self, token: &Token) -> Option<&str> {
        match &token.kind {
            TokenKind::Word { text, .. } => self.texts.get(text.clone()),
            _ => None,
        }
    }

    pub(super) fn reserve_texts(&mut self, bytes: usize) {
        self.texts.reserve(bytes);
    }

    pub(super) fn push_text(&mut self, text: &str) -> Range<usize> {
        let start = self.texts.len();
        self.texts.push_str(text);
        start..self.texts.len()
    }
}

/// One token: what it is, where it lies and how deep it is nested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// What the token is.
    pub kind: TokenKind,
    /// Byte offset of its first character in the line.
    pub start: usize,
    /// Byte offset just past its last character.
    pub end: usize,
    /// How many substitutions or subshells enclose it (0 at the top level).
    pub depth: usize,
}

/// The kinds of token.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenKind {
    /// A word. Its text is what a shell's quote removal makes of it, with
    /// nothing expanded: a `$(...)` inside a top-level word stays as written
    /// (inside a substitution, only its opener is kept).
    Word {
        /// Where [`Lexed::text`] finds the word's text.
        text: Range<usize>,
        /// Whether it stands where a shell runs a command (see the module
        /// docs for the list of positions).
        command_position: bool,
    },
    /// A control or redirection operator such as `;`, `&&`, `|&`, `(`, `)`,
    /// `>>` or `<<-`; its text is the line's `start..end`.
    Operator,
    /// The opening of something a word encloses: `$(`, `$((`, a backquote,
    /// an array's `(` or an arithmetic command's `((`. It carries the depth
    /// of what it encloses.
    SubstitutionOpen,
    /// The closing `)`, `))` or backquote of a substitution, at the depth of
    /// what it encloses.
    SubstitutionClose,
    /// An unquoted newline (`\n`, or `\r\n`).
    Newline,
    /// A comment, from its `#` to the end of its line.
    Comment,
    /// A here-document's body, without its delimiter line. A quoted
    /// delimiter's body is data; an unquoted one's is followed by the
    /// tokens of the substitutions bash runs in it, one level deeper.
    HeredocBody,
}

/// A construct the line opens and never closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unterminated {
    /// Which construct.
    pub construct: Construct,
    /// Byte offset of its opening.
    pub start: usize,
}

/// The constructs that can be left open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Construct {
    /// `'...`
    SingleQuote,
    /// `"...`
    DoubleQuote,
    /// `$'...`
    AnsiCQuote,
    /// `$(...`
    CommandSubstitution,
    /// `$((...`
    Arithmetic,
    /// A backquote.
    Backquote,
    /// `${...`
    ParameterExpansion,
    /// `(...` (a subshell or an array)
    Parenthesis,
    /// `$[...` (old arithmetic) or an array subscript `name[...`
    Bracket,
    /// A backslash at the very end of the line.
    Backslash,
}

impl Construct {
    /// How the construct opens, as typed.
    pub fn opener(self) -> &'static str {
        match self {
            Construct::SingleQuote => "'",
            Construct::DoubleQuote => "\"",
            Construct::AnsiCQuote => "$'",
            Construct::CommandSubstitution => "$(",
            Construct::Arithmetic => "$((",
            Construct::Backquote => "`",
            Construct::ParameterExpansion => "${",
            Construct::Parenthesis => "(",
            Construct::Bracket => "[",
            Construct::Backslash => "\\",
        }
    }
}

impl fmt::Display for Construct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Construct::SingleQuote => "single quote",
            Construct::DoubleQuote => "double quote",
            Construct::AnsiCQuote => "$'...' quote",
            Construct::CommandSubstitution => "command substitution",
            Construct::Arithmetic => "arithmetic expansion",
            Construct::Backquote => "backquote",
            Construct::ParameterExpansion => "parameter expansion",
            Construct::Parenthesis => "parenthesis",
            Construct::Bracket => "bracket",
            Construct::Backslash => "backslash",
        })
    }
}
