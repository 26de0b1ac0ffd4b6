//! `spear-capabilities check`: validate a registry.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use serde_json::json;
use spear_capabilities::CAPABILITIES_FILE_VAR;
use spear_capabilities::{Audit, EntryCheck, EntryWarning, Error, ProviderEntry, Registry};

use crate::get::Started;
use crate::out::{Closed, out};
use crate::report::{REFUSED_EXIT, refused_json, refused_lines};

/// What `check` is asked besides the file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CheckOptions {
    /// Print one JSON object.
    pub(crate) json: bool,
    /// Also start every enabled entry whose program can run.
    pub(crate) start: bool,
    /// With `start`: how long each start may go on, however short its
    /// entry's `timeout`.
    pub(crate) wait: Option<Duration>,
}

pub(crate) async fn run(file: Option<PathBuf>, projects: &Path, options: CheckOptions) -> ExitCode {
    let as_json = options.json;
    if let Some(named) = &file {
        if let Err(e) = crate::context::named_file_exists(named) {
            eprintln!("spear-capabilities: {e}");
            return ExitCode::from(2);
        }
    }
    let path =
        file.unwrap_or_else(|| Registry::locate(projects, std::env::var_os(CAPABILITIES_FILE_VAR)));
    let registry = match spear_providers::registry(&path, &Audit::null()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("spear-capabilities: {e}");
            return ExitCode::from(2);
        }
    };
    // Is each program there and runnable: the library's check, as an
    // embedder would ask it.
    let findings = registry.check();
    let started = if options.start {
        start_all(&registry, &findings, options.wait).await
    } else {
        Vec::new()
    };
    if as_json {
        let providers = registry
            .entries()
            .iter()
            .zip(&findings)
            .enumerate()
            .map(|(i, (e, f))| {
                let mut v = entry_json(e);
                if let Some(Some(started)) = started.get(i) {
                    v["started"] = crate::get::started_json(started);
                }
                v["cannot_run"] = json!(f.cannot_run);
                v["warnings"] = json!(
                    f.warnings
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                );
                v
            });
        let out = json!({
            "file": path.display().to_string(),
            "notice": registry.notice(),
            "providers": providers.collect::<Vec<_>>(),
            "refused": refused_json(&registry),
        });
        if let Err(closed) = out!("{out}") {
            return closed.code();
        }
    } else if let Err(closed) = print_text(&path, &registry, &findings, &started) {
        return closed.code();
    }
    let all_started = started.iter().flatten().all(Result::is_ok);
    if registry.refused().is_empty()
        && findings.iter().all(|f| f.cannot_run.is_none())
        && all_started
    {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(REFUSED_EXIT)
    }
}

/// An accepted entry's common keys as `check --json` gives them.
pub(crate) fn entry_json(e: &ProviderEntry) -> serde_json::Value {
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

/// Starts, all at once, each enabled entry whose program can run (a start
/// per entry, as `get --start` makes it); `None` for the others, among
/// them an unscoped entry whose program the check found cannot run (a
/// warning, which a start must not turn into a failure).
async fn start_all(
    registry: &Registry,
    findings: &[EntryCheck],
    wait: Option<Duration>,
) -> Vec<Option<Result<Started, Error>>> {
    let starts = registry
        .entries()
        .iter()
        .zip(findings)
        .map(|(e, f)| async move {
            let runs = f.cannot_run.is_none()
                && !f
                    .warnings
                    .iter()
                    .any(|w| matches!(w, EntryWarning::CannotRunUnused { .. }));
            if e.enabled && runs {
                Some(crate::get::start(registry, e, wait).await)
            } else {
                None
            }
        });
    futures::future::join_all(starts).await
}

fn print_text(
    path: &Path,
    registry: &Registry,
    findings: &[EntryCheck],
    started: &[Option<Result<Started, Error>>],
) -> Result<(), Closed> {
    if let Some(notice) = registry.notice() {
        return out!("{notice}");
    }
    out!("{}", path.display())?;
    for (i, (e, f)) in registry.entries().iter().zip(findings).enumerate() {
        out!("{}", entry_lines(e, f))?;
        match started.get(i) {
            Some(Some(Ok(s))) => out!("           {}", s.summary(&e.id))?,
            Some(Some(Err(err))) => out!("           start failed: {err}")?,
            _ => {}
        }
    }
    for line in refused_lines(registry, false) {
        out!("{line}")?;
    }
    let unrunnable = findings.iter().filter(|f| f.cannot_run.is_some()).count();
    let failed = started.iter().flatten().filter(|s| s.is_err()).count();
    let failed = match failed {
        0 => String::new(),
        n => format!(", {n} failed to start"),
    };
    let warnings: usize = findings.iter().map(|f| f.warnings.len()).sum();
    let warned = match warnings {
        0 => String::new(),
        1 => ", 1 warning".to_owned(),
        n => format!(", {n} warnings"),
    };
    out!(
        "{} registered, {} refused{warned}{failed}",
        registry.entries().len() - unrunnable,
        registry.refused().len() + unrunnable
    )
}

/// An accepted entry as `check` prints it, with what `findings` says of
/// it: `  ok       <id>`, its settings and warnings under it, or `  refused
/// <id>` and why its program cannot run.
pub(crate) fn entry_lines(e: &ProviderEntry, f: &EntryCheck) -> String {
    if let Some(why) = &f.cannot_run {
        return format!("  refused  {}\n           {why}", e.id);
    }
    let scope = e
        .scope
        .as_ref()
        .map_or_else(|| "none (applies nowhere)".to_owned(), ToString::to_string);
    let tasks: Vec<_> = e.tasks.iter().map(|t| t.as_str()).collect();
    let read: Vec<_> = e.read.iter().map(String::as_str).collect();
    let mut lines = format!(
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
    );
    for w in &f.warnings {
        lines.push_str(&format!("\n           warning: {w}"));
    }
    lines
}
