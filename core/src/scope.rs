//! Where a provider applies: the scope grammar of the rule header.
//!
//! ```text
//! global
//! corpus <project>[, <project>...]
//! family <name>[, <name>...]
//! path <dir>
//! ```
//!
//! An entry without a scope applies nowhere. Keywords are lower-case and
//! exact; names are non-empty, without white space or commas, each listed
//! once. A relative `path` is relative to the capabilities file's folder.

use std::fmt;
use std::path::{Component, Path, PathBuf};

/// A parsed scope.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Scope {
    /// Every registered project.
    Global,
    /// These projects.
    Corpus(Vec<String>),
    /// Projects in these families.
    Family(Vec<String>),
    /// Turns whose tree is this folder or below it (absolute, normalised).
    Path(PathBuf),
}

/// Why a scope string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{message}; allowed: `global`, `corpus <project>[, ...]`, `family <name>[, ...]` or `path <dir>`"
)]
pub struct ScopeError {
    message: String,
}

impl ScopeError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl Scope {
    /// Parses `text`; a relative `path` is joined to `base_dir`.
    ///
    /// # Errors
    /// A [`ScopeError`] saying what is wrong and what the grammar allows.
    pub fn parse(text: &str, base_dir: &Path) -> Result<Scope, ScopeError> {
        let text = text.trim();
        let (keyword, rest) = match text.find(char::is_whitespace) {
            Some(i) => (&text[..i], text[i..].trim()),
            None => (text, ""),
        };
        match keyword {
            "" => Err(ScopeError::new("the scope is empty")),
            "global" if rest.is_empty() => Ok(Scope::Global),
            "global" => Err(ScopeError::new(format!(
                "`global` takes nothing after it, found `{rest}`"
            ))),
            "corpus" => names("corpus", "project", rest).map(Scope::Corpus),
            "family" => names("family", "family name", rest).map(Scope::Family),
            "path" if rest.is_empty() => Err(ScopeError::new("`path` needs a folder")),
            "path" => Ok(Scope::Path(normalise(&base_dir.join(rest)))),
            other => Err(ScopeError::new(format!("unknown scope keyword `{other}`"))),
        }
    }

    /// Whether this scope covers a turn in a registered `project`, member of
    /// `families`, working in `tree`.
    pub fn covers(&self, project: &str, families: &[String], tree: &Path) -> bool {
        match self {
            Scope::Global => true,
            Scope::Corpus(projects) => projects.iter().any(|p| p == project),
            Scope::Family(names) => names.iter().any(|n| families.contains(n)),
            Scope::Path(dir) => normalise(tree).starts_with(dir),
        }
    }
}

fn names(keyword: &str, what: &str, rest: &str) -> Result<Vec<String>, ScopeError> {
    if rest.is_empty() {
        return Err(ScopeError::new(format!(
            "`{keyword}` needs at least one {what}"
        )));
    }
    let mut out: Vec<String> = Vec::new();
    for raw in rest.split(',') {
        let name = raw.trim();
        if name.is_empty() {
            return Err(ScopeError::new(format!(
                "`{keyword}` has an empty {what} in `{rest}`"
            )));
        }
        if name.contains(char::is_whitespace) {
            return Err(ScopeError::new(format!(
                "`{keyword}` {what} `{name}` contains white space (separate names with commas)"
            )));
        }
        if out.iter().any(|n| n == name) {
            return Err(ScopeError::new(format!(
                "`{keyword}` lists {what} `{name}` twice"
            )));
        }
        out.push(name.to_owned());
    }
    Ok(out)
}

/// The canonical form of `path` when it exists, else its lexical normal form
/// (no `.`, `..` applied), so that a scope and a tree compare as the same
/// folder whichever way they were written.
pub(crate) fn normalise(path: &Path) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Global => f.write_str("global"),
            Scope::Corpus(p) => write!(f, "corpus {}", p.join(", ")),
            Scope::Family(n) => write!(f, "family {}", n.join(", ")),
            Scope::Path(d) => write!(f, "path {}", d.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Scope, String> {
        Scope::parse(s, Path::new("/etc/spear")).map_err(|e| e.to_string())
    }

    #[test]
    fn the_four_forms_parse() {
        assert_eq!(parse("global"), Ok(Scope::Global));
        assert_eq!(parse("  global "), Ok(Scope::Global));
        assert_eq!(
            parse("corpus firmware-a"),
            Ok(Scope::Corpus(vec!["firmware-a".into()]))
        );
        assert_eq!(
            parse("corpus a, b,c"),
            Ok(Scope::Corpus(vec!["a".into(), "b".into(), "c".into()]))
        );
        assert_eq!(
            parse("family\tembedded, web"),
            Ok(Scope::Family(vec!["embedded".into(), "web".into()]))
        );
        assert_eq!(
            parse("path /srv/x/../y/./z"),
            Ok(Scope::Path(PathBuf::from("/srv/y/z")))
        );
    }

    #[test]
    fn a_relative_path_is_relative_to_the_capabilities_folder() {
        assert_eq!(
            parse("path trees/fw"),
            Ok(Scope::Path(PathBuf::from("/etc/spear/trees/fw")))
        );
    }

    #[test]
    fn bad_scopes_say_what_is_wrong_and_what_is_allowed() {
        let cases = [
            ("", "the scope is empty"),
            ("global x", "`global` takes nothing after it, found `x`"),
            ("Global", "unknown scope keyword `Global`"),
            ("project a", "unknown scope keyword `project`"),
            ("corpus", "`corpus` needs at least one project"),
            ("corpus a,,b", "`corpus` has an empty project in `a,,b`"),
            ("corpus a b", "`corpus` project `a b` contains white space"),
            ("family x, x", "`family` lists family name `x` twice"),
            ("path", "`path` needs a folder"),
        ];
        for (input, want) in cases {
            let got = parse(input).expect_err(input);
            assert!(got.starts_with(want), "{input:?}: {got}");
            assert!(got.ends_with("or `path <dir>`"), "{input:?}: {got}");
        }
    }

    #[test]
    fn coverage_follows_the_form() {
        let fam = vec!["embedded".to_owned()];
        let tree = Path::new("/srv/fw/src");
        assert!(Scope::Global.covers("any", &[], tree));
        assert!(parse("corpus a, fw").expect("ok").covers("fw", &[], tree));
        assert!(!parse("corpus a").expect("ok").covers("fw", &fam, tree));
        assert!(
            parse("family web, embedded")
                .expect("ok")
                .covers("fw", &fam, tree)
        );
        assert!(!parse("family web").expect("ok").covers("fw", &fam, tree));
        assert!(parse("path /srv/fw").expect("ok").covers("fw", &[], tree));
        assert!(
            parse("path /srv/fw")
                .expect("ok")
                .covers("fw", &[], Path::new("/srv/fw"))
        );
        // Component-wise: /srv/fw does not cover /srv/fwx.
        assert!(
            !parse("path /srv/fw")
                .expect("ok")
                .covers("fw", &[], Path::new("/srv/fwx"))
        );
        assert!(!parse("path /srv/fw").expect("ok").covers(
            "fw",
            &[],
            Path::new("/srv/fw/../other")
        ));
    }

    #[test]
    fn path_scopes_compare_canonical_paths() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("real");
        std::fs::create_dir(&real).expect("mkdir");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let scope = Scope::parse("path real", dir.path()).expect("ok");
        assert!(scope.covers("p", &[], &link.join(".")));
        assert!(scope.covers("p", &[], &link));
    }
}
