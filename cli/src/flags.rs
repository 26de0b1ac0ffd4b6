//! The flags several subcommands share, each defined once and flattened
//! where it is taken: which registry ([`RegistryArgs`]), which turn
//! ([`ContextArgs`]), how long a start may go on ([`WaitArgs`]), an
//! entry's settings as `add` and `set` take them ([`EntryFlags`]); and the
//! one prologue that loads a registry ([`RegistryArgs::load`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use serde_json::{Value, json};
use spear_capabilities::audit::JsonLinesOptions;
use spear_capabilities::registry::CAPABILITIES_FILE_VAR;
use spear_capabilities::{
    Audit, Name, Registry, Runtime, TurnContext, TurnKind, WritePolicy, audit::JsonLinesSink,
    registry::RequestClass,
};

use crate::error::Failure;

/// `--projects` when it is not given.
pub(crate) const DEFAULT_PROJECTS: &str = "projects.json";

/// Which capabilities file.
#[derive(Debug, Clone, Args)]
pub(crate) struct RegistryArgs {
    /// The capabilities file (default: $SPEAR_CAPABILITIES_FILE, else
    /// capabilities.json beside --projects).
    #[arg(long, value_name = "FILE")]
    pub(crate) capabilities: Option<PathBuf>,
    /// The projects.json whose folder holds capabilities.json.
    #[arg(long, value_name = "FILE", default_value = DEFAULT_PROJECTS)]
    pub(crate) projects: PathBuf,
}

impl RegistryArgs {
    /// The capabilities file these flags name.
    pub(crate) fn path(&self) -> PathBuf {
        self.capabilities.clone().unwrap_or_else(|| {
            Registry::locate(&self.projects, std::env::var_os(CAPABILITIES_FILE_VAR))
        })
    }

    /// Fails unless the file named with `--capabilities`, if one is, exists:
    /// the spec's "no file: no providers" is the default location's rule,
    /// and a typo in a name given by hand must not read as an empty
    /// registry.
    pub(crate) fn named_file_exists(&self) -> Result<(), Failure> {
        match &self.capabilities {
            Some(named) => std::fs::metadata(named)
                .map(drop)
                .map_err(|e| missing(named, &e)),
            None => Ok(()),
        }
    }

    /// Loads the registry, auditing it to `audit`: a named file must exist;
    /// a missing file found by default means no providers, as the runtime
    /// has it.
    pub(crate) fn load(&self, audit: &Audit) -> Result<Registry, Failure> {
        self.named_file_exists()?;
        spear_providers::registry(&self.path(), audit).map_err(|e| Failure::Usage(e.to_string()))
    }
}

/// The error of a capabilities file that cannot be found or read.
pub(crate) fn missing(path: &Path, e: &std::io::Error) -> Failure {
    Failure::Usage(format!("capabilities file {}: {e}", path.display()))
}

/// How long a start may go on.
#[derive(Debug, Clone, Copy, Args)]
pub(crate) struct WaitArgs {
    /// Let each provider's start go on up to SECONDS (a server that
    /// downloads itself on first use, `npx -y` or `uvx`), however short
    /// its `timeout`: the handshake and the listing may take that long,
    /// and the command waits for them (`check`, `get`: with --start).
    /// Calls keep the entry's `timeout`.
    #[arg(long, value_name = "SECONDS", value_parser = wait_seconds)]
    pub(crate) wait: Option<Duration>,
}

impl WaitArgs {
    /// What the CLI says beside a start that timed out: the flag that
    /// lets a slow start finish, named as clap defines it.
    pub(crate) fn slow_start_hint() -> String {
        format!("`{}` lets a slow start finish", flag::<Self>("wait"))
    }
}

/// The flag `id` of `T` as clap defines it, with its value name (`--wait
/// SECONDS`), for a hint that cannot drift from the parser.
fn flag<T: Args>(id: &str) -> String {
    let command = T::augment_args(clap::Command::new("flags"));
    let arg = command.get_arguments().find(|a| a.get_id() == id);
    let long = arg.and_then(|a| a.get_long()).unwrap_or(id);
    match arg
        .and_then(|a| a.get_value_names())
        .and_then(|names| names.first())
    {
        Some(value) => format!("--{long} {value}"),
        None => format!("--{long}"),
    }
}

/// The longest `--wait`: a day, as the longest `timeout` an entry may set.
const MAX_WAIT_SECONDS: f64 = 86_400.0;

