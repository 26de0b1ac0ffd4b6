//! The turn's terminal: recognizing and parsing `spear-capability` commands.
//!
//! Every command line a turn types into its terminal passes through
//! [`recognize`] before any shell sees it. The answer is exact:
//!
//! - [`Recognized::NotOurs`]: the line goes to the shell untouched;
//! - [`Recognized::Ours`]: SPEAR answers it, with a [`Command`] to run or a
//!   [`Refusal`] to show, and nothing of the line ever reaches a shell.
//!
//! `spear-capability` is recognized where a shell would run it (SPEAR manual,
//! 3.6.2): as the first word of the line, or as the first word after an
//! unquoted `;`, `&`, `|`, newline, `(`, backquote or `$(` (so also after `&&`,
//! `||`, `|&`, `;;`, and inside `"$(...)"`). A `$(` or backquote counts
//! wherever bash substitutes it: within double quotes, and in the body of a
//! here-document whose delimiter is unquoted (`<<EOF`, `<<-EOF`), also
//! inside `${...}` and `$((...))` there. A word there counts when a shell's
//! quote removal turns it into `spear-capability` (`'spear-capability'`,
//! `spear\-capability`, `sp""ear-capability`). Anywhere else it is ordinary
//! text: an argument (`grep spear-capability notes.md`), inside a larger
//! quoted string, in a comment, as a line of a here-document's body, in the
//! body of a quoted delimiter (`<<'EOF'`, `<<"EOF"`, `<<\EOF`), or as part of
//! a longer word (`./spear-capability`, `spear-capability2`,
//! `\rspear-capability`: a carriage return is a character, as in bash).
//!
//! Positions a shell would also run but the manual does not list are *not*
//! recognized, on purpose, so that the rule stays the manual's: after an
//! assignment (`VAR=1 spear-capability`), a reserved word or a brace
//! (`{ spear-capability ...; }`, `! ...`, `then ...`), a prefix command
//! (`time ...`, `sudo ...`), a redirection (`>out spear-capability`) or a `)`
//! (a `case` pattern). Nothing inside `$((...))`, `((...))` or an array's
//! `(...)` is a command, but for what a `$(` there holds.
//!
//! Once recognized, the command must stand alone on one line: only the
//! `spear-capability` words, nothing before or after on any line, comments
//! included, and no line break inside it, neither in a quoted word nor by a
//! backslash-newline (blank lines and white space around it do not matter,
//! nor does a `\r\n` line ending).
//! Its words are split as a shell splits them (quotes removed, escapes
//! applied) but never expanded: `$HOME`, `~`, `*`, `{a,b}` and `$(...)` stay
//! literal. The forms are
//!
//! ```text
//! spear-capability list
//! spear-capability describe <provider>/<tool> [<property>...]
//! spear-capability invoke <provider>/<tool> ['<arguments as one JSON object>']
//! ```
//!
//! ```
//! use spear_capabilities::Command;
//! use spear_capabilities::internals::command::{recognize, Recognized};
//!
//! assert_eq!(recognize("grep spear-capability notes.md"), Recognized::NotOurs);
//! let Recognized::Ours(Ok(Command::Invoke { id, arguments })) =
//!     recognize(r#"spear-capability invoke tracker/search_issues '{"query": "crash"}'"#)
//! else {
//!     panic!("expected an invoke");
//! };
//! assert_eq!(id.to_string(), "tracker/search_issues");
//! assert_eq!(arguments["query"], "crash");
//!
//! let Recognized::Ours(Err(refusal)) = recognize("cd src && spear-capability list") else {
//!     panic!("expected a refusal");
//! };
//! assert!(refusal.message().starts_with("spear-capability must stand alone on its line"));
//! ```

use std::fmt;

use serde_json::{Map, Value};

mod ansi_c;
mod lexer;
mod parse;
mod prefilter;
mod recognizer;
mod simple;
mod token;

pub(crate) use lexer::MAX_NESTED_BODIES;
pub use lexer::lex;
pub use recognizer::{recognize, recognize_unfiltered};
pub use token::{Construct, Lexed, Token, TokenKind, Unterminated};

/// The command's name, as a turn types it.
pub const COMMAND_NAME: &str = "spear-capability";

/// What the turn's terminal must do with a command line.
#[derive(Debug, Clone, PartialEq)]
pub enum Recognized {
    /// Not a `spear-capability` command: hand the line to the shell untouched.
    NotOurs,
    /// A `spear-capability` command: SPEAR answers it, and nothing of the line
    /// runs in a shell, whether it parsed or not.
    Ours(Result<Command, Refusal>),
}

impl Recognized {
    /// Whether SPEAR answers the line (a command or a refusal).
    pub fn is_ours(&self) -> bool {
        matches!(self, Recognized::Ours(_))
    }
}

/// A parsed `spear-capability` command.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Command {
    /// `spear-capability list`: print the index again.
    List,
    /// `spear-capability describe <id> [<property>...]`: show one
    /// capability's arguments, or the schema of one of its properties.
    Describe {
        /// The capability.
        id: CapabilityId,
        /// The path of property names to one property (a property of the
        /// arguments, then of that property, and so on); empty for the
        /// whole capability.
        property: Vec<String>,
    },
    /// `spear-capability invoke <id> '<json object>'`.
    Invoke {
        /// The capability.
        id: CapabilityId,
        /// The arguments; `{}` when the command gave none.
        arguments: Map<String, Value>,
    },
}

/// A capability's id, `<provider>/<tool>`.
///
/// The provider is the text before the first `/`, the tool is the rest; both
/// are non-empty. [`Display`](fmt::Display) prints `provider/tool`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CapabilityId {
    /// The provider's id.
    pub provider: String,
    /// The tool's name within the provider.
    pub tool: String,
}

impl CapabilityId {
    /// Splits `text` at its first `/`; `None` when either side is empty.
    pub fn parse(text: &str) -> Option<CapabilityId> {
        let (provider, tool) = text.split_once('/')?;
        if provider.is_empty() || tool.is_empty() {
            return None;
        }
        Some(CapabilityId {
            provider: provider.to_owned(),
            tool: tool.to_owned(),
        })
    }
}

impl fmt::Display for CapabilityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.tool)
    }
}

/// Why a recognized command is refused.
///
/// One short message saying what was wrong and the right form; it is meant
/// for the turn. [`Display`](fmt::Display) prints the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    message: String,
}

impl Refusal {
    pub(crate) fn new(message: impl Into<String>) -> Refusal {
        Refusal {
            message: message.into(),
        }
    }

    /// The message for the turn.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Refusal {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_id_splits_at_the_first_slash() {
        let id = CapabilityId::parse("tracker/a/b").expect("valid id");
        assert_eq!(id.provider, "tracker");
        assert_eq!(id.tool, "a/b");
        assert_eq!(id.to_string(), "tracker/a/b");
    }

    #[test]
    fn capability_id_needs_both_sides() {
        for bad in ["", "/", "tracker", "tracker/", "/search"] {
            assert_eq!(CapabilityId::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn refusal_displays_its_message() {
        let r = Refusal::new("unknown verb `x`");
        assert_eq!(r.to_string(), "unknown verb `x`");
        assert_eq!(r.message(), "unknown verb `x`");
    }
}
