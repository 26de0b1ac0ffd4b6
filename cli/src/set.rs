//! `set`: one entry's settings changed in place, each flag one key, as
//! `add` takes them; and the change that `enable` and `disable` make
//! ([`change`]).
//!
//! Only what the command names changes: a key given a new value keeps its
//! place in the entry (a new key goes last), `--env` and `--unset-env`
//! touch one variable each, and every other entry and byte of the file
//! stays as it was ([`crate::tree`]). The entry as changed is validated as
//! `add` validates a new one, and written by the same locked, atomic
//! writer ([`crate::file`]).

use clap::ArgGroup;
use serde_json::json;

use crate::entry;
use crate::error::Failure;
use crate::examples::{self, Example};
use crate::file::{self, Edited};
use crate::flags::{EntryFlags, RegistryArgs};
use crate::named::EntryArgs;
use crate::out::out;
use crate::remove::no_such_provider;
use crate::report::refused_edit;
use crate::tree::{self, Changes, Unchanged};

/// The examples of `set`.
pub(crate) const EXAMPLES: &[Example] = &[
    Example::new(
        "spear-capabilities set notes --scope 'corpus demo, firmware-a'",
        "Give an entry a wider scope; nothing else changes",
    ),
    Example::new(
        "spear-capabilities set notes --read search_notes,get_note --write confirm",
        "Replace its READ tools and its write policy",
    ),
    Example::new(
        "spear-capabilities set tracker --env TRACKER_TOKEN_FILE=/etc/t2 --unset-env OLD_TOKEN",
        "Set one variable and take another out",
    ),
    Example::new(
        "spear-capabilities set time --capabilities /etc/spear/capabilities.json -- uvx mcp-server-time --local-timezone UTC",
        "Give it a new command, in another file",
    ),
];

/// Change an entry's settings in place; only what is named changes.
///
/// Each flag replaces one key of the entry (`--tasks` and `--read` the
/// whole list), or is added to it; `--env K=V` sets one variable and
/// `--unset-env K` takes one out; a command after `--` replaces the
/// server's. The entry as changed must register, as `add` requires; every
/// other entry is kept byte for byte, and the file is replaced atomically,
/// one editor at a time.
///
/// Exit status: 0 changed (or already so), 1 refused (no such entry, the
/// entry as changed is invalid or its program cannot run, a variable it
/// does not have; the file is left as it was), 2 on bad usage or when the
/// file cannot be read, parsed, locked or written.
#[derive(Debug, clap::Args)]
#[command(group(
    ArgGroup::new("change")
        .required(true)
        .multiple(true)
        .args(EntryFlags::IDS)
        .args(["unset_env", "command"])
))]
#[command(after_help = examples::help(EXAMPLES))]
pub(crate) struct Args {
    #[command(flatten)]
    entry: EntryArgs,
    #[command(flatten)]
    settings: EntryFlags,
    /// A variable to take out of the server's environment (repeatable).
    #[arg(long = "unset-env", value_name = "K")]
    unset_env: Vec<String>,
    /// A new server to start and its arguments, after `--` (never run
    /// through a shell).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

impl Args {
    pub(crate) async fn run(self) -> Result<(), Failure> {
        let env = self.settings.env()?;
        if let Some(both) = self.unset_env.iter().find(|k| env.contains_key(*k)) {
            return Err(Failure::Usage(format!(
                "--env {both}=... and --unset-env {both} are both given"
            )));
        }
        let mut keys = Vec::new();
        if !self.command.is_empty() {
            keys.push(("command", json!(self.command)));
        }
        keys.extend(self.settings.keys());
        let changes = Changes {
            keys,
            set_env: self.settings.env.clone(),
            unset_env: self.unset_env.clone(),
        };
        change(&self.entry.file, &self.entry.id, &changes, Verb::Set).await
    }
}

/// `enable` (`on`) or `disable`: the entry `id` of the registry `file`
/// names gets `"enabled": on`, and nothing else changes.
pub(crate) async fn switch(file: &RegistryArgs, id: &str, on: bool) -> Result<(), Failure> {
    let changes = Changes {
        keys: vec![("enabled", json!(on))],
        ..Changes::default()
    };
    let verb = if on { Verb::Enable } else { Verb::Disable };
    change(file, id, &changes, verb).await
}

/// Which subcommand changes the entry, for what it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Set,
    Enable,
    Disable,
}