/// A `--wait` value: a number of seconds, more than 0, at most a day.
fn wait_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(seconds > 0.0 && seconds <= MAX_WAIT_SECONDS) {
        return Err(format!(
            "{text} is not more than 0 and at most {MAX_WAIT_SECONDS} seconds"
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// An entry's settings as `add` and `set` take them: each flag one key of
/// the entry (`--env` one variable of its `env`).
#[derive(Debug, Args)]
pub(crate) struct EntryFlags {
    /// Where it applies: `global`, `corpus P[, ...]`, `family F[, ...]` or
    /// `path DIR`.
    #[arg(long, value_name = "SCOPE")]
    pub(crate) scope: Option<String>,
    /// The request classes it serves, comma-separated or repeated.
    #[arg(long, value_name = "CLASS", value_delimiter = ',', value_parser = name_strings::<RequestClass>())]
    pub(crate) tasks: Vec<String>,
    /// The tools that only read, comma-separated or repeated; every other
    /// tool is a WRITE.
    #[arg(long, value_name = "TOOL", value_delimiter = ',')]
    pub(crate) read: Vec<String>,
    /// What its WRITE tools may do.
    #[arg(long, value_name = "POLICY", value_parser = name_strings::<WritePolicy>())]
    pub(crate) write: Option<String>,
    /// A variable for the server's environment (repeatable). In V,
    /// '${NAME}' is the host's variable NAME when the server starts (quote
    /// it from the shell) and '$$' one '$'.
    #[arg(long = "env", value_name = "K=V", value_parser = variable)]
    pub(crate) env: Vec<(String, String)>,
    /// Seconds one request may take.
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    pub(crate) timeout: Option<serde_json::Number>,
}

impl EntryFlags {
    /// The ids of these flags, for a group that needs one of them.
    pub(crate) const IDS: [&'static str; 6] = ["scope", "tasks", "read", "write", "env", "timeout"];

    /// The keys these flags give, as JSON members in the order the spec's
    /// example has them (without `env`: [`EntryFlags::env`]).
    pub(crate) fn keys(&self) -> Vec<(&'static str, Value)> {
        let mut keys = Vec::new();
        if let Some(scope) = &self.scope {
            keys.push(("scope", json!(scope)));
        }
        if !self.tasks.is_empty() {
            keys.push(("tasks", json!(self.tasks)));
        }
        if !self.read.is_empty() {
            keys.push(("read", json!(self.read)));
        }
        if let Some(write) = &self.write {
            keys.push(("write", json!(write)));
        }
        if let Some(timeout) = &self.timeout {
            keys.push(("timeout", Value::Number(timeout.clone())));
        }
        keys
    }

    /// The `--env` variables, each given once.
    pub(crate) fn env(&self) -> Result<serde_json::Map<String, Value>, Failure> {
        let mut env = serde_json::Map::new();
        for (name, value) in &self.env {
            if env.insert(name.clone(), json!(value)).is_some() {
                return Err(Failure::Usage(format!("--env {name} is given twice")));
            }
        }
        Ok(env)
    }
}

// The names come from the core, so the flags cannot drift from what the
// registry accepts.
fn name_strings<T: Name>() -> PossibleValuesParser {
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

/// Which turn to act as.
#[derive(Debug, Args)]
pub(crate) struct ContextArgs {
    #[command(flatten)]
    pub(crate) registry: RegistryArgs,
    /// The turn's registered project (absent: an unregistered tree).
    #[arg(long, value_name = "NAME")]
    pub(crate) project: Option<String>,
    /// A family the project belongs to (repeatable).
    #[arg(long = "family", value_name = "NAME")]
    pub(crate) families: Vec<String>,
    /// The turn's working tree (default: the current folder).
    #[arg(long, value_name = "DIR")]
    pub(crate) tree: Option<PathBuf>,
    /// What the turn is doing.
    #[arg(long, default_value = "implementation", value_parser = names::<TurnKind>())]
    pub(crate) task: TurnKind,
    /// The runtime the turn runs on.
    #[arg(long, default_value = "current", value_parser = names::<Runtime>())]
    pub(crate) runtime: Runtime,
    /// Append the audit trail to FILE as JSON Lines, each record chained
    /// to the line before it (under the key in $SPEAR_AUDIT_KEY_FILE, when
    /// set); a new FILE is readable by its owner only. A pipe works too.
    /// `audit verify FILE` checks it.
    #[arg(long, value_name = "FILE")]
    pub(crate) audit: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) wait: WaitArgs,
}

// The names come from the core, so the CLI cannot drift from what SPEAR
// serialises.
fn names<T: Name>() -> impl TypedValueParser<Value = T> {
    // Only the names offered get through, so the fallback is never taken.
    PossibleValuesParser::new(T::ALL.iter().map(|v| v.as_str()))
        .map(|name| T::from_name(&name).unwrap_or(T::ALL[0]))
}

impl ContextArgs {
    /// The audit handle: the file given, chained under the key
    /// `$SPEAR_AUDIT_KEY_FILE` names, if any; else none.
    pub(crate) fn audit(&self) -> Result<Audit, Failure> {
        let Some(path) = &self.audit else {
            return Ok(Audit::null());
        };
        let mut options = JsonLinesOptions::new();
        if let Some(key) = std::env::var_os(crate::audit::AUDIT_KEY_FILE_VAR) {
            options = options.with_key_file(key);
        }
        JsonLinesSink::append_with(path, &options)
            .map(|s| Audit::new(Arc::new(s)))
            .map_err(|e| Failure::Usage(format!("cannot open audit file {}: {e}", path.display())))
    }

    /// The `--project` flag as clap defines it, with its value name
    /// (`--project NAME`), for a hint that cannot drift from the parser.
    pub(crate) fn project_flag() -> String {
        flag::<Self>("project")
    }

    /// The turn these flags describe.
    pub(crate) fn turn(&self) -> TurnContext {
        let tree = self
            .tree
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        let mut turn = TurnContext::new(tree, self.task)
            .with_families(self.families.iter().cloned())
            .with_runtime(self.runtime);
        if let Some(p) = &self.project {
            turn = turn.with_project(p.clone());
        }
        turn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_is_a_positive_number_of_seconds_up_to_a_day() {
        assert_eq!(wait_seconds("90"), Ok(Duration::from_secs(90)));
        assert_eq!(wait_seconds("0.5"), Ok(Duration::from_millis(500)));
        for bad in ["0", "-3", "nan", "inf", "86401", "soon", ""] {
            assert!(wait_seconds(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_project_flag_is_named_as_clap_defines_it() {
        assert_eq!(ContextArgs::project_flag(), "--project NAME");
        assert_eq!(
            WaitArgs::slow_start_hint(),
            "`--wait SECONDS` lets a slow start finish"
        );
    }
}
