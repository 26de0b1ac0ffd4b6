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

use super::document::Node;
use super::problem::{EntryProblem, EntryProblemKind, RefusedEntry, closest};
use super::{COMMON_KEYS, DEFAULT_TIMEOUT, MAX_ID_LEN, MAX_TIMEOUT_SECS};
use crate::kind::{DEFAULT_KIND, Fields, KindSettings, Kinds, type_name};
use crate::names::{Name, quoted_names};
use crate::scope::Scope;
use crate::vocabulary::{RequestClass, WritePolicy};

/// One accepted registry entry.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ProviderEntry {
    /// Its position in `providers`, from 0.
    pub index: usize,
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

/// Reads entry `index` of `providers`, `node` as the file has it;
/// `claimed` holds the ids of the entries before it, for the uniqueness
/// check. A refused entry's problems are placed and in file order.
pub(super) fn parse_entry(
    index: usize,
    node: &Node,
    base_dir: &Path,
    kinds: &Kinds,
    claimed: &mut Vec<(String, usize)>,
) -> Result<ProviderEntry, RefusedEntry> {
    let Value::Object(map) = &node.value else {
        return Err(RefusedEntry {
            index,
            id: None,
            problems: vec![
                EntryProblem::new("", "an entry must be a JSON object")
                    .with_kind(EntryProblemKind::NotAnObject)
                    .at(node.at),
            ],
            position: Some(node.at),
        });
    };
    // An id given twice is no id: neither copy names the entry.
    let id_repeated = node
        .repeats
        .iter()
        .any(|r| r.key == "id" && r.inner.is_none());
    let mut fields = Fields::new(map);
    let id = fields.required("id", "a string", "every entry needs an id", Value::as_str);
    if let Some(id) = id.filter(|_| !id_repeated) {
        if let Some(msg) = id_problem(id) {
            fields.problem("id", msg);
        } else if let Some((_, first)) = claimed.iter().find(|(c, _)| c == id) {
            fields.push(
                EntryProblem::new(
                    "id",
                    format!("{id:?} is already used by providers[{first}]; ids must be unique"),
                )
                .with_kind(EntryProblemKind::DuplicateId),
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
            fields.push(
                EntryProblem::new("kind", e.to_string()).with_kind(EntryProblemKind::UnknownKind),
            );
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
        Some(v) => parse_tasks(v).unwrap_or_else(|problem| {
            fields.push(problem);
            BTreeSet::new()
        }),
    };
    let read = fields
        .get("read", "a list of tool names", Value::as_array)
        .map_or_else(BTreeSet::new, |items| {
            parse_read(items).unwrap_or_else(|problem| {
                fields.push(problem);
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
            Some(k) => fields.push(unknown_key(key, k.name, k.keys)),
            // With no usable kind we cannot tell its keys from typos; the
            // kind problem above already refuses the entry.
            None => {}
        }
    }
    let mut problems = fields.into_problems();
    if let Some(k) = kind {
        problems.extend((k.validate)(&settings));
    }
    problems.extend(node.repeats.iter().map(|r| {
        EntryProblem::new(r.key.clone(), r.message())
            .with_kind(EntryProblemKind::DuplicateKey)
            .at(r.at)
    }));
    match (id, kind) {
        (Some(id), Some(kind)) if problems.is_empty() => Ok(ProviderEntry {
            index,
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
        _ => {
            for problem in &mut problems {
                problem.position = problem.position.or(Some(node.place_of(&problem.key)));
            }
            // In file order; at one place, in the order found.
            problems.sort_by_key(|p| p.position);
            Err(RefusedEntry {
                index,
                id: map
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|_| !id_repeated)
                    .map(str::to_owned),
                problems,
                position: Some(node.at),
            })
        }
    }
}

/// The problem of a key that neither the core nor the kind `kind` (with
/// its own `keys`) knows: a close one named, else every one listed.
fn unknown_key(key: &str, kind: &str, keys: &[&str]) -> EntryProblem {
    let known = COMMON_KEYS.iter().chain(keys).copied();
    let message = match closest(key, known.clone()) {
        Some(near) => format!("unknown key; did you mean {near:?}?"),
        None => format!(
            "unknown key; allowed for kind {kind:?}: {}",
            known.collect::<Vec<_>>().join(", ")
        ),
    };
    EntryProblem::new(key, message).with_kind(EntryProblemKind::UnknownKey)
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

fn parse_tasks(v: &Value) -> Result<BTreeSet<RequestClass>, EntryProblem> {
    let allowed = format!("allowed: {}", quoted_names::<RequestClass>());
    let bad = |message: String| EntryProblem::new("tasks", message);
    let Value::Array(items) = v else {
        return Err(bad(format!(
            "must be a list of task classes, found {}; {allowed}",
            type_name(v)
        ))
        .with_kind(EntryProblemKind::WrongType));
    };
    if items.is_empty() {
        return Err(bad(format!("must list at least one task class; {allowed}")));
    }
    let mut out = BTreeSet::new();
    for item in items {
        let class = item
            .as_str()
            .and_then(RequestClass::from_name)
            .ok_or_else(|| bad(format!("{item} is not a task class; {allowed}")))?;
        if !out.insert(class) {
            return Err(bad(format!("lists {item} twice")));
        }
    }
    Ok(out)
}

fn parse_read(items: &[Value]) -> Result<BTreeSet<String>, EntryProblem> {
    let bad = |message: String| EntryProblem::new("read", message);
    let mut out = BTreeSet::new();
    for item in items {
        match item.as_str() {
            Some("") => return Err(bad("has an empty tool name".to_owned())),
            Some(s) => {
                if !out.insert(s.to_owned()) {
                    return Err(bad(format!("lists {s:?} twice")));
                }
            }
            None => {
                return Err(bad(format!(
                    "must be a list of tool names (strings), found {}",
                    type_name(item)
                ))
                .with_kind(EntryProblemKind::WrongType));
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
