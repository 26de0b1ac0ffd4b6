//! `${NAME}` in an `env` value: the host's variable, read when the server
//! starts, so that a secret need not sit in the capabilities file.
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
//! A value read from the host is handed to the server's environment and
//! kept nowhere else: no message, record, trace or log holds it.

use std::ffi::OsString;

use spear_capabilities::{EntryProblem, EntryProblemKind};

/// What is wrong with the syntax of a value, for a message after the
/// variable's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadSyntax(String);

impl std::fmt::Display for BadSyntax {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One piece of a value: text as written, or a host variable's name.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Var(&'a str),
}

/// The pieces of `value`, or what is wrong with its syntax.
fn pieces(value: &str) -> Result<Vec<Piece<'_>>, BadSyntax> {
    const HOW: &str = "write ${NAME} for the host's variable NAME, $$ for a literal $";
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        if at > 0 {
            out.push(Piece::Text(&rest[..at]));
        }
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push(Piece::Text("$"));
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('{') {
            let Some(end) = tail.find('}') else {
                return Err(BadSyntax(format!("\"${{\" is not closed by \"}}\"; {HOW}")));
            };
            let name = &tail[..end];
            if name.is_empty() {
                return Err(BadSyntax(format!("\"${{}}\" names no variable; {HOW}")));
            }
            if !is_name(name) {
                return Err(BadSyntax(format!(
                    "{:?} is not a variable name (a letter or '_', then letters, digits and '_'; no default or other shell form); {HOW}",
                    format!("${{{name}}}")
                )));
            }
            out.push(Piece::Var(name));
            rest = &tail[end + 1..];
        } else {
            let shown: String = after.chars().take(12).collect();
            let found = if shown.is_empty() {
                "a '$' ends it".to_owned()
            } else {
                format!("a '$' is followed by {shown:?}")
            };
            return Err(BadSyntax(format!("{found}; {HOW}")));
        }
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    Ok(out)
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The syntax of `value` checked: the names of the host variables it
/// uses, in order, or what is wrong.
pub(crate) fn names(value: &str) -> Result<Vec<&str>, BadSyntax> {
    Ok(pieces(value)?
        .into_iter()
        .filter_map(|p| match p {
            Piece::Var(name) => Some(name),
            Piece::Text(_) => None,
        })
        .collect())
}

/// A variable a value names that the host does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unexpanded {
    /// The value's syntax is wrong.
    Syntax(BadSyntax),
    /// The host has no variable of this name.
    Unset(String),
}

/// `value` with each `${NAME}` replaced by `host(NAME)` and each `$$` by
/// `$`.
pub(crate) fn expand(
    value: &str,
    host: impl Fn(&str) -> Option<OsString>,
) -> Result<OsString, Unexpanded> {
    let mut out = OsString::with_capacity(value.len());
    for piece in pieces(value).map_err(Unexpanded::Syntax)? {
        match piece {
            Piece::Text(text) => out.push(text),
            Piece::Var(name) => {
                out.push(host(name).ok_or_else(|| Unexpanded::Unset(name.to_owned()))?)
            }
        }
    }
    Ok(out)
}

/// What is wrong with the value of `env` variable `name`, if anything:
/// its syntax ([`EntryProblemKind::BadValue`]), or a host variable it
/// names that is not set in this process's environment
/// ([`EntryProblemKind::UnsetVariable`]).
pub(crate) fn problem(name: &str, value: &str) -> Option<EntryProblem> {
    let names = match names(value) {
        Ok(names) => names,
        Err(e) => {
            return Some(EntryProblem::new(
                "env",
                format!("the value of {name:?}: {e}"),
            ));
        }
    };
    let unset = names.into_iter().find(|n| std::env::var_os(n).is_none())?;
    Some(
        EntryProblem::new(
            "env",
            format!(
                "the value of {name:?} names ${{{unset}}}, which is not set in this environment (set it where the server starts, or write $$ for a literal $)"
            ),
        )
        .with_kind(EntryProblemKind::UnsetVariable),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str) -> Option<OsString> {
        match name {
            "TOKEN" => Some("s3cr3t".into()),
            "EMPTY" => Some(OsString::new()),
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
        ] {
            assert_eq!(expand(value, host), Ok(OsString::from(want)), "{value}");
        }
        assert_eq!(names("a ${B} $$ ${_c1}"), Ok(vec!["B", "_c1"]));
    }

    #[test]
    fn an_unset_variable_is_named() {
        assert_eq!(
            expand("x ${NOPE} ${TOKEN}", host),
            Err(Unexpanded::Unset("NOPE".to_owned()))
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
        ] {
            let e = names(value).expect_err(value).to_string();
            assert!(e.starts_with(starts), "{value}: {e}");
            assert!(
                e.ends_with("write ${NAME} for the host's variable NAME, $$ for a literal $"),
                "{e}"
            );
            assert!(matches!(expand(value, host), Err(Unexpanded::Syntax(_))));
        }
    }
}
