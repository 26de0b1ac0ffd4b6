//! `get`: one registry entry as the registry has it, for the operator,
//! and with `--start` what its server says it offers ([`crate::probe`]).
//!
//! The values of `env` are never printed (they are the kind of thing a
//! token goes in): only the variables' names. Neither is anything of an
//! entry's kind-specific keys but their names, for a kind other than
//! `mcp-stdio`, whose keys the CLI cannot tell secrets from.

use std::path::Path;

use clap_complete::ArgValueCandidates;
use serde_json::json;
use spear_capabilities::internals::framing::one_line;
use spear_capabilities::{
    Audit, Error,
    registry::{EntryCheck, ProviderEntry, RefusedEntry},
};

use crate::complete;
use crate::entry::{self, Settings};
use crate::error::{Failure, said_unless};
use crate::examples::{self, Example};
use crate::flags::{DEFAULT_PROJECTS, RegistryArgs, WaitArgs};
use crate::out::{self, Closed, out};
use crate::probe::{self, Started};
use crate::report::{entry_json, refused_entry_lines};
use crate::view::MAX_FACT_CHARS;

/// The examples of `get`.
pub(crate) const EXAMPLES: &[Example] = &[
    Example::new(
        "spear-capabilities get notes",
        "The entry as the registry has it: its command, its variables' names (never their values), its settings",
    ),
    Example::new(
        "spear-capabilities get notes --capabilities /etc/spear/capabilities.json --start",
        "Also start its server: each tool with its class, its schema and the server's read-only hint, and the `set` line that would adopt the hints",
    ),
    Example::new(
        "spear-capabilities get notes --start --json | jq '.started.tools[] | {name, class, read_only_hint}'",
        "Each tool's class and the server's read-only hint, for a script",
    ),
    Example::new(
        "spear-capabilities get notes --start --json | jq -r '.adopt_hints // empty' | sh",
        "Adopt the server's read-only hints (the `set ... --read` line `get --start` prints); nothing adopts them by itself",
    ),
];

