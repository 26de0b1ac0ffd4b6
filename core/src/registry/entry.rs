//! One entry of `capabilities.json`: its common keys, checked.
//!
//! Each key is read with [`Fields`], so every problem of an entry is found
//! at once; the keys the core does not own go to the entry's kind, which
//! checks them with its own `validate`. An entry with any problem is
//! refused with all of them.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};

use super::fields::{Fields, type_name};
use super::position::Position;
use super::{COMMON_KEYS, DEFAULT_TIMEOUT, MAX_ID_LEN, MAX_TIMEOUT_SECS};
use crate::kind::{DEFAULT_KIND, KindSettings, Kinds};
use crate::names::{Name, named, quoted_names};
use crate::scope::Scope;

named! {
    /// A request class a provider can serve (the entry's `tasks`).
    #[derive(PartialOrd, Ord)]
    #[non_exhaustive]
    pub enum RequestClass {
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
    #[non_exhaustive]
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
    pub tasks: BTreeSet<RequestClass>,
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

/// One thing wrong with a registry entry: the key, where it is, and what is
/// wrong with it.
///
/// Messages say what was found and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EntryProblem {
    /// The key at fault, or empty for the entry as a whole.
    pub key: String,
    /// What is wrong, and what is allowed.
    pub message: String,
    /// Where the key is in the file (the entry's own place for the entry as
    /// a whole or a key it lacks); `None` until the registry places it (a
    /// kind's `validate` makes its problems without).
    pub position: Option<Position>,
}

impl EntryProblem {
    /// A problem with `key`, not placed yet.
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            key: key.into(),
            message: message.into(),
            position: None,
        }
    }
}

impl std::error::Error for EntryProblem {}

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
    /// Where the entry begins in the file (its `{`).
    pub position: Option<Position>,
}

impl std::error::Error for RefusedEntry {}

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

/// Reads entry `index` of `providers`; `claimed` holds the ids of the
/// entries before it, for the uniqueness check.
pub(super) fn parse_entry(
    index: usize,
    item: &Value,
    base_dir: &Path,
    kinds: &Kinds,
    claimed: &mut Vec<(String, usize)>,
) -> Result<ProviderEntry, RefusedEntry> {
    let Value::Object(map) = item else {
        return Err(RefusedEntry {
            index,
            id: None,
            problems: vec![EntryProblem::new("", "an entry must be a JSON object")],
            position: None,
        });
    };
    let mut fields = Fields::new(map);
    let id = fields.required("id", "a string", "every entry needs an id", Value::as_str);
    if let Some(id) = id {
        if let Some(msg) = id_problem(id) {
            fields.problem("id", msg);
        } else if let Some((_, first)) = claimed.iter().find(|(c, _)| c == id) {
            fields.problem(
                "id",
                format!("{id:?} is already used by providers[{first}]; ids must be unique"),
            );
        }
        claimed.push((id.to_owned(), index));
    }
    let kind = match fields.raw("kind") {
        None => Some(DEFAULT_KIND),
        Some(_) => fields.string("kind"),
    }
    .and_then(|name| match kinds.find(name) {
        Ok(kind) => Some(kind),
        Err(e) => {
            fields.problem("kind", e.to_string());
            None
        }
    });
    let scope = fields
        .string("scope")
        .and_then(|s| match Scope::parse(s, base_dir) {
            Ok(scope) => Some(scope),
            Err(e) => {
                fields.problem("scope", format!("{s:?}: {e}"));
                None
            }
        });
    let tasks = match fields.raw("tasks") {
        None => BTreeSet::from([RequestClass::Implementation, RequestClass::Mixed]),
        Some(v) => parse_tasks(v).unwrap_or_else(|msg| {
            fields.problem("tasks", msg);
            BTreeSet::new()
        }),
    };
    let read = fields
        .get("read", "a list of tool names", Value::as_array)
        .map_or_else(BTreeSet::new, |items| {
            parse_read(items).unwrap_or_else(|msg| {
                fields.problem("read", msg);
                BTreeSet::new()
            })
        });
    let write = fields
        .name::<WritePolicy>("write", "a write policy")
        .unwrap_or_default();
    let enabled = fields
        .get("enabled", "true or false", Value::as_bool)
        .unwrap_or(true);
    let timeout = fields
        .get("timeout", "a positive number of seconds", |v| {
            Some((v, v.as_f64()?))
        })
        .map_or(DEFAULT_TIMEOUT, |(raw, secs)| {
            timeout(raw, secs).unwrap_or_else(|msg| {
                fields.problem("timeout", msg);
                DEFAULT_TIMEOUT
            })
        });
    let mut settings = Map::new();
    for (key, value) in map {
        if COMMON_KEYS.contains(&key.as_str()) {
            continue;
        }
        match kind {
            Some(k) if k.keys.contains(&key.as_str()) => {
                settings.insert(key.clone(), value.clone());
            }
            Some(k) => fields.problem(
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
            ),
            // With no usable kind we cannot tell its keys from typos; the
            // kind problem above already refuses the entry.
            None => {}
        }
    }
    let mut problems = fields.into_problems();
    if let Some(k) = kind {
        problems.extend((k.validate)(&settings));
    }
    match (id, kind) {
        (Some(id), Some(kind)) if problems.is_empty() => Ok(ProviderEntry {
            id: id.to_owned(),
            kind: kind.name.to_owned(),
            scope,
            tasks,
            read,
            write,
            enabled,
            timeout,
            settings,
        }),
        _ => Err(RefusedEntry {
            index,
            id: map.get("id").and_then(Value::as_str).map(str::to_owned),
            problems,
            position: None,
        }),
    }
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

fn parse_tasks(v: &Value) -> Result<BTreeSet<RequestClass>, String> {
    let allowed = format!("allowed: {}", quoted_names::<RequestClass>());
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
            .and_then(RequestClass::from_name)
            .ok_or_else(|| format!("{item} is not a task class; {allowed}"))?;
        if !out.insert(class) {
            return Err(format!("lists {item} twice"));
        }
    }
    Ok(out)
}

fn parse_read(items: &[Value]) -> Result<BTreeSet<String>, String> {
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

/// `secs` (written `raw`) as a timeout, if it is in range.
fn timeout(raw: &Value, secs: f64) -> Result<Duration, String> {
    if !(secs > 0.0 && secs <= MAX_TIMEOUT_SECS) {
        return Err(format!(
            "{raw} is out of range; allowed: more than 0 and at most {MAX_TIMEOUT_SECS} seconds"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}
