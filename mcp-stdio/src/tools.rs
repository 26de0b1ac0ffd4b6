//! Which offered tools are usable: names, duplicates and input schemas.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;
use spear_capabilities::checks::ArgumentSchema;
use spear_capabilities::{RejectedTool, ToolList, ToolSpec};

/// The most pages of `tools/list` followed before giving up.
pub const MAX_PAGES: usize = 1000;
/// The most tools one server may offer.
pub const MAX_TOOLS: usize = 10_000;

/// Splits the tools a server offered into usable and rejected, keeping the
/// server's order. Every copy of a duplicated name is rejected: a call by that
/// name could reach either, so no single schema can be checked for it.
pub(crate) fn sort_out(offered: Vec<Value>) -> ToolList {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for tool in &offered {
        if let Some(name) = tool.get("name").and_then(Value::as_str) {
            *seen.entry(name).or_default() += 1;
        }
    }
    // Only the duplicated names are copied out: the others need no count.
    let counts: HashMap<String, usize> = seen
        .into_iter()
        .filter(|&(_, n)| n > 1)
        .map(|(name, n)| (name.to_owned(), n))
        .collect();
    let mut tools = Vec::new();
    let mut rejected = Vec::new();
    let mut checked = SchemaChecks::default();
    for tool in offered {
        match usable(tool, &counts, &mut checked) {
            Ok(spec) => tools.push(spec),
            Err(r) => rejected.push(r),
        }
    }
    ToolList::new(tools).with_rejected(rejected)
}

/// The verdict on each distinct input schema of one listing.
///
/// Compiling a schema costs tens of microseconds, far more than reading the
/// tool; servers repeat schemas (every tool without arguments has the same
/// one), and one schema's verdict does not depend on the tool it is on.
/// Schemas are found by a hash of their structure and then compared whole,
/// without serialising them: a text key cost a sixth of a 10 000-tool
/// listing.
#[derive(Default)]
struct SchemaChecks {
    verdicts: HashMap<u64, Vec<(Value, Verdict)>>,
}

/// Whether a schema is usable, and if not why.
type Verdict = Result<(), String>;

impl SchemaChecks {
    fn check(&mut self, schema: &Value) -> Verdict {
        let mut hasher = DefaultHasher::new();
        hash_value(schema, &mut hasher);
        let seen = self.verdicts.entry(hasher.finish()).or_default();
        if let Some((_, verdict)) = seen.iter().find(|(s, _)| s == schema) {
            return verdict.clone();
        }
        let verdict = check_input_schema(schema);
        seen.push((schema.clone(), verdict.clone()));
        verdict
    }
}

/// Hashes a JSON value so that equal values (`==`) hash equally: objects
/// iterate in key order, and `Number` hashes as it compares. serde_json
/// bounds the nesting of what it parses, so the recursion is bounded too.
fn hash_value(value: &Value, h: &mut impl Hasher) {
    match value {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(items) => {
            (4u8, items.len()).hash(h);
            for item in items {
                hash_value(item, h);
            }
        }
        Value::Object(members) => {
            (5u8, members.len()).hash(h);
            for (key, item) in members {
                key.hash(h);
                hash_value(item, h);
            }
        }
    }
}

fn usable(
    tool: Value,
    counts: &HashMap<String, usize>,
    checked: &mut SchemaChecks,
) -> Result<ToolSpec, RejectedTool> {
    let Value::Object(mut tool) = tool else {
        return Err(RejectedTool::new("", "the tool is not a JSON object"));
    };
    let Some(Value::String(name)) = tool.remove("name") else {
        return Err(RejectedTool::new("", "the tool has no name"));
    };
    let reject = |reason: String| RejectedTool::new(shown(&name), reason);
    if !valid_name(&name) {
        return Err(reject(
            "its name is not 1 to 128 characters of A-Z, a-z, 0-9, '_', '.' and '-'".into(),
        ));
    }
    match counts.get(&name) {
        Some(&n) if n > 1 => {
            return Err(reject(format!("the server offers {n} tools of this name")));
        }
        _ => {}
    }
    let schema = tool.remove("inputSchema").unwrap_or(Value::Null);
    checked.check(&schema).map_err(reject)?;
    let mut spec = ToolSpec::new(name, schema);
    if let Some(Value::String(title)) = tool.remove("title") {
        spec = spec.with_title(title);
    }
    if let Some(Value::String(description)) = tool.remove("description") {
        spec = spec.with_description(description);
    }
    Ok(spec)
}

/// A tool name SPEAR can use: 1 to 128 of `[A-Za-z0-9_.-]`.
pub(crate) fn valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// A rejected name as recorded: cut, since it is untrusted and may be huge.
fn shown(name: &str) -> String {
    name.chars().take(128).collect()
}

