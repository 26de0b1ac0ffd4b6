//! `${NAME}` in a kind's string value: the host's variable, read when the
//! provider starts, so that a secret need not sit in the capabilities file.
//!
//! Any kind's string values may name the host's variables (mcp-stdio's
//! `env` values; an HTTP kind's headers), so the syntax is the core's and
//! a kind only calls it: [`Fields::host_strings`] or
//! [`Fields::host_template`] when it validates an entry,
//! [`expand_host_strings`] or [`expand_host_vars`] when it starts one.
//!
//! The syntax, and nothing more: `${NAME}` is the value of the host's
//! variable `NAME` (a letter or `_`, then letters, digits and `_`), `$$`
//! is one `$`, and every other character is itself. Anything else after a
//! `$` is an error, never literal text: a bare `$NAME` (which a shell
//! would expand, and a reader would expect to be), an unclosed `${`, an
//! empty `${}`, a name with other characters (a shell's `${NAME:-default}`
//! among them). A variable that is not set refuses the entry; one set to
//! the empty string is set.
//!
//! A value read from the host is handed to the provider and kept nowhere
//! else: no message, record, trace or log holds it.

use std::collections::BTreeMap;
use std::ffi::OsString;

use serde_json::Value;

use super::{EntryProblem, EntryProblemKind, Fields, type_name};

/// Why a value that may name the host's variables cannot be expanded.
/// Neither says a variable's value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TemplateError {
    /// Its syntax is wrong: what is wrong, and how to write it.
    Syntax(String),
    /// It names this host variable, which is not set.
    Unset(String),
}

impl TemplateError {
    /// The message about the value `what` names (e.g. `the value of
    /// "TOKEN"`): `{what}: ` and what is wrong with its syntax, or `{what}
    /// names ${NAME}, which is not set in this environment`.
    pub fn message(&self, what: &str) -> String {
        match self {
            Self::Syntax(why) => format!("{what}: {why}"),
            Self::Unset(name) => {
                format!("{what} names ${{{name}}}, which is not set in this environment")
            }
        }
    }
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message("the value"))
    }
}

impl std::error::Error for TemplateError {}

/// `value` with each `${NAME}` replaced by `host(NAME)` (a kind passes
/// `|name| std::env::var_os(name)`) and each `$$` by `$`.
///
/// # Errors
/// Its syntax, checked whole before any variable is read; else the first
/// variable, in order, that `host` does not have.
pub fn expand_host_vars(
    value: &str,
    host: impl Fn(&str) -> Option<OsString>,
) -> Result<OsString, TemplateError> {
    const HOW: &str = "write ${NAME} for the host's variable NAME, $$ for a literal $";
    let syntax = |why: String| Err(TemplateError::Syntax(format!("{why}; {HOW}")));
    // The text and the names, in order; nothing is read before all parse.
    let mut pieces: Vec<(&str, bool)> = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        pieces.push((&rest[..at], false));
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            pieces.push(("$", false));
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('{') {
            let Some(end) = tail.find('}') else {
                return syntax(r#""${" is not closed by "}""#.to_owned());
            };
            let name = &tail[..end];
            if name.is_empty() {
                return syntax(r#""${}" names no variable"#.to_owned());
            }
            let mut chars = name.chars();
            let first = chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
            if !first || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return syntax(format!(
                    "{:?} is not a variable name (a letter or '_', then letters, digits and '_'; no default or other shell form)",
                    format!("${{{name}}}")
                ));
            }
            pieces.push((name, true));
            rest = &tail[end + 1..];
        } else if after.is_empty() {
            return syntax("a '$' ends it".to_owned());
        } else {
            let shown: String = after.chars().take(12).collect();
            return syntax(format!("a '$' is followed by {shown:?}"));
        }
    }
    pieces.push((rest, false));
    let mut out = OsString::with_capacity(value.len());
    for (piece, is_name) in pieces {
        match is_name {
            false => out.push(piece),
            true => out.push(host(piece).ok_or_else(|| TemplateError::Unset(piece.to_owned()))?),
        }
    }
    Ok(out)
}

/// Each value of `values` (those of `key`, as [`Fields::host_strings`]
/// accepted them) expanded by [`expand_host_vars`], under its name.
///
/// # Errors
/// The first value, in order, that cannot be, as `the value of "NAME" in
/// `key`` and what is wrong (its variable named, never a value).
pub fn expand_host_strings(
    key: &str,
    values: &BTreeMap<String, String>,
    host: impl Fn(&str) -> Option<OsString>,
) -> Result<BTreeMap<String, OsString>, String> {
    let expand = |(name, value): (&String, &String)| {
        let what = format!("the value of {name:?} in `{key}`");
        let value = expand_host_vars(value, &host).map_err(|e| e.message(&what))?;
        Ok((name.clone(), value))
    };
    values.iter().map(expand).collect()
}

