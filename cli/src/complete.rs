//! Shell completion, asked of the binary itself at each TAB (clap's dynamic
//! completion): the shell's script, which `completions SHELL` prints, runs
//! `spear-capabilities` with [`VAR`] set and the words typed so far, and
//! prints what it answers ([`answer_if_asked`]). So subcommands and flags
//! come from the same clap definitions as the parser, and a provider's id
//! from the registry the line names.
//!
//! Why dynamic rather than clap's generated scripts: a provider id is known
//! only from the registry, which a script written once cannot read; one
//! mechanism for five shells beats a hand-written hook in each.

use std::ffi::OsString;
use std::path::PathBuf;

use clap_complete::CompletionCandidate;
use clap_complete::env::CompleteEnv;
use spear_capabilities::Audit;

use crate::flags::{DEFAULT_PROJECTS, RegistryArgs};

/// The variable that makes a run a completion request, naming the shell.
/// Our own name, so that a `COMPLETE` meant for another program never
/// turns a run into one.
pub(crate) const VAR: &str = "SPEAR_CAPABILITIES_COMPLETE";

/// When the shell asks for completions ([`VAR`] set), answers and exits;
/// otherwise returns at once. Before anything is written to standard
/// output.
pub(crate) fn answer_if_asked() {
    CompleteEnv::with_factory(crate::command)
        .var(VAR)
        .complete();
}

/// The ids of the registry's entries, a refused one's too (`get`, `set`,
/// `enable`, `disable` and `remove` take them), each with its scope, or
/// that it is refused, as its description.
pub(crate) fn provider_ids() -> Vec<CompletionCandidate> {
    let Some(registry) = registry() else {
        return Vec::new();
    };
    let entries = registry.entries().iter().map(|e| {
        let scope = e
            .scope
            .as_ref()
            .map_or_else(|| "no scope".to_owned(), |s| s.to_string());
        CompletionCandidate::new(&e.id).help(Some(scope.into()))
    });
    let refused = registry.refused().iter().filter_map(|r| {
        let id = r.id.as_ref()?;
        Some(CompletionCandidate::new(id).help(Some("refused".into())))
    });
    entries.chain(refused).collect()
}

/// `<id>/` for each registered entry: the start of a capability id, for
/// `invoke` (its tools are known only once its server starts).
pub(crate) fn capability_prefixes() -> Vec<CompletionCandidate> {
    let Some(registry) = registry() else {
        return Vec::new();
    };
    registry
        .entries()
        .iter()
        .map(|e| CompletionCandidate::new(format!("{}/", e.id)))
        .collect()
}

/// The registry the line being completed names (`--capabilities FILE`,
/// `--projects FILE`, else as a run finds it), read as a run reads it;
/// `None` when it cannot be read.
fn registry() -> Option<spear_capabilities::Registry> {
    let words: Vec<OsString> = std::env::args_os().collect();
    let named = RegistryArgs {
        capabilities: value_of(&words, "--capabilities"),
        projects: value_of(&words, "--projects").unwrap_or_else(|| DEFAULT_PROJECTS.into()),
    };
    named.load(&Audit::null()).ok()
}

/// The value of the last `--flag VALUE` or `--flag=VALUE` among `words`.
fn value_of(words: &[OsString], flag: &str) -> Option<PathBuf> {
    let joined = format!("{flag}=");
    let mut value = None;
    for (i, word) in words.iter().enumerate() {
        let word = word.to_string_lossy();
        if word == flag {
            value = words.get(i + 1).map(PathBuf::from);
        } else if let Some(v) = word.strip_prefix(&joined) {
            value = Some(PathBuf::from(v));
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flags_value_is_the_last_one_given_either_way() {
        let words: Vec<OsString> = [
            "x",
            "--",
            "x",
            "get",
            "--capabilities",
            "a.json",
            "--capabilities=b.json",
            "n",
        ]
        .map(OsString::from)
        .to_vec();
        assert_eq!(value_of(&words, "--capabilities"), Some("b.json".into()));
        assert_eq!(value_of(&words, "--projects"), None);
        let last: Vec<OsString> = ["get", "--capabilities"].map(OsString::from).to_vec();
        assert_eq!(value_of(&last, "--capabilities"), None);
    }
}
