//! A `tools/list` listing as the server offered it.
//!
//! The client reads each offered tool into the core's [`ToolSpec`] and keeps
//! the server's order; it does not judge names, duplicates or schemas: the
//! gateway admits tools the same way for every kind
//! (`spear_capabilities::admission`). An entry that is not a tool at all (not
//! an object, or without a string `name`) is reported as rejected.

use serde_json::Value;
use spear_capabilities::{RejectedTool, ToolList, ToolSpec};

/// The most pages of `tools/list` followed before giving up.
pub const MAX_PAGES: usize = 1000;
/// The most tools one server may offer.
pub const MAX_TOOLS: usize = 10_000;
/// The most bytes of JSON all pages of one listing may come to: 25 times a
/// listing of 10 000 real tools, so that many pages each under the line
/// bound cannot hold gigabytes.
pub const MAX_LISTING_BYTES: usize = 32 * 1024 * 1024;

/// The tools a server offered, read into [`ToolSpec`]s in its order.
pub(crate) fn read_offered(offered: Vec<Value>) -> ToolList {
    let mut tools = Vec::with_capacity(offered.len());
    let mut rejected = Vec::new();
    for tool in offered {
        match read_tool(tool) {
            Ok(spec) => tools.push(spec),
            Err(reason) => rejected.push(RejectedTool::new("", reason)),
        }
    }
    ToolList::new(tools).with_rejected(rejected)
}

fn read_tool(tool: Value) -> Result<ToolSpec, &'static str> {
    let Value::Object(mut tool) = tool else {
        return Err("the tool is not a JSON object");
    };
    let Some(Value::String(name)) = tool.remove("name") else {
        return Err("the tool has no name");
    };
    // A missing schema is the gateway's to refuse, with its reason.
    let schema = tool.remove("inputSchema").unwrap_or(Value::Null);
    let mut spec = ToolSpec::new(name, schema);
    if let Some(Value::String(title)) = tool.remove("title") {
        spec = spec.with_title(title);
    }
    if let Some(Value::String(description)) = tool.remove("description") {
        spec = spec.with_description(description);
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tools_are_read_as_offered_and_non_tools_rejected() {
        let obj = json!({"type": "object"});
        let list = read_offered(vec![
            json!({"name": "ok", "description": "d", "inputSchema": obj, "execution": {}}),
            json!({"name": "bad name", "inputSchema": obj}),
            json!({"name": "twice", "inputSchema": obj}),
            json!({"name": "twice", "inputSchema": obj}),
            json!({"name": "noschema"}),
            json!({"description": "nameless"}),
            json!("not an object"),
            json!({"name": "ok2", "title": "T", "inputSchema": obj}),
        ]);
        let kept: Vec<_> = list.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            kept,
            ["ok", "bad name", "twice", "twice", "noschema", "ok2"]
        );
        assert_eq!(list.tools[0].description.as_deref(), Some("d"));
        assert_eq!(list.tools[4].input_schema, Value::Null);
        assert_eq!(list.tools[5].title.as_deref(), Some("T"));
        let reasons: Vec<_> = list.rejected.iter().map(|r| r.reason.as_str()).collect();
        assert_eq!(
            reasons,
            ["the tool has no name", "the tool is not a JSON object"]
        );
    }
}