/// Checks that `schema` is an object schema that compiles, offline.
///
/// The core's own check ([`ArgumentSchema::compile`]), so that a provider
/// and the gateway agree on what a usable schema is: a `$ref` to anything
/// outside the schema is refused without any fetch or file read.
///
/// # Errors
/// Why the schema cannot be used, as a lower-case phrase.
pub fn check_input_schema(schema: &Value) -> Result<(), String> {
    ArgumentSchema::compile(schema).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reasons(list: &ToolList) -> Vec<(String, String)> {
        list.rejected
            .iter()
            .map(|r| (r.name.clone(), r.reason.clone()))
            .collect()
    }

    #[test]
    fn names_follow_the_spec_charset_and_length() {
        for good in ["a", "get_issue", "git.log", "x-1", &"n".repeat(128)] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", "has space", "emoji✓", "a/b", &"n".repeat(129)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn bad_tools_are_left_out_with_a_reason_and_the_rest_kept() {
        let obj = json!({"type": "object"});
        let list = sort_out(vec![
            json!({"name": "ok", "description": "d", "inputSchema": obj, "execution": {}}),
            json!({"name": "bad name", "inputSchema": obj}),
            json!({"name": "twice", "inputSchema": obj}),
            json!({"name": "twice", "inputSchema": obj}),
            json!({"name": "noschema"}),
            json!({"name": "array", "inputSchema": {"type": "array"}}),
            json!({"name": "broken", "inputSchema": {"type": "object", "properties": {"a": {"type": 5}}}}),
            json!({"description": "nameless"}),
            json!("not an object"),
            json!({"name": "ok2", "title": "T", "inputSchema": obj}),
        ]);
        let kept: Vec<_> = list.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(kept, ["ok", "ok2"]);
        assert_eq!(list.tools[0].description.as_deref(), Some("d"));
        assert_eq!(list.tools[1].title.as_deref(), Some("T"));
        let r = reasons(&list);
        assert_eq!(r.len(), 8, "{r:?}");
        assert!(r[0].0 == "bad name" && r[0].1.starts_with("its name is not"));
        assert_eq!(r[1].1, "the server offers 2 tools of this name");
        assert_eq!(r[2], r[1]);
        assert_eq!(r[3].1, "the input schema is not a JSON object");
        assert_eq!(r[4].1, "the input schema is not of type \"object\"");
        assert!(
            r[5].1.starts_with("the input schema does not compile"),
            "{}",
            r[5].1
        );
        assert_eq!(r[6].1, "the tool has no name");
        assert_eq!(r[7].1, "the tool is not a JSON object");
    }

    #[test]
    fn a_schema_shared_by_tools_gets_the_same_verdict_on_each() {
        let broken = json!({"type": "object", "properties": {"a": {"type": 5}}});
        let good = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        // The same schema with its keys in another order.
        let reordered: Value =
            serde_json::from_str(r#"{"properties": {"a": {"type": "string"}}, "type": "object"}"#)
                .expect("json");
        let list = sort_out(vec![
            json!({"name": "b1", "inputSchema": broken}),
            json!({"name": "g1", "inputSchema": good}),
            json!({"name": "b2", "inputSchema": broken}),
            json!({"name": "g2", "inputSchema": reordered}),
        ]);
        let kept: Vec<_> = list.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(kept, ["g1", "g2"]);
        let r = reasons(&list);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!((r[0].0.as_str(), r[1].0.as_str()), ("b1", "b2"));
        assert_eq!(r[0].1, r[1].1);
        assert!(
            r[0].1.starts_with("the input schema does not compile"),
            "{}",
            r[0].1
        );
    }

    #[test]
    fn refs_outside_the_schema_are_refused_without_reaching_out() {
        for target in [
            "https://example.invalid/schema.json",
            "http://127.0.0.1:9/x.json",
            "file:///etc/passwd",
        ] {
            let schema = json!({"type": "object", "properties": {"a": {"$ref": target}}});
            let err = check_input_schema(&schema).expect_err(target);
            assert!(
                err.starts_with("the input schema does not compile"),
                "{err}"
            );
        }
        let internal = json!({
            "type": "object",
            "$defs": {"s": {"type": "string"}},
            "properties": {"a": {"$ref": "#/$defs/s"}}
        });
        assert_eq!(check_input_schema(&internal), Ok(()));
    }

    #[test]
    fn every_schema_of_six_real_servers_compiles() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../core/tests/data/real-tools");
        let files = std::fs::read_dir(dir).expect("the captures core keeps for its own tests");
        let mut seen = 0;
        for file in files.flatten() {
            let text = std::fs::read_to_string(file.path()).expect("readable");
            let capture: Value = serde_json::from_str(&text).expect("json");
            let tools = capture["tools"].as_array().cloned().unwrap_or_default();
            seen += tools.len();
            let list = sort_out(tools);
            assert!(
                list.rejected.is_empty(),
                "{:?}: {:?}",
                file.path(),
                list.rejected
            );
        }
        assert!(seen > 40, "only {seen} tools");
    }
}
