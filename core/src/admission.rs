//! Which of the tools a provider offers become capabilities.
//!
//! A kind reports what its server offered ([`ToolList`]); the gateway alone
//! decides what is usable, the same way for every kind. A tool is admitted
//! when its name can be part of a capability id (1 to
//! [`MAX_TOOL_NAME`] characters of `A-Z a-z 0-9 _ . -`), no other tool of
//! the provider has the same name, and its input schema passes vetting
//! ([`crate::vetting`]: an object schema, local `$ref`s only, within the
//! budgets); its full compile waits for the first call ([`ToolSchema`]). Every other tool is left out with its
//! reason, for the audit trail; the provider's other tools stay.
//!
//! It is not where a tool's class is decided beyond the entry's `read`
//! list, nor where anything is shown: [`crate::exposure`] does that.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::checks::{OutputSchema, ToolSchema};
use crate::exposure::{CapabilityClass, ShownCapability};
use crate::framing::FrameHead;
use crate::provider::{RejectedTool, ToolList};
use crate::registry::ProviderEntry;
use crate::vetting::ListingBudget;

/// The longest tool name, in characters.
pub(crate) const MAX_TOOL_NAME: usize = 128;

/// A tool admitted as the capability `<provider>/<tool>`.
#[derive(Debug)]
pub(crate) struct Tool {
    /// Its name within its provider.
    pub(crate) name: String,
    /// What a turn is shown of it.
    pub(crate) shown: ShownCapability,
    /// Its argument schema, shared by the tools that have the same.
    pub(crate) schema: Arc<ToolSchema>,
    /// The start of every frame of its results.
    pub(crate) frame: FrameHead,
    /// The schema its structured results are checked against, if it
    /// declares one that vetting found usable.
    pub(crate) output: Option<Arc<OutputSchema>>,
}

/// What the gateway made of one provider's offer: what a session's turns
/// are offered of it, and what is recorded when it starts.
#[derive(Debug, Default)]
pub struct Admission {
    /// The usable tools, in the provider's order.
    pub(crate) tools: Vec<Tool>,
    /// The tools left out and why: first those the kind could not read at
    /// all, then the others in the provider's order.
    pub rejected: Vec<RejectedTool>,
    /// Tools whose output schema cannot be used, and why: they stay, and
    /// their results are not checked.
    pub unchecked_outputs: Vec<(String, String)>,
    /// Names the entry's `read` list gives that the provider does not offer
    /// at all (a misspelling leaves the tool it meant a WRITE), in order.
    pub read_not_offered: Vec<String>,
}

impl Admission {
    /// Each usable tool's name and what a turn is shown of it, in the
    /// provider's order.
    pub fn admitted(&self) -> impl Iterator<Item = (&str, &ShownCapability)> {
        self.tools.iter().map(|t| (t.name.as_str(), &t.shown))
    }
}

/// The class of `entry`'s tool `name`: READ only when the entry's `read`
/// lists it, whatever the server says.
pub fn class_of(entry: &ProviderEntry, name: &str) -> CapabilityClass {
    if entry.read.contains(name) {
        CapabilityClass::Read
    } else {
        CapabilityClass::Write
    }
}

/// Why a tool name cannot be part of a capability id, if it cannot: it must
/// be 1 to [`MAX_TOOL_NAME`] characters of `A-Z a-z 0-9 _ . -`, so that
/// `<provider>/<tool>` is one plain word a turn can type.
pub(crate) fn tool_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("the name is empty".to_owned())
    } else if name.chars().count() > MAX_TOOL_NAME {
        Some(format!(
            "the name is longer than {MAX_TOOL_NAME} characters"
        ))
    } else {
        name.chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
            .map(|c| format!("the name has {c:?}; allowed: A-Z, a-z, 0-9, '_', '.', '-'"))
    }
}

