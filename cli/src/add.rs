//! `add`: an entry added to the registry from the command line, as `codex
//! mcp add` and `claude mcp add` do.
//!
//! The new entry is built from the flags and validated as `check` does
//! (the core's registry reads the file as it would be, then `check`'s
//! findings on the program); only an entry that would register is written,
//! and an id already in the file is refused, never replaced. The file is
//! edited in place ([`crate::file`]): every other entry and key stays as it
//! was, and the write is atomic.
//!
//! It is not a lock: two edits at the same moment may lose one of them,
//! as with any editor. Each one is whole, never half-written.

use clap::builder::PossibleValuesParser;
use serde_json::{Value, json};
use spear_capabilities::{Name, RequestClass, WritePolicy};

use crate::entry;
use crate::error::Failure;
use crate::file;
use crate::flags::RegistryArgs;
use crate::out::out;
use crate::report::refused_entry_lines;

/// Add an entry to the registry, validated as `check` validates it.
///
/// An entry with the same id is never replaced; every other entry is
/// kept byte for byte, and the file is replaced atomically. A file that
/// does not exist yet is created (readable by its owner only).
///
/// Exit status: 0 added, 1 refused (the entry is invalid, its program
/// cannot run, or its id is taken; the file is left as it was), 2 on
/// bad usage or when the file cannot be read, parsed or written.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  spear-capabilities add notes --scope 'corpus demo' --read search_notes,get_note -- /opt/notes-mcp/bin/notes-mcp --stdio
  spear-capabilities add tracker --scope global --write confirm --env TRACKER_TOKEN_FILE=/etc/t --timeout 10 -- npx -y tracker-mcp
  spear-capabilities add time --capabilities /etc/spear/capabilities.json --scope global --tasks implementation,general -- uvx mcp-server-time")]
pub(crate) struct Args {
    /// The provider's id (lower-case; its capabilities are `<id>/<tool>`).
    id: String,
    #[command(flatten)]
    file: RegistryArgs,
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

impl Args {
    /// The entry as JSON members, in the order the spec's example has them.
    fn entry(&self) -> Result<Vec<(&'static str, Value)>, Failure> {
        let mut env = serde_json::Map::new();
        for (name, value) in &self.env {
            if env.insert(name.clone(), json!(value)).is_some() {
                return Err(Failure::Usage(format!("--env {name} is given twice")));
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

    /// Validates the new entry, refuses a duplicate id, writes.
    pub(crate) async fn run(self) -> Result<(), Failure> {
        let path = self.file.path();
        let entry = self.entry()?;
        let (text, created) = match file::read(&path)? {
            Some((text, _)) => (text, false),
            None => (file::EMPTY.to_owned(), true),
        };
        let existing = file::ids(&text);
        if let Some(index) = existing.iter().position(|id| id.as_ref() == Some(&self.id)) {
            return Err(Failure::Refused(format!(
                "not added: providers[{index}] of {} already has the id {:?}; ids must be unique (`spear-capabilities remove {}` first to replace it)",
                path.display(),
                self.id,
                self.id
            )));
        }
        let new_text = file::with_entry(&text, &entry).map_err(file::cannot_edit(&path))?;
        // What `check` would say of the file as it would be: the new entry
        // is the last one.
        let registry = file::edited(&new_text, &path)?;
        if let Some(refused) = registry
            .refused()
            .iter()
            .find(|r| r.index == existing.len())
        {
            let mut said = format!(
                "not added: the entry is refused, as `check` would refuse it; {} is left as it was:",
                path.display()
            );
            for line in refused_entry_lines(refused, false) {
                said.push('\n');
                said.push_str(&line);
            }
            return Err(Failure::Refused(said));
        }
        let Some(added) = registry.entry(&self.id) else {
            return Err(Failure::Usage(
                "the new entry is neither registered nor refused".to_owned(),
            ));
        };
        let findings = registry.check_entry(added);
        if findings.cannot_run.is_some() {
            return Err(Failure::Refused(format!(
                "not added: a turn would start it and its program cannot run, as `check` says; {} is left as it was:\n{}",
                path.display(),
                entry::check_lines(added, &findings)
            )));
        }
        file::write(&path, &new_text)?;
        let what = if created { " (a new file)" } else { "" };
        out!("added `{}` to {}{what}", self.id, path.display())?;
        out!("{}", entry::check_lines(added, &findings))?;
        Ok(())
    }
}
