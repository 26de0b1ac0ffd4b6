//! One accepted registry entry as the operator reads it: its settings in
//! words ([`Settings`]), which `check` prints on two lines under the entry
//! ([`check_lines`]) and `get` one a row; and as `--json` gives it
//! ([`json`]).

use serde_json::{Value, json};
use spear_capabilities::registry::{EntryCheck, ProviderEntry};

/// An entry's selection settings in words, as `check` and `get` print
/// them.
#[derive(Debug)]
pub(crate) struct Settings {
    pub(crate) kind: String,
    /// Its scope, or that it applies nowhere.
    pub(crate) scope: String,
    pub(crate) tasks: String,
    /// Its `read` tools, or that every tool is a WRITE.
    pub(crate) read: String,
    pub(crate) write: &'static str,
    /// Its `timeout` in seconds, with the unit: `30s`.
    pub(crate) timeout: String,
}

impl Settings {
    pub(crate) fn of(e: &ProviderEntry) -> Self {
        let tasks: Vec<&str> = e.tasks.iter().map(|t| t.as_str()).collect();
        let read: Vec<&str> = e.read.iter().map(String::as_str).collect();
        Settings {
            kind: e.kind.clone(),
            scope: e
                .scope
                .as_ref()
                .map_or_else(|| "none (applies nowhere)".to_owned(), ToString::to_string),
            tasks: tasks.join(", "),
            read: if read.is_empty() {
                "(none: every tool is a WRITE)".to_owned()
            } else {
                read.join(", ")
            },
            write: e.write.as_str(),
            timeout: format!("{}s", e.timeout.as_secs_f64()),
        }
    }
}

/// An entry as `check` prints it, with what `findings` says of it:
/// `  ok       <id>`, its settings and warnings under it, or `  refused
/// <id>` and why its program cannot run.
pub(crate) fn check_lines(e: &ProviderEntry, f: &EntryCheck) -> String {
    if let Some(why) = &f.cannot_run {
        return format!("  refused  {}\n           {why}", e.id);
    }
    let s = Settings::of(e);
    let mut lines = format!(
        "  ok       {}{}\n           kind {}; scope {}; tasks {}; write {}; timeout {}\n           read: {}",
        e.id,
        if e.enabled { "" } else { " (disabled)" },
        s.kind,
        s.scope,
        s.tasks,
        s.write,
        s.timeout,
        s.read,
    );
    for w in &f.warnings {
        lines.push_str(&format!("\n           warning: {w}"));
    }
    lines
}

/// An entry's common keys and what `findings` says of it, as `check
/// --json` and `get --json` give them.
pub(crate) fn json(e: &ProviderEntry, f: &EntryCheck) -> Value {
    json!({
        "id": e.id,
        "kind": e.kind,
        "scope": e.scope.as_ref().map(ToString::to_string),
        "tasks": e.tasks.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
        "read": e.read,
        "write": e.write.as_str(),
        "enabled": e.enabled,
        "timeout_secs": e.timeout.as_secs_f64(),
        "cannot_run": f.cannot_run,
        "warnings": f.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
    })
}
