//! `add`: an entry added to the registry from the command line, as `codex
//! mcp add` and `claude mcp add` do.
//!
//! The new entry is built from the flags and validated as `check` does
//! (the core's registry reads the file as it would be, then `check`'s
//! findings on the program); only an entry that would register is written,
//! and an id already in the file is refused, never replaced. The file is
//! edited in place ([`crate::tree`]) by the locked, atomic writer
//! ([`crate::file`]): every other entry and key stays as it was.

use serde_json::{Value, json};

use crate::entry;
use crate::error::Failure;
use crate::examples::{self, Example};
use crate::file::{self, Edited};
use crate::flags::{EntryFlags, RegistryArgs};
use crate::out::out;
use crate::report::refused_edit;
use crate::tree;

/// The examples of `add`.
pub(crate) const EXAMPLES: &[Example] = &[
    Example::new(
        "spear-capabilities add notes --scope 'corpus demo' --read search_notes,get_note -- /opt/notes-mcp/bin/notes-mcp --stdio",
        "Register a server for the project demo, two of its tools READ (every other tool a WRITE, refused)",
    ),
    Example::new(
        "spear-capabilities add tracker --scope global --write confirm --env TRACKER_TOKEN_FILE=/etc/t --timeout 10 -- npx -y tracker-mcp",
        "One for every project, whose WRITEs the person confirms, with a variable of its own and a 10 s timeout",
    ),
    Example::new(
        "spear-capabilities add time --capabilities /etc/spear/capabilities.json --scope global --tasks implementation,general -- uvx mcp-server-time",
        "One that general questions get too, in another file",
    ),
];

/// Add an entry to the registry, validated as `check` validates it.
///
/// An entry with the same id is never replaced; every other entry is
/// kept byte for byte, and the file is replaced atomically, one editor at
/// a time. A file that does not exist yet is created (readable by its
/// owner only). Absent flags leave the registry's defaults: no scope
/// (applies nowhere), tasks implementation and mixed, no READ tool,
/// write refuse, timeout 30.
///
/// Exit status: 0 added, 1 refused (the entry is invalid, its program
/// cannot run, or its id is taken; the file is left as it was), 2 on
/// bad usage or when the file cannot be read, parsed, locked or written.
#[derive(Debug, clap::Args)]
#[command(after_help = examples::help(EXAMPLES))]
pub(crate) struct Args {
    /// The provider's id (lower-case; its capabilities are `<id>/<tool>`).
    id: String,
    #[command(flatten)]
    file: RegistryArgs,
    #[command(flatten)]
    settings: EntryFlags,
    /// The server to start and its arguments, after `--` (never run
    /// through a shell).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

impl Args {
    /// The entry as JSON members, in the order the spec's example has them.
    fn entry(&self) -> Result<Vec<(&'static str, Value)>, Failure> {
        let env = self.settings.env()?;
        let mut entry = vec![("id", json!(self.id)), ("command", json!(self.command))];
        if !env.is_empty() {
            entry.push(("env", Value::Object(env)));
        }
        entry.extend(self.settings.keys());
        Ok(entry)
    }

    /// Validates the new entry, refuses a duplicate id, writes.
    pub(crate) async fn run(self) -> Result<(), Failure> {
        let path = self.file.path();
        let entry = self.entry()?;
        let (created, lines) = file::edit(&path, |current| {
            if let Some(&index) = current.indices(&self.id).first() {
                return Err(Failure::Refused(format!(
                    "not added: providers[{index}] of {} already has the id {:?}; ids must be unique (`spear-capabilities remove {}` first to replace it)",
                    path.display(),
                    self.id,
                    self.id
                )));
            }
            let new_text =
                tree::with_entry(&current.text, &entry).map_err(|e| current.cannot_edit(e))?;
            // What `check` would say of the file as it would be: the new
            // entry is the last one.
            let registry = current.edited(&new_text)?;
            let index = current.len();
            if let Some(refused) = registry.refused().iter().find(|r| r.index == index) {
                let head = format!(
                    "not added: the entry is refused, as `check` would refuse it; {} is left as it was:",
                    path.display()
                );
                return Err(Failure::Refused(refused_edit(head, refused)));
            }
            let Some(added) = registry.entries().iter().find(|e| e.index == index) else {
                return Err(Failure::Usage(
                    "the new entry is neither registered nor refused".to_owned(),
                ));
            };
            let findings = registry.check_entry(added);
            let lines = entry::check_lines(added, &findings);
            if findings.cannot_run.is_some() {
                return Err(Failure::Refused(format!(
                    "not added: a turn would start it and its program cannot run, as `check` says; {} is left as it was:\n{lines}",
                    path.display(),
                )));
            }
            Ok(Edited::Write(new_text, (current.created, lines)))
        })
        .await?;
        let what = if created { " (a new file)" } else { "" };
        out!("added `{}` to {}{what}", self.id, path.display())?;
        out!("{lines}")?;
        Ok(())
    }
}
