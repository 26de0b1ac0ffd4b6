//! `spear-capabilities check`: validate a registry.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::json;
use spear_capabilities::registry::{self, CAPABILITIES_FILE_VAR};
use spear_capabilities::{Audit, ProviderEntry, Registry};

use crate::out::{Closed, out};

pub(crate) fn run(file: Option<PathBuf>, projects: &Path, as_json: bool) -> ExitCode {
    let path =
        file.unwrap_or_else(|| registry::locate(projects, std::env::var_os(CAPABILITIES_FILE_VAR)));
    let registry = match spear_providers::registry(&path, &Audit::null()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("spear-capabilities: {e}");
            return ExitCode::from(2);
        }
    };
    if as_json {
        let out = json!({
            "file": path.display().to_string(),
            "notice": registry.notice(),
            "providers": registry.entries().iter().map(entry_json).collect::<Vec<_>>(),
            "refused": registry.refused().iter().map(|r| json!({
                "entry": r.label(),
                "problems": r.problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        if let Err(closed) = out!("{out}") {
            return closed.code();
        }
    } else if let Err(closed) = print_text(&path, &registry) {
        return closed.code();
    }
    if registry.refused().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn entry_json(e: &ProviderEntry) -> serde_json::Value {
    json!({
        "id": e.id,
        "kind": e.kind,
        "scope": e.scope.as_ref().map(ToString::to_string),
        "tasks": e.tasks.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
        "read": e.read,
        "write": e.write.as_str(),
        "enabled": e.enabled,
        "timeout_secs": e.timeout.as_secs_f64(),
    })
}

fn print_text(path: &Path, registry: &Registry) -> Result<(), Closed> {
    if let Some(notice) = registry.notice() {
        return out!("{notice}");
    }
    out!("{}", path.display())?;
    for e in registry.entries() {
        let scope = e
            .scope
            .as_ref()
            .map_or_else(|| "none (applies nowhere)".to_owned(), ToString::to_string);
        let tasks: Vec<_> = e.tasks.iter().map(|t| t.as_str()).collect();
        let read: Vec<_> = e.read.iter().map(String::as_str).collect();
        out!(
            "  ok       {}{}\n           kind {}; scope {}; tasks {}; write {}; timeout {}s\n           read: {}",
            e.id,
            if e.enabled { "" } else { " (disabled)" },
            e.kind,
            scope,
            tasks.join(", "),
            e.write.as_str(),
            e.timeout.as_secs_f64(),
            if read.is_empty() {
                "(none: every tool is a WRITE)".to_owned()
            } else {
                read.join(", ")
            },
        )?;
    }
    for r in registry.refused() {
        out!("  refused  {}", r.label())?;
        for p in &r.problems {
            out!("           {p}")?;
        }
    }
    out!(
        "{} registered, {} refused",
        registry.entries().len(),
        registry.refused().len()
    )
}
