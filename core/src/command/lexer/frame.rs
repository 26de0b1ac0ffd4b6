//! The lexer's frames (the constructs open around the position, the
//! innermost last) and the word being read in each.

use crate::command::token::Construct;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FrameKind {
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
    /// `$[ ... ]`, bash's old arithmetic.
    Bracket,
    /// `name[ ... ]` where an assignment may stand: an array subscript,
    /// part of the word (bash reads it as one piece, blanks and all).
    Subscript,
    /// The body of a here-document whose delimiter is unquoted: text, but
    /// for the substitutions bash runs in it.
    Body,
}

impl FrameKind {
    /// Frames that live inside a word, whose source the word keeps verbatim.
    pub(super) fn in_word(self) -> bool {
        !matches!(self, FrameKind::Top | FrameKind::Subshell { .. })
    }

    /// Frames where no word is ever a command.
    pub(super) fn nocmd(self) -> bool {
        matches!(
            self,
            FrameKind::Array
                | FrameKind::Arith
                | FrameKind::Bracket
                | FrameKind::Subscript
                | FrameKind::Body
                | FrameKind::Subshell { nocmd: true }
        )
    }

    pub(super) fn construct(self) -> Construct {
        match self {
            FrameKind::Top | FrameKind::Subshell { .. } | FrameKind::Array | FrameKind::Body => {
                Construct::Parenthesis
            }
            FrameKind::Dollar => Construct::CommandSubstitution,
            FrameKind::Arith => Construct::Arithmetic,
            FrameKind::Backquote { .. } => Construct::Backquote,
            FrameKind::Bracket | FrameKind::Subscript => Construct::Bracket,
        }
    }
}

#[derive(Debug)]
pub(super) struct Frame {
    pub(super) kind: FrameKind,
    /// Offset of the frame's opener (`$`, `(` or the backquote).
    pub(super) open_at: usize,
    /// Whether the next word to start stands in command position.
    pub(super) cmd_pos: bool,
    /// Whether the next word to start may be an assignment: in command
    /// position, or after assignments that began the command.
    pub(super) assign_ok: bool,
    /// `[`s open inside a `Bracket` or `Subscript` frame.
    pub(super) brackets: u32,
    pub(super) word: Option<Word>,
    /// The last word's text buffer, kept for the next word so that a line
    /// costs a few allocations rather than one per word.
    pub(super) spare: String,
}

impl Frame {
    pub(super) fn new(kind: FrameKind, open_at: usize, cmd_pos: bool) -> Frame {
        Frame {
            kind,
            open_at,
            cmd_pos: cmd_pos && !kind.nocmd(),
            assign_ok: false,
            brackets: 0,
            word: None,
            spare: String::new(),
        }
    }
}

/// A word being read.
#[derive(Debug)]
pub(super) struct Word {
    pub(super) start: usize,
    pub(super) text: String,
    pub(super) cmd_pos: bool,
    /// Whether the word may be an assignment (bash reads a subscript in it).
    pub(super) assign_pos: bool,
    /// Offset of an open double quote.
    pub(super) dquote: Option<usize>,
    /// Depth of `${...}` and the offset of the outermost `${`.
    pub(super) brace_depth: u32,
    pub(super) brace_at: usize,
    /// A double quote opened inside `${...}`.
    pub(super) brace_dquote: bool,
    /// A single quote opened inside `${...}` where bash still substitutes
    /// within it (the word is double-quoted, or a here-document's body).
    pub(super) brace_squote: bool,
}
