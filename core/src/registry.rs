//! The providers' registry: `capabilities.json`.
//!
//! The file lies beside `projects.json`, or is the one
//! [`CAPABILITIES_FILE_VAR`] names (the variable wins). It is the deployment's
//! own file: commands and server names in it are never shown to a turn.
//!
//! ```json
//! {"providers": [
//!   {"id": "tracker",
//!    "command": ["/opt/tracker-mcp/bin/tracker-mcp"],
//!    "scope": "corpus firmware-a",
//!    "tasks": ["implementation", "mixed"],
//!    "read": ["search_issues", "get_issue"],
//!    "write": "refuse",
//!    "timeout": 10}
//! ]}
//! ```
//!
//! The core checks the common keys; the rest go to the entry's kind
//! ([`crate::kind`]), which checks its own. An invalid entry is refused with
//! every problem it has while the valid ones register; both are audited.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::Error;
use crate::audit::{Audit, AuditEvent};
use crate::kind::{DEFAULT_KIND, KindSettings, find_kind};
use crate::names::{Name, named, quoted_names};
use crate::scope::Scope;

/// The environment variable naming the capabilities file.
pub const CAPABILITIES_FILE_VAR: &str = "SPEAR_CAPABILITIES_FILE";
/// The capabilities file's name beside `projects.json`.
pub const CAPABILITIES_FILE_NAME: &str = "capabilities.json";
/// How long one request may take when an entry has no `timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest `timeout` an entry may set, in seconds (one day).
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;
/// The longest provider id.
pub const MAX_ID_LEN: usize = 64;

/// The keys every entry may have, whatever its kind.
pub const COMMON_KEYS: &[&str] = &[
    "id", "kind", "scope", "tasks", "read", "write", "enabled", "timeout",
];

named! {
    /// A request class a provider can serve (the entry's `tasks`).
    #[derive(PartialOrd, Ord)]
    pub enum TaskClass {
        /// Implementation turns.
        Implementation = "implementation",
        /// The implementation pass of a MIXED change.
        Mixed = "mixed",
        /// General questions (READ capabilities only).
        General = "general",
    }
}

named! {
    /// What a provider's WRITE capabilities may do (the entry's `write`).
    #[derive(Default)]
    pub enum WritePolicy {
        /// Never run a WRITE (the default).
        #[default]
        Refuse = "refuse",
        /// Run a WRITE when the session's permission mode agrees.
        Confirm = "confirm",
        /// Run a WRITE unless the session is read-only.
        Allow = "allow",
    }
}

/// One accepted registry entry.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProviderEntry {
    /// The provider's id; its capabilities are `<id>/<tool>`.
    pub id: String,
    /// The kind that starts it.
    pub kind: String,
    /// Where it applies; `None` is nowhere.
    pub scope: Option<Scope>,
    /// The classes it serves.
    pub tasks: BTreeSet<TaskClass>,
    /// The tools that only read; every other tool is a WRITE.
    pub read: BTreeSet<String>,
    /// Its write policy.
    pub write: WritePolicy,
    /// `false` keeps the entry without using it.
    pub enabled: bool,
    /// How long one request may take.
    pub timeout: Duration,
    /// The kind-specific keys (e.g. `command`, `env`), accepted by the kind.
    pub settings: KindSettings,
}

/// One thing wrong with a registry entry: the key and what is wrong with it.
///
/// Messages say what was found and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryProblem {
    /// The key at fault, or empty for the entry as a whole.
    pub key: String,
    /// What is wrong, and what is allowed.
    pub message: String,
}

impl EntryProblem {
    /// A problem with `key`.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for EntryProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.key.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "key {:?}: {}", self.key, self.message)
        }
    }
}

/// One refused registry entry and everything wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RefusedEntry {
    /// Its position in `providers`, from 0.
    pub index: usize,
    /// Its id, when it has a string one.
    pub id: Option<String>,
    /// What is wrong, one item per key.
    pub problems: Vec<EntryProblem>,
}

impl RefusedEntry {
    /// How messages name the entry: `providers[2] ("tracker")`.
    pub fn label(&self) -> String {
        match &self.id {
            Some(id) => format!("providers[{}] ({id:?})", self.index),
            None => format!("providers[{}]", self.index),
        }
    }
}