impl Verb {
    /// `changed`, `enabled`, `disabled`.
    fn done(self) -> &'static str {
        match self {
            Verb::Set => "changed",
            Verb::Enable => "enabled",
            Verb::Disable => "disabled",
        }
    }
}

/// Changes the entry `id` of the registry `file` names as `changes` says,
/// validated as `add` validates a new entry, and says what it did.
async fn change(
    file: &RegistryArgs,
    id: &str,
    changes: &Changes,
    verb: Verb,
) -> Result<(), Failure> {
    let path = file.path();
    file.named_file_exists()?;
    let kept = |current: &file::Current| format!("; {} is left as it was", current.path.display());
    let (written, lines) = file::edit(&path, |current| {
        if current.created {
            return Err(Failure::Refused(format!(
                "no capabilities file at {}, so no provider `{id}` to change",
                path.display()
            )));
        }
        let index = match current.indices(id)[..] {
            [] => return Err(no_such_provider(id, current)),
            [one] => one,
            ref several => {
                let places: Vec<String> = several.iter().map(|i| format!("providers[{i}]")).collect();
                return Err(Failure::Refused(format!(
                    "not {}: {} all have the id {id:?}, so which one to change is not clear (`spear-capabilities remove {id}` removes every one){}",
                    verb.done(),
                    places.join(", "),
                    kept(current)
                )));
            }
        };
        // Already so: nothing to check, nothing to write.
        let was = current.registry.entries().iter().find(|e| e.index == index);
        if let Some(was) = was.filter(|e| match verb {
            Verb::Enable => e.enabled,
            Verb::Disable => !e.enabled,
            Verb::Set => false,
        }) {
            let findings = current.registry.check_entry(was);
            return Ok(Edited::Keep((false, entry::check_lines(was, &findings))));
        }
        let new_text = match tree::with_changes(&current.text, index, changes) {
            Ok(text) => text,
            Err(Unchanged::NoVariable(name)) => {
                return Err(Failure::Refused(format!(
                    "not changed: `{id}` has no variable {name} in its env{}",
                    kept(current)
                )));
            }
            Err(Unchanged::EnvNotAnObject) => {
                return Err(Failure::Refused(format!(
                    "not changed: the env of `{id}` is not an object, so it has no variable to set or take out (`check` says what is wrong with it){}",
                    kept(current)
                )));
            }
            Err(Unchanged::Text(e)) => return Err(current.cannot_edit(e)),
        };
        let registry = current.edited(&new_text)?;
        if let Some(refused) = registry.refused().iter().find(|r| r.index == index) {
            let head = format!(
                "not {}: the entry would be refused, as `check` would refuse it{}:",
                verb.done(),
                kept(current)
            );
            return Err(Failure::Refused(refused_edit(head, refused)));
        }
        let Some(entry) = registry.entries().iter().find(|e| e.index == index) else {
            return Err(Failure::Usage(format!(
                "providers[{index}] is neither registered nor refused"
            )));
        };
        let findings = registry.check_entry(entry);
        let lines = entry::check_lines(entry, &findings);
        if findings.cannot_run.is_some() {
            return Err(Failure::Refused(format!(
                "not {}: a turn would start it and its program cannot run, as `check` says{}:\n{lines}",
                verb.done(),
                kept(current)
            )));
        }
        if new_text == current.text {
            return Ok(Edited::Keep((false, lines)));
        }
        Ok(Edited::Write(new_text, (true, lines)))
    })
    .await?;
    let shown = path.display();
    if written {
        out!("{} `{id}` in {shown}", verb.done())?;
    } else {
        let state = match verb {
            Verb::Set => "already has these settings",
            Verb::Enable => "is already enabled",
            Verb::Disable => "is already disabled",
        };
        out!("`{id}` in {shown} {state}; nothing written")?;
    }
    out!("{lines}")?;
    Ok(())
}
