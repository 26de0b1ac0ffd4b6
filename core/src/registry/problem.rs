//! What is wrong with a registry entry: each problem with its key, its
//! kind ([`EntryProblemKind`], for a program to match on), its message
//! (for a person) and its place in the file; and the entry refused with
//! all of them.

use super::position::Position;
use crate::names::named;

named! {
    /// What kind of problem an [`EntryProblem`] is: what a program matches
    /// on, where a person reads the message.
    ///
    /// More kinds may come: match with a `_` arm.
    ///
    /// ```
    /// use spear_capabilities::kind::{EntryProblem, EntryProblemKind};
    /// fn hint(problem: &EntryProblem) -> &'static str {
    ///     match problem.kind {
    ///         EntryProblemKind::UnknownKey => "a misspelt key?",
    ///         EntryProblemKind::DuplicateKey => "a key given twice",
    ///         _ => "see the message",
    ///     }
    /// }
    /// # let _ = hint;
    /// ```
    #[non_exhaustive]
    pub enum EntryProblemKind {
        /// A key neither the core nor the entry's kind knows (the message
        /// names a close one, when there is one).
        UnknownKey = "unknown_key",
        /// A key the entry must have is missing (`id`; a kind's own, such
        /// as mcp-stdio's `command`).
        MissingKey = "missing_key",
        /// A value of the wrong JSON type.
        WrongType = "wrong_type",
        /// A value of the right type that is not allowed: an id that is not
        /// a lower-case name, a number out of range, an unknown task class
        /// or write policy, a scope that does not parse, ... A kind's
        /// problem is this unless it says otherwise.
        BadValue = "bad_value",
        /// An id that an earlier entry already has.
        DuplicateId = "duplicate_id",
        /// A key given twice in the entry, at any depth (its position is
        /// the second copy's).
        DuplicateKey = "duplicate_key",
        /// The server to start is missing from the kind's command (an
        /// empty list, an empty program name).
        EmptyCommand = "empty_command",
        /// The entry's `kind` names no kind this program has.
        UnknownKind = "unknown_kind",
        /// The entry is not a JSON object.
        NotAnObject = "not_an_object",
        /// A value names a variable of the host's environment that is not
        /// set (`${NAME}`, [`Fields::host_template`](crate::kind::Fields::host_template):
        /// mcp-stdio's `env` values); the message names it.
        UnsetVariable = "unset_variable",
    }
}

/// One thing wrong with a registry entry: the key, where it is, what kind
/// of problem it is, and what is wrong with it.
///
/// Messages say what was found and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EntryProblem {
    /// The key at fault, or empty for the entry as a whole.
    pub key: String,
    /// What kind of problem it is.
    pub kind: EntryProblemKind,
    /// What is wrong, and what is allowed.
    pub message: String,
    /// Where the problem is in the file: the key (the second copy of a key
    /// given twice), or the entry's own place for the entry as a whole or
    /// a key it lacks. `None` until the registry places it (a kind's
    /// `validate` makes its problems without).
    pub position: Option<Position>,
}

impl EntryProblem {
    /// A problem with `key`, of kind [`EntryProblemKind::BadValue`], not
    /// placed yet.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            kind: EntryProblemKind::BadValue,
            message: message.into(),
            position: None,
        }
    }

    /// The same problem, of kind `kind`.
    #[must_use]
    pub fn with_kind(mut self, kind: EntryProblemKind) -> Self {
        self.kind = kind;
        self
    }

    pub(super) fn at(mut self, position: Position) -> Self {
        self.position = Some(position);
        self
    }
}

impl std::error::Error for EntryProblem {}

impl std::fmt::Display for EntryProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.key.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "key {:?}: {}", self.key, self.message)
        }
    }
}

/// One refused registry entry and everything wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RefusedEntry {
    /// Its position in `providers`, from 0.
    pub index: usize,
    /// Its id, when it has one string id (not one given twice).
    pub id: Option<String>,
    /// What is wrong, in file order.
    pub problems: Vec<EntryProblem>,
    /// Where the entry begins in the file (its `{`).
    pub position: Option<Position>,
}

impl std::error::Error for RefusedEntry {}

impl RefusedEntry {
    /// How messages name the entry: `providers[2] ("tracker")`.
    pub fn label(&self) -> String {
        match &self.id {
            Some(id) => format!("providers[{}] ({id:?})", self.index),
            None => format!("providers[{}]", self.index),
        }
    }
}

impl std::fmt::Display for RefusedEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} refused:", self.label())?;
        for p in &self.problems {
            write!(f, " {p};")?;
        }
        Ok(())
    }
}

/// The name of `known` that `key` is a close misspelling of (a letter
/// or two off, or another case), for a "did you mean".
pub(super) fn closest<'k>(key: &str, known: impl IntoIterator<Item = &'k str>) -> Option<&'k str> {
    let typed = key.to_lowercase();
    let length = typed.chars().count();
    known
        .into_iter()
        .map(|name| (strsim::damerau_levenshtein(&typed, name), name))
        .filter(|(distance, _)| *distance <= 2 && 2 * distance <= length)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn a_close_misspelling_finds_its_key_and_a_far_one_none() {
        let keys = ["id", "scope", "timeout", "enabled", "env", "command"];
        for (typed, want) in [
            ("timout", Some("timeout")),
            ("tiemout", Some("timeout")),
            ("Timeout", Some("timeout")),
            ("enable", Some("enabled")),
            ("scopes", Some("scope")),
            ("commnd", Some("command")),
            ("x", None),
            ("readonly", None),
            ("tout", None),
        ] {
            assert_eq!(closest(typed, keys), want, "{typed}");
        }
    }
}
