//! The walks over a schema: one finds the schema nodes validation can reach
//! when every `$ref` is followed and the regular expressions it holds
//! (`Walk::reach`); a second, over the subschemas applied to the
//! arguments object itself, the argument names it declares (`declared`).
//! Both follow every keyword by what [`crate::keywords`] says it holds.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value};

use super::{Declared, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, Which};
use crate::framing::one_line;
use crate::keywords::{Holds, IN_PLACE, holds};

/// One walk over a schema: the nodes reachable, the patterns it holds.
pub(super) struct Walk<'a> {
    root: &'a Value,
    /// Which of its tool's schemas it is, for the reasons.
    which: Which,
    /// Reachable nodes below each node already counted, by address.
    counted: HashMap<*const Value, u64>,
    /// The nodes being counted, to cut cycles.
    open: HashSet<*const Value>,
    pub(super) patterns: BTreeSet<String>,
    anchors: Option<HashMap<&'a str, &'a Value>>,
}

impl<'a> Walk<'a> {
    pub(super) fn new(root: &'a Value, which: Which) -> Self {
        Self {
            root,
            which,
            counted: HashMap::new(),
            open: HashSet::new(),
            patterns: BTreeSet::new(),
            anchors: None,
        }
    }

    /// The nodes validation can reach from `node`, itself included.
    pub(super) fn reach(&mut self, node: &'a Value, depth: usize) -> Result<u64, String> {
        if depth > MAX_SCHEMA_DEPTH {
            return Err(format!(
                "the {} nests deeper than the budget of {MAX_SCHEMA_DEPTH} levels",
                self.which
            ));
        }
        let at: *const Value = node;
        if let Some(&n) = self.counted.get(&at) {
            return Ok(n);
        }
        let Value::Object(map) = node else {
            return Ok(1);
        };
        if !self.open.insert(at) {
            // A cycle: validation follows it only as deep as the arguments go.
            return Ok(1);
        }
        let mut n: u64 = 1;
        for (key, value) in map {
            match holds(key) {
                Holds::Reference => {
                    if let Value::String(reference) = value {
                        let target = self.resolve(reference)?;
                        n = n.saturating_add(self.reach(target, depth + 1)?);
                    }
                }
                Holds::Schemas => match value {
                    Value::Object(_) => n = n.saturating_add(self.reach(value, depth + 1)?),
                    Value::Array(items) => {
                        for item in items {
                            n = n.saturating_add(self.reach(item, depth + 1)?);
                        }
                    }
                    _ => {}
                },
                by_name @ (Holds::NamedSchemas | Holds::Definitions) => {
                    for (name, item) in value.as_object().into_iter().flatten() {
                        if key == "patternProperties" {
                            self.patterns.insert(name.clone());
                        }
                        if item.is_object() {
                            let below = self.reach(item, depth + 1)?;
                            if by_name == Holds::NamedSchemas {
                                n = n.saturating_add(below);
                            }
                        }
                    }
                }
                Holds::Nothing => {
                    if let ("pattern", Value::String(p)) = (key.as_str(), value) {
                        self.patterns.insert(p.clone());
                    }
                }
            }
            if n > MAX_SCHEMA_NODES {
                return Err(format!(
                    "the {} reaches more than the budget of {MAX_SCHEMA_NODES} schema nodes when its $refs are followed",
                    self.which
                ));
            }
        }
        self.open.remove(&at);
        self.counted.insert(at, n);
        Ok(n)
    }

    /// The subschema `reference` names within the schema.
    fn resolve(&mut self, reference: &str) -> Result<&'a Value, String> {
        let which = self.which;
        let outside = || {
            format!(
                "the {which} has a $ref outside itself or that does not resolve: {}",
                one_line(&format!("{reference:?}"), 120)
            )
        };
        let Some(fragment) = reference.strip_prefix('#') else {
            return Err(outside());
        };
        let fragment = percent_decode(fragment).ok_or_else(outside)?;
        if fragment.is_empty() {
            return Ok(self.root);
        }
        if fragment.starts_with('/') {
            return self.root.pointer(&fragment).ok_or_else(outside);
        }
        let root = self.root;
        let anchors = self.anchors.get_or_insert_with(|| {
            let mut found = HashMap::new();
            anchors(root, &mut found, 0);
            found
        });
        anchors.get(fragment.as_str()).copied().ok_or_else(outside)
    }
}

/// Every `$anchor` (and `$dynamicAnchor`) of `node`, by name.
fn anchors<'a>(node: &'a Value, found: &mut HashMap<&'a str, &'a Value>, depth: usize) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    match node {
        Value::Object(map) => {
            for key in ["$anchor", "$dynamicAnchor"] {
                if let Some(Value::String(name)) = map.get(key) {
                    found.entry(name.as_str()).or_insert(node);
                }
            }
            for value in map.values() {
                anchors(value, found, depth + 1);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| anchors(i, found, depth + 1)),
        _ => {}
    }
}

/// `%XX` escapes of a URI fragment decoded, or `None` when they are not
/// UTF-8 or malformed.
fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_owned());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The names `schema` declares: see [`Declared`].
pub(super) fn declared<'a>(schema: &'a Value, walk: &mut Walk<'a>) -> Result<Declared, String> {
    let mut out = Declared::default();
    let mut seen = HashSet::new();
    let mut todo: Vec<&'a Value> = vec![schema];
    while let Some(node) = todo.pop() {
        let Value::Object(map) = node else { continue };
        if !seen.insert(node as *const Value) {
            continue;
        }
        gather(map, &mut out);
        for (key, value) in map {
            match holds(key) {
                Holds::Reference => {
                    if let Value::String(reference) = value {
                        todo.push(walk.resolve(reference)?);
                    }
                }
                _ if !IN_PLACE.contains(&key.as_str()) => {}
                Holds::Schemas => match value {
                    Value::Array(items) => todo.extend(items),
                    one => todo.push(one),
                },
                _ => todo.extend(value.as_object().into_iter().flat_map(Map::values)),
            }
        }
    }
    Ok(out)
}

/// What one object schema declares directly.
fn gather(map: &Map<String, Value>, out: &mut Declared) {
    if let Some(Value::Object(p)) = map.get("properties") {
        out.names.extend(p.keys().cloned());
    }
    if let Some(Value::Object(p)) = map.get("patternProperties") {
        out.patterns.extend(p.keys().cloned());
    }
    for key in ["additionalProperties", "unevaluatedProperties"] {
        if map.get(key).is_some_and(|v| v != &Value::Bool(false)) {
            out.open = true;
        }
    }
}