/// Admits the usable tools of `offered`, the tool list of `entry`'s
/// provider. Every copy of a duplicated name is left out: a call by that
/// name could reach either, so no single schema can be checked for it.
/// Blocking, bounded by the listing's budgets (vetting compiles its
/// patterns): the gateway runs it off the runtime's I/O threads.
pub fn admit(entry: &ProviderEntry, offered: ToolList) -> Admission {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for spec in &offered.tools {
        *counts.entry(spec.name.as_str()).or_default() += 1;
    }
    let duplicated: HashMap<String, usize> = counts
        .into_iter()
        .filter(|&(_, n)| n > 1)
        .map(|(name, n)| (name.to_owned(), n))
        .collect();
    let read_not_offered = entry
        .read
        .iter()
        .filter(|name| !offered.tools.iter().any(|spec| &spec.name == *name))
        .cloned()
        .collect();
    let mut admission = Admission {
        tools: Vec::new(),
        rejected: offered.rejected,
        unchecked_outputs: Vec::new(),
        read_not_offered,
    };
    let mut schemas = Schemas::default();
    for spec in offered.tools {
        let problem = tool_name_problem(&spec.name).or_else(|| {
            duplicated
                .get(&spec.name)
                .map(|n| format!("the provider offers {n} tools of this name"))
        });
        let schema = match problem {
            Some(problem) => Err(problem),
            None => schemas.compile(&spec.input_schema),
        };
        let schema = match schema {
            Ok(schema) => schema,
            Err(reason) => {
                let name: String = spec.name.chars().take(MAX_TOOL_NAME).collect();
                admission.rejected.push(RejectedTool::new(name, reason));
                continue;
            }
        };
        let mut shown = ShownCapability::new(
            format!("{}/{}", entry.id, spec.name),
            class_of(entry, &spec.name),
            spec.title.as_deref(),
            spec.description.as_deref(),
            &spec.input_schema,
        );
        let output = match (&spec.output_schema, &spec.unreadable_output_schema) {
            (Some(declared), _) => (schemas.budget.vet_output(declared))
                .map(|_| declared)
                .map_err(Some),
            (None, Some(unreadable)) => Err(Some(unreadable.clone())),
            (None, None) => Err(None),
        };
        let output = match output {
            Ok(declared) => {
                shown = shown.with_output_schema(declared);
                Some(Arc::new(OutputSchema::new(declared.clone())))
            }
            Err(Some(reason)) => {
                let reason = format!(
                    "its output schema cannot be used ({reason}); its results are not checked"
                );
                admission
                    .unchecked_outputs
                    .push((spec.name.clone(), reason));
                None
            }
            Err(None) => None,
        };
        admission.tools.push(Tool {
            frame: FrameHead::new(&entry.id, &shown.id),
            name: spec.name,
            shown,
            schema,
            output,
        });
    }
    admission
}

/// The vetted schemas of one listing, by content, and the listing's budget.
///
/// Servers repeat schemas (every tool without arguments has the same one),
/// and a schema's verdict does not depend on the tool it is on: each
/// distinct schema is vetted once, and compiled at most once, shared. The
/// map hashes with the std random state, so a server cannot choose schemas
/// that collide.
#[derive(Default)]
struct Schemas {
    seen: HashMap<Value, Verdict>,
    budget: ListingBudget,
}

/// A usable schema, or why it cannot be used.
type Verdict = Result<Arc<ToolSchema>, String>;