impl Fields<'_> {
    /// `key` as an object of string values that may name the host's
    /// variables (mcp-stdio's `env`; an HTTP kind's headers), if present:
    /// the values accepted, as written (expanded only when the provider
    /// starts). A value of another type ([`EntryProblemKind::WrongType`]),
    /// one with a NUL character, or one [`Fields::host_template`] refuses
    /// is a problem that names its member.
    pub fn host_strings(&mut self, key: &str) -> Option<BTreeMap<String, String>> {
        let members = self.get(key, "an object of string values", Value::as_object)?;
        let mut accepted = BTreeMap::new();
        for (name, value) in members {
            let what = format!("the value of {name:?}");
            match value.as_str() {
                None => {
                    let why = format!("{what} must be a string, found {}", type_name(value));
                    self.push(EntryProblem::new(key, why).with_kind(EntryProblemKind::WrongType));
                }
                Some(v) if v.contains('\0') => {
                    self.problem(key, format!("{what} contains a NUL character"));
                }
                Some(v) => {
                    if self.host_template(key, &what, v) {
                        accepted.insert(name.clone(), v.to_owned());
                    }
                }
            }
        }
        Some(accepted)
    }

    /// Checks `value`, a string under `key` that may name the host's
    /// variables (`what` says which, e.g. `the value of "TOKEN"`) against
    /// this process's environment, and says whether it is accepted; if not,
    /// a problem: its syntax ([`EntryProblemKind::BadValue`]) or a variable
    /// it names that is not set ([`EntryProblemKind::UnsetVariable`]).
    pub fn host_template(&mut self, key: &str, what: &str, value: &str) -> bool {
        let Err(e) = expand_host_vars(value, |name| std::env::var_os(name)) else {
            return true;
        };
        let (kind, hint) = match e {
            TemplateError::Unset(_) => (
                EntryProblemKind::UnsetVariable,
                " (set it where the server starts, or write $$ for a literal $)",
            ),
            TemplateError::Syntax(_) => (EntryProblemKind::BadValue, ""),
        };
        self.push(EntryProblem::new(key, e.message(what) + hint).with_kind(kind));
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str) -> Option<OsString> {
        match name {
            "TOKEN" => Some("s3cr3t".into()),
            "EMPTY" => Some(OsString::new()),
            "_c1" => Some("c".into()),
            _ => None,
        }
    }

    #[test]
    fn names_are_expanded_and_a_doubled_dollar_is_one() {
        for (value, want) in [
            ("plain", "plain"),
            ("${TOKEN}", "s3cr3t"),
            ("Bearer ${TOKEN}!", "Bearer s3cr3t!"),
            ("${TOKEN}${TOKEN}", "s3cr3ts3cr3t"),
            ("cost $$5", "cost $5"),
            ("$${TOKEN}", "${TOKEN}"),
            ("$$$$", "$$"),
            ("[${EMPTY}]", "[]"),
            ("", ""),
            ("é ${TOKEN} ü", "é s3cr3t ü"),
            ("a ${_c1} $$", "a c $"),
        ] {
            assert_eq!(
                expand_host_vars(value, host),
                Ok(OsString::from(want)),
                "{value}"
            );
        }
    }

    #[test]
    fn an_unset_variable_is_named() {
        let e = expand_host_vars("x ${NOPE} ${TOKEN} ${LATER}", host).expect_err("unset");
        assert_eq!(e, TemplateError::Unset("NOPE".to_owned()));
        assert_eq!(
            e.to_string(),
            "the value names ${NOPE}, which is not set in this environment"
        );
    }

    #[test]
    fn a_map_of_host_strings_is_kept_as_written_and_each_bad_value_named() {
        // PATH is set wherever tests run.
        let serde_json::Value::Object(map) = serde_json::json!({"env": {
            "A": "${PATH}:$$", "B": 1, "C": "a\u{0}b", "D": "$x", "E": "${SPEAR_TEST_NEVER_SET_46}"
        }}) else {
            panic!("an object")
        };
        let mut fields = Fields::new(&map);
        let kept = fields.host_strings("env").expect("present");
        assert_eq!(
            kept.into_iter().collect::<Vec<_>>(),
            [("A".to_owned(), "${PATH}:$$".to_owned())]
        );
        assert_eq!(fields.host_strings("absent"), None);
        let problems = fields.into_problems();
        let kinds: Vec<_> = problems.iter().map(|p| p.kind).collect();
        use EntryProblemKind::*;
        assert_eq!(kinds, [WrongType, BadValue, BadValue, UnsetVariable]);
        assert_eq!(
            problems[1].message,
            r#"the value of "C" contains a NUL character"#
        );
        let values = BTreeMap::from([("T".to_owned(), "Bearer ${TOKEN}".to_owned())]);
        let expanded = expand_host_strings("headers", &values, host).expect("expanded");
        assert_eq!(expanded["T"], "Bearer s3cr3t");
        let values = BTreeMap::from([("T".to_owned(), "${NOPE}".to_owned())]);
        assert_eq!(
            expand_host_strings("headers", &values, host),
            Err(r#"the value of "T" in `headers` names ${NOPE}, which is not set in this environment"#.to_owned())
        );
    }

    #[test]
    fn every_other_dollar_is_an_error_that_says_the_syntax() {
        for (value, starts) in [
            ("$HOME", r#"a '$' is followed by "HOME""#),
            ("cost $5", r#"a '$' is followed by "5""#),
            ("a $", "a '$' ends it"),
            ("${TOKEN", r#""${" is not closed by "}""#),
            ("${}", r#""${}" names no variable"#),
            ("${A-B}", r#""${A-B}" is not a variable name"#),
            ("${X:-d}", r#""${X:-d}" is not a variable name"#),
            ("${1X}", r#""${1X}" is not a variable name"#),
            // The syntax is checked before any variable is read.
            ("${NOPE} $", "a '$' ends it"),
        ] {
            let Err(TemplateError::Syntax(e)) = expand_host_vars(value, host) else {
                panic!("{value}: a syntax error")
            };
            assert!(e.starts_with(starts), "{value}: {e}");
            assert!(
                e.ends_with("write ${NAME} for the host's variable NAME, $$ for a literal $"),
                "{e}"
            );
        }
    }
}