/// Show one registry entry; with --start, what its server offers.
///
/// The entry's command, the names of its `env` variables (never their
/// values) and its selection settings; --start starts the server
/// whatever the entry's scope or `enabled`, and shows its name, version
/// and protocol and each tool with its class, full schema and the
/// server's read-only hint (`readOnlyHint`), then the `set ID --read ...`
/// line that would adopt the hints. A hint is never adopted by itself: a
/// tool is READ only when the entry's `read` names it.
///
/// Exit status: 0, 1 when no entry has the id, the registry refuses it
/// (or, as `check`, its program cannot run) or --start failed, 2 when
/// the file cannot be read or parsed, or a file named with
/// --capabilities does not exist.
#[derive(Debug, clap::Args)]
#[command(after_help = examples::help(EXAMPLES))]
#[command(mut_arg("wait", |a| a.requires("start")))]
pub(crate) struct Args {
    /// The provider's id.
    #[arg(add = ArgValueCandidates::new(complete::provider_ids))]
    id: String,
    #[command(flatten)]
    file: RegistryArgs,
    /// Also start its server: its name, version and protocol, and each
    /// tool with its class, full schema and read-only hint.
    #[arg(long)]
    start: bool,
    #[command(flatten)]
    wait: WaitArgs,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// What stands for a value of `env`.
const MASK: &str = "<masked>";

/// The entry's command and the names of its variables, when its kind is
/// `mcp-stdio`.
fn server(entry: &ProviderEntry) -> Option<spear_mcp_stdio::ServerConfig> {
    (entry.kind == spear_mcp_stdio::NAME)
        .then(|| spear_mcp_stdio::ServerConfig::from_settings(&entry.settings).ok())
        .flatten()
}

/// A word of a command as a POSIX shell would need it typed: bare when it
/// is plain, else in single quotes; control characters shown as `?`.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c));
    let word: String = word
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if plain {
        word
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

impl Args {
    pub(crate) async fn run(self) -> Result<(), Failure> {
        let registry = self.file.load(&Audit::null())?;
        let path = self.file.path();
        let Some(entry) = registry.entry(&self.id) else {
            if let Some(refused) = registry
                .refused()
                .iter()
                .find(|r| r.id.as_deref() == Some(self.id.as_str()))
            {
                self.say_refused(&path, refused)?;
                return Err(Failure::Said);
            }
            let known: Vec<&str> = registry.entries().iter().map(|e| e.id.as_str()).collect();
            let known = match (registry.notice(), known.is_empty()) {
                (Some(notice), _) => notice,
                (None, true) => "it registers none".to_owned(),
                (None, false) => format!("its providers: {}", known.join(", ")),
            };
            return Err(Failure::Refused(format!(
                "no provider `{}` in {}; {known}",
                self.id,
                path.display()
            )));
        };
        let findings = registry.check_entry(entry);
        let started = if self.start {
            Some(probe::start(&registry, entry, self.wait.wait).await)
        } else {
            None
        };
        if self.json {
            let mut v = entry::json(entry, &findings);
            v["file"] = json!(path.display().to_string());
            match server(entry) {
                Some(config) => {
                    v["command"] = json!(config.command);
                    v["env"] = json!(config.env.keys().collect::<Vec<_>>());
                }
                None => v["settings"] = json!(entry.settings.keys().collect::<Vec<_>>()),
            }
            if let Some(started) = &started {
                v["started"] = probe::json(started);
                v["adopt_hints"] = json!(self.adopt_hints(entry, started));
            }
            out::json(&v)?;
        } else {
            print_text(&path, entry, &findings, started.as_ref())?;
            if let Some(started) = &started {
                self.print_adopt_hints(entry, started)?;
            }
        }
        said_unless(findings.cannot_run.is_none() && started.as_ref().is_none_or(Result::is_ok))
    }

    /// The `set` command that adopts the server's read-only hints: the
    /// entry's `read` and every admitted tool the server marks read-only,
    /// in the file these flags name. `None` when no hint adds a tool.
    /// Nothing is adopted here: a tool is READ only when `read` names it.
    fn adopt_hints(
        &self,
        entry: &ProviderEntry,
        started: &Result<Started, Error>,
    ) -> Option<String> {
        let read = started.as_ref().ok()?.adopted_read(entry)?;
        let mut words = vec![
            "spear-capabilities".to_owned(),
            "set".to_owned(),
            shell_word(&entry.id),
        ];
        if let Some(file) = &self.file.capabilities {
            words.extend([
                "--capabilities".to_owned(),
                shell_word(&file.to_string_lossy()),
            ]);
        } else if self.file.projects != Path::new(DEFAULT_PROJECTS) {
            words.extend([
                "--projects".to_owned(),
                shell_word(&self.file.projects.to_string_lossy()),
            ]);
        }
        words.extend(["--read".to_owned(), shell_word(&read.join(","))]);
        Some(words.join(" "))
    }

    /// Says how many tools the server marks read-only that `read` does not
    /// name, and the command that would adopt the hints.
    fn print_adopt_hints(
        &self,
        entry: &ProviderEntry,
        started: &Result<Started, Error>,
    ) -> Result<(), Closed> {
        let (Ok(s), Some(command)) = (started, self.adopt_hints(entry, started)) else {
            return Ok(());
        };
        let n = s.hinted_read_only.len();
        let tools = if n == 1 { "tool" } else { "tools" };
        out!(
            "read-only hints: the server marks {n} {tools} read-only that `read` does not name (a tool is READ only when `read` names it); to adopt the hints:"
        )?;
        out!("  {command}")
    }

    fn say_refused(&self, path: &Path, refused: &RefusedEntry) -> Result<(), Closed> {
        if self.json {
            return out::json(&json!({
                "file": path.display().to_string(),
                "id": self.id,
                "refused": entry_json(refused),
            }));
        }
        out!("{}", path.display())?;
        refused_entry_lines(refused, Some(path), false)
            .iter()
            .try_for_each(|line| out!("{line}"))
    }
}

fn print_text(
    path: &Path,
    entry: &ProviderEntry,
    findings: &EntryCheck,
    started: Option<&Result<Started, Error>>,
) -> Result<(), Closed> {
    let row = |key: &str, value: &str| out!("  {key:<8} {value}");
    let settings = Settings::of(entry);
    out!("{}  (in {})", entry.id, path.display())?;
    row("kind", &settings.kind)?;
    match server(entry) {
        Some(config) => {
            let words: Vec<String> = config.command.iter().map(|w| shell_word(w)).collect();
            row("command", &words.join(" "))?;
            if !config.env.is_empty() {
                let vars: Vec<String> = config
                    .env
                    .keys()
                    .map(|k| format!("{}={MASK}", one_line(k, MAX_FACT_CHARS)))
                    .collect();
                row("env", &vars.join(" "))?;
            }
        }
        None => {
            let keys: Vec<&str> = entry.settings.keys().map(String::as_str).collect();
            row(
                "settings",
                &format!("{} (values not shown)", keys.join(", ")),
            )?;
        }
    }
    row("scope", &settings.scope)?;
    row("tasks", &settings.tasks)?;
    row("read", &settings.read)?;
    row("write", settings.write)?;
    row("enabled", if entry.enabled { "yes" } else { "no" })?;
    row("timeout", &settings.timeout)?;
    if let Some(why) = &findings.cannot_run {
        out!("refused: {why}")?;
    }
    for w in &findings.warnings {
        out!("warning: {w}")?;
    }
    started.map_or(Ok(()), probe::print)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_words_are_quoted_as_a_shell_needs_them() {
        assert_eq!(shell_word("/usr/bin/srv"), "/usr/bin/srv");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("x\x1b[0m"), "'x?[0m'");
    }
}