impl Schemas {
    fn compile(&mut self, schema: &Value) -> Verdict {
        if let Some(verdict) = self.seen.get(schema) {
            return verdict.clone();
        }
        let verdict = (self.budget.vet(schema))
            .map(|vetted| Arc::new(ToolSchema::new(schema.clone(), vetted)));
        self.seen.insert(schema.clone(), verdict.clone());
        verdict
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolSpec;
    use serde_json::json;

    fn entry() -> ProviderEntry {
        ProviderEntry {
            index: 0,
            id: "p".into(),
            kind: "test".into(),
            scope: None,
            tasks: Default::default(),
            read: ["ok".to_owned()].into(),
            write: Default::default(),
            enabled: true,
            timeout: std::time::Duration::from_secs(1),
            settings: Default::default(),
        }
    }

    fn reasons(a: &Admission) -> Vec<(String, String)> {
        a.rejected
            .iter()
            .map(|r| (r.name.clone(), r.reason.clone()))
            .collect()
    }

    #[test]
    fn tool_names_are_plain_words() {
        assert_eq!(tool_name_problem("get_issue.v2-x"), None);
        assert!(tool_name_problem("").is_some());
        assert!(tool_name_problem("a b").is_some());
        assert!(tool_name_problem("a/b").is_some());
        assert!(tool_name_problem("é").is_some());
        assert!(tool_name_problem(&"x".repeat(129)).is_some());
        assert_eq!(tool_name_problem(&"x".repeat(128)), None);
    }

    #[test]
    fn bad_tools_are_left_out_with_a_reason_and_the_rest_kept() {
        let obj = json!({"type": "object"});
        let offered = ToolList::new(vec![
            ToolSpec::new("ok", obj.clone()).with_description("d"),
            ToolSpec::new("bad name", obj.clone()),
            ToolSpec::new("twice", obj.clone()),
            ToolSpec::new("twice", obj.clone()),
            ToolSpec::new("noschema", Value::Null),
            ToolSpec::new("array", json!({"type": "array"})),
            ToolSpec::new(
                "broken",
                json!({"type": "object", "properties": {"a": {"type": 5}}}),
            ),
            ToolSpec::new("ok2", obj).with_title("T"),
        ])
        .with_rejected(vec![RejectedTool::new("", "the tool has no name")]);
        let a = admit(&entry(), offered);
        let kept: Vec<_> = a.tools.iter().map(|t| t.shown.id.as_str()).collect();
        assert_eq!(kept, ["p/ok", "p/ok2"]);
        assert_eq!(a.tools[0].shown.class, CapabilityClass::Read);
        assert_eq!(a.tools[1].shown.class, CapabilityClass::Write);
        let r = reasons(&a);
        assert_eq!(r.len(), 7, "{r:?}");
        assert_eq!(r[0].1, "the tool has no name");
        assert!(r[1].0 == "bad name" && r[1].1.starts_with("the name has ' '"));
        assert_eq!(r[2].1, "the provider offers 2 tools of this name");
        assert_eq!(r[3], r[2]);
        assert_eq!(r[4].1, "the input schema is not a JSON object");
        assert_eq!(r[5].1, "the input schema is not of type \"object\"");
        assert!(
            r[6].1
                .starts_with("the input schema is not a valid JSON Schema")
        );
    }

    #[test]
    fn a_schema_shared_by_tools_is_compiled_once_and_gets_one_verdict() {
        let broken = json!({"type": "object", "properties": {"a": {"type": 5}}});
        let good = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        // The same schema with its keys in another order.
        let reordered: Value =
            serde_json::from_str(r#"{"properties": {"a": {"type": "string"}}, "type": "object"}"#)
                .expect("json");
        let a = admit(
            &entry(),
            ToolList::new(vec![
                ToolSpec::new("b1", broken.clone()),
                ToolSpec::new("g1", good),
                ToolSpec::new("b2", broken),
                ToolSpec::new("g2", reordered),
            ]),
        );
        let kept: Vec<_> = a.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(kept, ["g1", "g2"]);
        assert!(Arc::ptr_eq(&a.tools[0].schema, &a.tools[1].schema));
        let r = reasons(&a);
        assert_eq!((r[0].0.as_str(), r[1].0.as_str()), ("b1", "b2"));
        assert_eq!(r[0].1, r[1].1);
    }

    #[test]
    fn an_output_schema_that_cannot_be_used_or_read_leaves_the_tool_unchecked() {
        let mut deep = json!({"type": "string"});
        for _ in 0..200 {
            deep = json!({"type": "object", "properties": {"a": deep}});
        }
        let obj = json!({"type": "object"});
        let a = admit(
            &entry(),
            ToolList::new(vec![
                ToolSpec::new("deep", obj.clone()).with_output_schema(deep),
                ToolSpec::new("unread", obj.clone())
                    .with_unreadable_output_schema("recursion limit exceeded"),
                ToolSpec::new("plain", obj),
            ]),
        );
        let kept: Vec<_> = a.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(kept, ["deep", "unread", "plain"]);
        assert!(a.tools.iter().all(|t| t.output.is_none()));
        assert_eq!(a.unchecked_outputs.len(), 2, "{:?}", a.unchecked_outputs);
        assert!(
            a.unchecked_outputs[0]
                .1
                .contains("nests deeper than the budget of 128 levels")
        );
        assert_eq!(
            a.unchecked_outputs[1],
            (
                "unread".to_owned(),
                "its output schema cannot be used (recursion limit exceeded); its results are not checked".to_owned()
            )
        );
    }

    #[test]
    fn an_output_schema_is_named_as_the_output_schema_in_its_reason() {
        let remote = json!({"type": "object", "$ref": "https://example.invalid/s"});
        let bad_pattern = json!({"type": "object", "properties": {"a": {"pattern": "(("}}});
        let a = admit(
            &entry(),
            ToolList::new(vec![
                ToolSpec::new("remote", json!({"type": "object"})).with_output_schema(remote),
                ToolSpec::new("in", bad_pattern.clone()),
                ToolSpec::new("out", json!({"type": "object"})).with_output_schema(bad_pattern),
            ]),
        );
        assert_eq!(
            a.unchecked_outputs[0],
            (
                "remote".to_owned(),
                "its output schema cannot be used (the output schema has a $ref outside itself or that does not resolve: \"https://example.invalid/s\"); its results are not checked".to_owned()
            )
        );
        // One pattern, judged once for the listing, said of each schema.
        assert!(
            reasons(&a)[0]
                .1
                .starts_with("the input schema's pattern \"((\""),
            "{:?}",
            a.rejected
        );
        let (tool, reason) = &a.unchecked_outputs[1];
        assert_eq!(tool, "out");
        assert!(
            reason.starts_with(
                "its output schema cannot be used (the output schema's pattern \"((\""
            ),
            "{reason}"
        );
    }

    #[test]
    fn every_schema_of_six_real_servers_is_admitted() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/real-tools");
        let mut seen = 0;
        for file in std::fs::read_dir(dir).expect("captures").flatten() {
            let text = std::fs::read_to_string(file.path()).expect("readable");
            let capture: Value = serde_json::from_str(&text).expect("json");
            let tools: Vec<ToolSpec> = capture["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| {
                    ToolSpec::new(
                        t["name"].as_str().unwrap_or_default(),
                        t["inputSchema"].clone(),
                    )
                })
                .collect();
            seen += tools.len();
            let a = admit(&entry(), ToolList::new(tools));
            assert!(a.rejected.is_empty(), "{:?}: {:?}", file.path(), a.rejected);
        }
        assert!(seen > 40, "only {seen} tools");
    }
}