impl std::fmt::Display for RefusedEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} refused:", self.label())?;
        for p in &self.problems {
            write!(f, " {p};")?;
        }
        Ok(())
    }
}

/// The loaded registry.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    file: Option<PathBuf>,
    missing: bool,
    base_dir: PathBuf,
    entries: Vec<ProviderEntry>,
    refused: Vec<RefusedEntry>,
}

/// Where the capabilities file is: `env_value` (the content of
/// [`CAPABILITIES_FILE_VAR`]) when set and not empty, else `capabilities.json`
/// beside `projects_json`.
pub fn locate(projects_json: &Path, env_value: Option<OsString>) -> PathBuf {
    match env_value {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => projects_json
            .parent()
            .unwrap_or(Path::new(""))
            .join(CAPABILITIES_FILE_NAME),
    }
}

impl Registry {
    /// Loads the file at `path` and audits every entry.
    ///
    /// A missing file is an empty registry that says so
    /// ([`Registry::notice`]), not an error.
    ///
    /// # Errors
    /// [`Error::RegistryRead`] when the file exists but cannot be read,
    /// [`Error::RegistrySyntax`] (with line and column) when it is not JSON,
    /// [`Error::RegistryShape`] when it is not `{"providers": [...]}`.
    pub fn load(path: &Path, audit: &Audit) -> Result<Registry, Error> {
        let base_dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        match std::fs::read(path) {
            Ok(bytes) => Self::parse(&bytes, path, audit),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Registry {
                file: Some(path.to_path_buf()),
                missing: true,
                base_dir,
                ..Registry::default()
            }),
            Err(source) => Err(Error::RegistryRead {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Parses `bytes` as the content of the capabilities file at `path`
    /// (used for messages and as the base of relative paths), and audits
    /// every entry.
    ///
    /// # Errors
    /// As [`Registry::load`], except that nothing is read.
    pub fn parse(bytes: &[u8], path: &Path, audit: &Audit) -> Result<Registry, Error> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| Error::RegistrySyntax {
            path: path.to_path_buf(),
            line: e.line(),
            // serde_json says column 0 when the fault is before the first
            // character of a line (an empty file, a cut-off last line);
            // ours are 1-based, as editors count.
            column: e.column().max(1),
            message: strip_position(&e.to_string()),
        })?;
        let shape = |message: &str| Error::RegistryShape {
            path: path.to_path_buf(),
            message: message.to_owned(),
        };
        let Value::Object(top) = value else {
            return Err(shape(r#"expected an object {"providers": [...]}"#));
        };
        if let Some(key) = top.keys().find(|k| *k != "providers") {
            return Err(shape(&format!(
                "unknown top-level key {key:?}; allowed: \"providers\""
            )));
        }
        let Some(Value::Array(items)) = top.get("providers") else {
            return Err(shape(r#"expected "providers" to be an array of entries"#));
        };
        let base_dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let mut registry = Registry {
            file: Some(path.to_path_buf()),
            missing: false,
            base_dir,
            entries: Vec::new(),
            refused: Vec::new(),
        };
        let mut claimed: Vec<(String, usize)> = Vec::new();
        for (index, item) in items.iter().enumerate() {
            match parse_entry(index, item, &registry.base_dir, &mut claimed) {
                Ok(entry) => registry.entries.push(entry),
                Err(refused) => registry.refused.push(refused),
            }
        }
        registry.audit(audit);
        Ok(registry)
    }

    fn audit(&self, audit: &Audit) {
        let file = self.file.as_ref().map(|p| p.display().to_string());
        for e in &self.entries {
            audit.emit(AuditEvent::ProviderRegistered {
                file: file.clone(),
                provider: e.id.clone(),
                kind: e.kind.clone(),
                scope: e.scope.as_ref().map(ToString::to_string),
                tasks: e.tasks.iter().copied().collect(),
                read: e.read.iter().cloned().collect(),
                write: e.write,
                enabled: e.enabled,
                timeout_secs: e.timeout.as_secs_f64(),
            });
        }
        for r in &self.refused {
            audit.emit(AuditEvent::ProviderRefused {
                file: file.clone(),
                entry: r.label(),
                problems: r.problems.iter().map(ToString::to_string).collect(),
            });
        }
    }

    /// The accepted entries, in file order.
    pub fn entries(&self) -> &[ProviderEntry] {
        &self.entries
    }

    /// The accepted entry with this id.
    pub fn entry(&self, id: &str) -> Option<&ProviderEntry> {
        self.entries.iter().find(|e| e.id == id)
    }

    /// The refused entries, in file order.
    pub fn refused(&self) -> &[RefusedEntry] {
        &self.refused
    }

    /// The file it was read from, if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// The folder relative paths in the registry are resolved against.
    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }

    /// A line for the operator when the registry is empty because its file
    /// does not exist.
    pub fn notice(&self) -> Option<String> {
        match (&self.file, self.missing) {
            (Some(f), true) => Some(format!(
                "no capabilities file at {}: no providers are registered",
                f.display()
            )),
            _ => None,
        }
    }
}

/// serde_json appends " at line L column C"; we report those separately.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

fn parse_entry(
    index: usize,
    item: &Value,
    base_dir: &Path,
    claimed: &mut Vec<(String, usize)>,
) -> Result<ProviderEntry, RefusedEntry> {
    let mut problems = Vec::new();
    let Value::Object(map) = item else {
        return Err(RefusedEntry {
            index,
            id: None,
            problems: vec![EntryProblem::new("", "an entry must be a JSON object")],
        });
    };
    let id = map.get("id").and_then(Value::as_str).map(str::to_owned);
    match map.get("id") {
        None => problems.push(EntryProblem::new("id", "missing; every entry needs an id")),
        Some(Value::String(s)) => {
            if let Some(msg) = id_problem(s) {
                problems.push(EntryProblem::new("id", msg));
            } else if let Some((_, first)) = claimed.iter().find(|(c, _)| c == s) {
                problems.push(EntryProblem::new(
                    "id",
                    format!("{s:?} is already used by providers[{first}]; ids must be unique"),
                ));
            }
            claimed.push((s.clone(), index));
        }
        Some(other) => problems.push(EntryProblem::new(
            "id",
            format!("must be a string, found {}", type_name(other)),
        )),
    }

    let kind_name = match map.get("kind") {
        None => Some(DEFAULT_KIND.to_owned()),
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            problems.push(EntryProblem::new(
                "kind",
                format!("must be a string, found {}", type_name(other)),
            ));
            None
        }
    };
    let kind = kind_name.as_deref().and_then(|name| match find_kind(name) {
        Ok(kind) => Some(kind),
        Err(e) => {
            problems.push(EntryProblem::new("kind", e.to_string()));
            None
        }
    });

    let scope = match map.get("scope") {
        None => None,
        Some(Value::String(s)) => match Scope::parse(s, base_dir) {
            Ok(scope) => Some(scope),
            Err(e) => {
                problems.push(EntryProblem::new("scope", format!("{s:?}: {e}")));
                None
            }
        },
        Some(other) => {
            problems.push(EntryProblem::new(
                "scope",
                format!("must be a string, found {}", type_name(other)),
            ));
            None
        }
    };

    let tasks = match map.get("tasks") {
        None => BTreeSet::from([TaskClass::Implementation, TaskClass::Mixed]),
        Some(v) => parse_tasks(v).unwrap_or_else(|msg| {
            problems.push(EntryProblem::new("tasks", msg));
            BTreeSet::new()
        }),
    };

    let read = match map.get("read") {
        None => BTreeSet::new(),
        Some(v) => parse_read(v).unwrap_or_else(|msg| {
            problems.push(EntryProblem::new("read", msg));
            BTreeSet::new()
        }),
    };

    let write = match map.get("write") {
        None => WritePolicy::default(),
        Some(Value::String(s)) => WritePolicy::from_name(s).unwrap_or_else(|| {
            problems.push(EntryProblem::new(
                "write",
                format!(
                    "{s:?} is not a write policy; allowed: {}",
                    quoted_names::<WritePolicy>()
                ),
            ));
            WritePolicy::default()
        }),
        Some(other) => {
            problems.push(EntryProblem::new(
                "write",
                format!(
                    "must be one of {}, found {}",
                    quoted_names::<WritePolicy>(),
                    type_name(other)
                ),
            ));
            WritePolicy::default()
        }
    };

    let enabled = match map.get("enabled") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            problems.push(EntryProblem::new(
                "enabled",
                format!("must be true or false, found {}", type_name(other)),
            ));
            true
        }
    };

    let timeout = match map.get("timeout") {
        None => DEFAULT_TIMEOUT,
        Some(v) => parse_timeout(v).unwrap_or_else(|msg| {
            problems.push(EntryProblem::new("timeout", msg));
            DEFAULT_TIMEOUT
        }),
    };

    let mut settings = Map::new();
    for (key, value) in map {
        if COMMON_KEYS.contains(&key.as_str()) {
            continue;
        }
        match kind {
            Some(k) if k.keys.contains(&key.as_str()) => {
                settings.insert(key.clone(), value.clone());
            }
            Some(k) => problems.push(EntryProblem::new(
                key,
                format!(
                    "unknown key; allowed for kind {:?}: {}",
                    k.name,
                    COMMON_KEYS
                        .iter()
                        .chain(k.keys)
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
            // With no usable kind we cannot tell its keys from typos; the
            // kind problem above already refuses the entry.
            None => {}
        }
    }
    if let Some(k) = kind {
        problems.extend((k.validate)(&settings));
    }

    if !problems.is_empty() {
        return Err(RefusedEntry {
            index,
            id,
            problems,
        });
    }
    Ok(ProviderEntry {
        id: id.unwrap_or_default(),
        kind: kind.map(|k| k.name.to_owned()).unwrap_or_default(),
        scope,
        tasks,
        read,
        write,
        enabled,
        timeout,
        settings,
    })
}

fn id_problem(id: &str) -> Option<String> {
    let mut chars = id.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest_ok =
        chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if !first_ok || !rest_ok {
        Some(format!(
            "{id:?} is not a lower-case name; allowed: a letter a-z, then a-z, 0-9, '_' or '-'"
        ))
    } else if id.len() > MAX_ID_LEN {
        Some(format!("{id:?} is longer than {MAX_ID_LEN} characters"))
    } else {
        None
    }
}

fn parse_tasks(v: &Value) -> Result<BTreeSet<TaskClass>, String> {
    let allowed = format!("allowed: {}", quoted_names::<TaskClass>());
    let Value::Array(items) = v else {
        return Err(format!(
            "must be a list of task classes, found {}; {allowed}",
            type_name(v)
        ));
    };
    if items.is_empty() {
        return Err(format!("must list at least one task class; {allowed}"));
    }
    let mut out = BTreeSet::new();
    for item in items {
        let class = item
            .as_str()
            .and_then(TaskClass::from_name)
            .ok_or_else(|| format!("{item} is not a task class; {allowed}"))?;
        if !out.insert(class) {
            return Err(format!("lists {item} twice"));
        }
    }
    Ok(out)
}

fn parse_read(v: &Value) -> Result<BTreeSet<String>, String> {
    let Value::Array(items) = v else {
        return Err(format!(
            "must be a list of tool names, found {}",
            type_name(v)
        ));
    };
    let mut out = BTreeSet::new();
    for item in items {
        match item.as_str() {
            Some("") => return Err("has an empty tool name".to_owned()),
            Some(s) => {
                if !out.insert(s.to_owned()) {
                    return Err(format!("lists {s:?} twice"));
                }
            }
            None => {
                return Err(format!(
                    "must be a list of tool names (strings), found {}",
                    type_name(item)
                ));
            }
        }
    }
    Ok(out)
}

fn parse_timeout(v: &Value) -> Result<Duration, String> {
    let secs = v.as_f64().ok_or_else(|| {
        format!(
            "must be a positive number of seconds, found {}",
            type_name(v)
        )
    })?;
    if !(secs > 0.0 && secs <= MAX_TIMEOUT_SECS) {
        return Err(format!(
            "{v} is out of range; allowed: more than 0 and at most {MAX_TIMEOUT_SECS} seconds"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The JSON type of `v`, for messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
