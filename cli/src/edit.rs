//! `add` and `remove`: the registry edited from the command line, as
//! `codex mcp add/remove` and `claude mcp add/remove` do.
//!
//! `add` builds the new entry from its flags, validates it as `check` does
//! (the core's registry reads the file as it would be, then `check`'s
//! findings on the program) and writes only an entry that would register;
//! an id already in the file is refused, never replaced. Both edit the file
//! in place ([`crate::file`]): every other entry and key stays as it was,
//! and the write is atomic.
//!
//! It is not a lock: two edits at the same moment may lose one of them,
//! as with any editor. Each one is whole, never half-written.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use clap::builder::PossibleValuesParser;
use serde_json::{Value, json};
use spear_capabilities::{Audit, Name, Registry, RequestClass, WritePolicy};

use crate::check::entry_lines;
use crate::file::{self, FileArgs};
use crate::out::out;
use crate::report::{REFUSED_EXIT, refused_entry_lines};

/// The entry `add` writes.
#[derive(Debug, Args)]
pub(crate) struct AddArgs {
    /// The provider's id (lower-case; its capabilities are `<id>/<tool>`).
    id: String,
    #[command(flatten)]
    file: FileArgs,
    /// Where it applies: `global`, `corpus P[, ...]`, `family F[, ...]` or
    /// `path DIR` (absent: nowhere, which `check` warns of).
    #[arg(long, value_name = "SCOPE")]
    scope: Option<String>,
    /// The request classes it serves, comma-separated or repeated
    /// (absent: implementation and mixed).
    #[arg(long, value_name = "CLASS", value_delimiter = ',', value_parser = names::<RequestClass>())]
    tasks: Vec<String>,
    /// The tools that only read, comma-separated or repeated; every other
    /// tool is a WRITE.
    #[arg(long, value_name = "TOOL", value_delimiter = ',')]
    read: Vec<String>,
    /// What its WRITE tools may do (absent: refuse).
    #[arg(long, value_name = "POLICY", value_parser = names::<WritePolicy>())]
    write: Option<String>,
    /// A variable for the server's environment (repeatable).
    #[arg(long = "env", value_name = "K=V", value_parser = variable)]
    env: Vec<(String, String)>,
    /// Seconds one request may take (absent: 30).
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    timeout: Option<serde_json::Number>,
    /// The server to start and its arguments, after `--` (never run
    /// through a shell).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// The entry `remove` takes out.
#[derive(Debug, Args)]
pub(crate) struct RemoveArgs {
    /// The provider's id.
    id: String,
    #[command(flatten)]
    file: FileArgs,
}

// The names come from the core, so the flags cannot drift from what the
// registry accepts.
fn names<T: Name>() -> PossibleValuesParser {
    PossibleValuesParser::new(T::ALL.iter().map(|v| v.as_str()))
}

fn variable(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("{text:?} is not NAME=VALUE"))
}

fn seconds(text: &str) -> Result<serde_json::Number, String> {
    // Kept as written (10 stays 10, not 10.0); the registry checks the range.
    serde_json::from_str(text).map_err(|_| format!("{text:?} is not a number of seconds"))
}

impl AddArgs {
    /// The entry as JSON members, in the order the spec's example has them.
    fn entry(&self) -> Result<Vec<(&'static str, Value)>, String> {
        let mut env = serde_json::Map::new();
        for (name, value) in &self.env {
            if env.insert(name.clone(), json!(value)).is_some() {
                return Err(format!("--env {name} is given twice"));
            }
        }
        let mut entry = vec![("id", json!(self.id)), ("command", json!(self.command))];
        if !env.is_empty() {
            entry.push(("env", Value::Object(env)));
        }
        if let Some(scope) = &self.scope {
            entry.push(("scope", json!(scope)));
        }
        if !self.tasks.is_empty() {
            entry.push(("tasks", json!(self.tasks)));
        }
        if !self.read.is_empty() {
            entry.push(("read", json!(self.read)));
        }
        if let Some(write) = &self.write {
            entry.push(("write", json!(write)));
        }
        if let Some(timeout) = &self.timeout {
            entry.push(("timeout", Value::Number(timeout.clone())));
        }
        Ok(entry)
    }
}

fn fail(code: u8, message: impl std::fmt::Display) -> ExitCode {
    eprintln!("spear-capabilities: {message}");
    ExitCode::from(code)
}

/// The file's text and the registry the core reads from it; `None` when
/// the file does not exist.
fn read(path: &Path) -> Result<Option<(String, Registry)>, ExitCode> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(fail(
                2,
                format!("capabilities file {}: {e}", path.display()),
            ));
        }
    };
    let kinds = spear_providers::kinds().map_err(|e| fail(2, e))?;
    let registry =
        Registry::parse(text.as_bytes(), path, &kinds, &Audit::null()).map_err(|e| fail(2, e))?;
    Ok(Some((text, registry)))
}

