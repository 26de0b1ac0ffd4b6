//! `spear-capabilities check`: validate a registry.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::json;
use spear_capabilities::registry::{self, CAPABILITIES_FILE_VAR};
use spear_capabilities::{Audit, ProviderEntry, Registry};

use crate::out::{Closed, out};
use crate::report::{REFUSED_EXIT, refused_json, refused_lines};

/// What `check` found of one accepted entry beyond the registry's own
/// validation.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    /// Why its server cannot be started, when that refuses the entry: it is
    /// enabled and has a scope, so a turn would start it.
    pub(crate) cannot_run: Option<String>,
    /// What the operator should know and that refuses nothing.
    pub(crate) warnings: Vec<String>,
}

impl Findings {
    /// Looks at `entry`: a program that cannot run refuses an entry that
    /// some turn would start, and is a warning for one that nothing starts
    /// (disabled, or without a scope, which the spec says applies nowhere).
    pub(crate) fn of(entry: &ProviderEntry, base: &Path) -> Self {
        let mut findings = Findings::default();
        if entry.scope.is_none() {
            findings
                .warnings
                .push("no scope, so it applies nowhere (add `scope` to use it)".to_owned());
        }
        let Some(why) = cannot_run(entry, base) else {
            return findings;
        };
        if !entry.enabled {
            findings.warnings.push(format!(
                "{why}; a warning only: it is disabled, so nothing starts it"
            ));
        } else if entry.scope.is_none() {
            findings.warnings.push(format!(
                "{why}; a warning only: it has no scope, so nothing starts it"
            ));
        } else {
            findings.cannot_run = Some(why);
        }
        findings
    }
}

pub(crate) fn run(file: Option<PathBuf>, projects: &Path, as_json: bool) -> ExitCode {
    if let Some(named) = &file {
        if let Err(e) = crate::context::named_file_exists(named) {
            eprintln!("spear-capabilities: {e}");
            return ExitCode::from(2);
        }
    }
    let path =
        file.unwrap_or_else(|| registry::locate(projects, std::env::var_os(CAPABILITIES_FILE_VAR)));
    let registry = match spear_providers::registry(&path, &Audit::null()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("spear-capabilities: {e}");
            return ExitCode::from(2);
        }
    };
    let base = path.parent().unwrap_or(Path::new("."));
    let findings: Vec<Findings> = registry
        .entries()
        .iter()
        .map(|e| Findings::of(e, base))
        .collect();
    if as_json {
        let providers = registry.entries().iter().zip(&findings).map(|(e, f)| {
            let mut v = entry_json(e);
            v["cannot_run"] = json!(f.cannot_run);
            v["warnings"] = json!(f.warnings);
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
    } else if let Err(closed) = print_text(&path, &registry, &findings) {
        return closed.code();
    }
    if registry.refused().is_empty() && findings.iter().all(|f| f.cannot_run.is_none()) {
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

/// Why `entry`'s server cannot be started, if it cannot, in the words
/// `list` and a turn's start use for it (`cannot start `x`: No such file or
/// directory (os error 2)`): its program resolved as the mcp-stdio kind
/// resolves it (a relative path with a `/` from the capabilities file's
/// folder, a bare name on the `PATH` the server gets), and checked to be a
/// file that may be executed, as `execvp` checks it.
fn cannot_run(entry: &ProviderEntry, base: &Path) -> Option<String> {
    if entry.kind != spear_mcp_stdio::NAME {
        return None;
    }
    let config = spear_mcp_stdio::ServerConfig::from_settings(&entry.settings).ok()?;
    let program = Path::new(config.command.first()?);
    let cannot_start = |e: std::io::Error| format!("cannot start `{}`: {e}", program.display());
    if program.components().count() == 1 && !program.is_absolute() {
        // The server's PATH: ours, unless its `env` sets one.
        let path = config
            .env
            .get("PATH")
            .map(OsString::from)
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_default();
        return on_path(program, &path).err().map(cannot_start);
    }
    let program = if program.is_relative() {
        base.join(program)
    } else {
        program.to_path_buf()
    };
    executable(&program)
        .err()
        .map(|e| format!("cannot start `{}`: {e}", program.display()))
}

/// Finds `program` in `path` as `execvp` does: the first executable file
/// wins; if none, a file found but not executable is "Permission denied",
/// else "No such file or directory".
fn on_path(program: &Path, path: &OsStr) -> std::io::Result<()> {
    let mut denied = None;
    for dir in std::env::split_paths(path) {
        match executable(&dir.join(program)) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => denied = Some(e),
            Err(_) => {}
        }
    }
    Err(denied.unwrap_or_else(|| std::io::Error::from_raw_os_error(2))) // ENOENT
}

/// Whether `path` is a file that may be executed; a folder may not, and
/// `execve` says so as it says it of a file without an execute bit.
fn executable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() || meta.permissions().mode() & 0o111 == 0 {
        return Err(std::io::Error::from_raw_os_error(13)); // EACCES
    }
    Ok(())
}

fn print_text(path: &Path, registry: &Registry, findings: &[Findings]) -> Result<(), Closed> {
    if let Some(notice) = registry.notice() {
        return out!("{notice}");
    }
    out!("{}", path.display())?;
    for (e, f) in registry.entries().iter().zip(findings) {
        out!("{}", entry_lines(e, f))?;
    }
    for line in refused_lines(registry, false) {
        out!("{line}")?;
    }
    let unrunnable = findings.iter().filter(|f| f.cannot_run.is_some()).count();
    let warnings: usize = findings.iter().map(|f| f.warnings.len()).sum();
    let warned = match warnings {
        0 => String::new(),
        1 => ", 1 warning".to_owned(),
        n => format!(", {n} warnings"),
    };
    out!(
        "{} registered, {} refused{warned}",
        registry.entries().len() - unrunnable,
        registry.refused().len() + unrunnable
    )
}

/// An accepted entry as `check` prints it, with what `findings` says of
/// it: `  ok       <id>`, its settings and warnings under it, or `  refused
/// <id>` and why its program cannot run.
pub(crate) fn entry_lines(e: &ProviderEntry, f: &Findings) -> String {
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