/// The `id` of each entry of `providers` in `text`, in file order (`None`
/// for one without a string id).
fn ids(text: &str) -> Vec<Option<String>> {
    let value: Value = serde_json::from_str(text).unwrap_or_default();
    value["providers"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|e| e["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// `add`: validates the new entry, refuses a duplicate id, writes.
///
/// Exit status: 0 added, 1 refused (the entry is invalid, its program
/// cannot run, or its id is taken), 2 when the file cannot be read, parsed
/// or written.
pub(crate) fn add(args: &AddArgs) -> ExitCode {
    let path = args.file.path();
    let entry = match args.entry() {
        Ok(entry) => entry,
        Err(e) => return fail(2, e),
    };
    let (text, created) = match read(&path) {
        Ok(Some((text, _))) => (text, false),
        Ok(None) => (file::EMPTY.to_owned(), true),
        Err(code) => return code,
    };
    let existing = ids(&text);
    if let Some(index) = existing.iter().position(|id| id.as_ref() == Some(&args.id)) {
        return fail(
            REFUSED_EXIT,
            format!(
                "not added: providers[{index}] of {} already has the id {:?}; ids must be unique (`spear-capabilities remove {}` first to replace it)",
                path.display(),
                args.id,
                args.id
            ),
        );
    }
    let new_text = match file::with_entry(&text, &entry) {
        Ok(t) => t,
        Err(e) => return fail(2, format!("cannot edit {}: {e}", path.display())),
    };
    // What `check` would say of the file as it would be: the new entry is
    // the last one.
    let registry = match read_text(&new_text, &path) {
        Ok(r) => r,
        Err(code) => return code,
    };
    if let Some(refused) = registry
        .refused()
        .iter()
        .find(|r| r.index == existing.len())
    {
        eprintln!(
            "spear-capabilities: not added: the entry is refused, as `check` would refuse it; {} is left as it was:",
            path.display()
        );
        for line in refused_entry_lines(refused, false) {
            eprintln!("{line}");
        }
        return ExitCode::from(REFUSED_EXIT);
    }
    let Some(added) = registry.entry(&args.id) else {
        return fail(2, "the new entry is neither registered nor refused");
    };
    let findings = registry.check_entry(added);
    if findings.cannot_run.is_some() {
        eprintln!(
            "spear-capabilities: not added: a turn would start it and its program cannot run, as `check` says; {} is left as it was:",
            path.display()
        );
        eprintln!("{}", entry_lines(added, &findings));
        return ExitCode::from(REFUSED_EXIT);
    }
    if let Err(e) = file::write_atomically(&path, &new_text) {
        return fail(
            2,
            format!("cannot write {}: {e}; it is left as it was", path.display()),
        );
    }
    let what = if created { " (a new file)" } else { "" };
    let said = out!("added `{}` to {}{what}", args.id, path.display())
        .and_then(|()| out!("{}", entry_lines(added, &findings)));
    match said {
        Ok(()) => ExitCode::SUCCESS,
        Err(closed) => closed.code(),
    }
}

fn read_text(text: &str, path: &Path) -> Result<Registry, ExitCode> {
    let kinds = spear_providers::kinds().map_err(|e| fail(2, e))?;
    Registry::parse(text.as_bytes(), path, &kinds, &Audit::null()).map_err(|e| {
        fail(
            2,
            format!("the edited file would not parse ({e}); nothing written"),
        )
    })
}

/// `remove`: takes out every entry with the id, writes.
///
/// Exit status: 0 removed, 1 when no entry has the id, 2 when the file
/// cannot be read, parsed or written, or a file named with --capabilities
/// does not exist.
pub(crate) fn remove(args: &RemoveArgs) -> ExitCode {
    let path = args.file.path();
    if let Some(named) = &args.file.capabilities {
        if let Err(e) = crate::context::named_file_exists(named) {
            return fail(2, e);
        }
    }
    let text = match read(&path) {
        Ok(Some((text, _))) => text,
        Ok(None) => {
            return fail(
                REFUSED_EXIT,
                format!(
                    "no capabilities file at {}, so no provider `{}` to remove",
                    path.display(),
                    args.id
                ),
            );
        }
        Err(code) => return code,
    };
    let (new_text, removed) = match file::without_entry(&text, &args.id) {
        Ok(x) => x,
        Err(e) => return fail(2, format!("cannot edit {}: {e}", path.display())),
    };
    if removed == 0 {
        let known: Vec<String> = ids(&text).into_iter().flatten().collect();
        let known = if known.is_empty() {
            "it has none".to_owned()
        } else {
            format!("its providers: {}", known.join(", "))
        };
        return fail(
            REFUSED_EXIT,
            format!("no provider `{}` in {}; {known}", args.id, path.display()),
        );
    }
    if let Err(code) = read_text(&new_text, &path) {
        return code;
    }
    if let Err(e) = file::write_atomically(&path, &new_text) {
        return fail(
            2,
            format!("cannot write {}: {e}; it is left as it was", path.display()),
        );
    }
    let how_many = if removed == 1 {
        String::new()
    } else {
        format!(" ({removed} entries had this id)")
    };
    match out!("removed `{}` from {}{how_many}", args.id, path.display()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(closed) => closed.code(),
    }
}
