//! Issue 43, defect 2: `get --start` and `check --start` judge a server's
//! tools with the gateway's own admission, output schemas included, and
//! say each verdict in the gateway's words: a tool whose output schema has
//! a remote `$ref` keeps its place and has its results left unchecked, as
//! the session's `output_unchecked` record says; a tool left out has the
//! reason of its `tool_rejected` record. Through the built binary and a
//! scripted server.

mod common;

use common::{cli, on_registry, script_server, text};

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// A registry in `dir` with `srv`, a scripted server offering `plain` (an
/// output schema the gateway checks), `remote` (an output schema whose
/// `$ref` is remote), `twice` twice and `bad name`.
fn registry(dir: &Path) -> PathBuf {
    let object = json!({"type": "object"});
    let tools = json!([
        {"name": "plain", "inputSchema": object,
         "outputSchema": {"type": "object", "properties": {"n": {"type": "number"}}}},
        {"name": "remote", "inputSchema": object,
         "outputSchema": {"type": "object", "$ref": "https://example.invalid/s"}},
        {"name": "twice", "inputSchema": object},
        {"name": "twice", "inputSchema": object},
        {"name": "bad name", "inputSchema": object},
    ]);
    let script = json!({"tools/list": {"": [{"result": {"tools": tools}}]}});
    let entry = json!({"id": "srv", "scope": "global", "read": ["plain"],
        "command": script_server(dir, "srv", &script)});
    let file = dir.join("capabilities.json");
    std::fs::write(&file, json!({ "providers": [entry] }).to_string()).expect("write");
    file
}

/// What the gateway itself records of `srv`'s tools when a turn starts
/// it: each `(event, tool, reason)` of `output_unchecked` and
/// `tool_rejected`.
fn gateway_verdicts(dir: &Path, file: &Path) -> Vec<(String, String, String)> {
    let audit = dir.join("audit.jsonl");
    let out = on_registry(file, &["list", "--audit", audit.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let records = std::fs::read_to_string(&audit).expect("audit");
    records
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a record"))
        .filter(|r| r["event"] == "output_unchecked" || r["event"] == "tool_rejected")
        .map(|r| {
            let field = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (field("event"), field("tool"), field("reason"))
        })
        .collect()
}

#[test]
fn get_start_says_a_tool_whose_results_go_unchecked_in_the_gateways_words() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let verdicts = gateway_verdicts(dir.path(), &file);
    let unchecked: Vec<_> = verdicts
        .iter()
        .filter(|(event, ..)| event == "output_unchecked")
        .collect();
    assert_eq!(unchecked.len(), 1, "{verdicts:?}");
    let (_, tool, reason) = unchecked[0];
    assert_eq!(tool, "remote");

    let path = file.to_str().expect("utf-8");
    let out = cli(&["get", "srv", "--start", "--json", "--capabilities", path]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let tools = v["started"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["plain", "remote", "twice", "twice", "bad name"]);
    assert_eq!(tools[1]["output_unchecked"], reason.as_str(), "{v}");
    assert_eq!(tools[1]["left_out"], Value::Null, "it keeps its place");
    assert_eq!(tools[0]["output_unchecked"], Value::Null, "{v}");
    assert_eq!(tools[0]["class"], "READ");

    let out = cli(&["get", "srv", "--start", "--capabilities", path]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!(
            "\n  WRITE  remote\n         output unchecked: {reason}\n"
        )),
        "{stdout}"
    );

    let out = cli(&["check", "--start", path]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(
            " ms), 5 tools, 3 left out, 1 with results unchecked (`get srv --start` says why)\n"
        ),
        "{stdout}"
    );
}

#[test]
fn get_start_says_each_tool_left_out_with_the_gateways_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let rejected: Vec<(String, String)> = gateway_verdicts(dir.path(), &file)
        .into_iter()
        .filter(|(event, ..)| event == "tool_rejected")
        .map(|(_, tool, reason)| (tool, reason))
        .collect();
    let path = file.to_str().expect("utf-8");
    let out = cli(&["get", "srv", "--start", "--json", "--capabilities", path]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let left_out: Vec<(String, String)> = v["started"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter(|t| !t["left_out"].is_null())
        .map(|t| {
            let field = |k: &str| t[k].as_str().unwrap_or_default().to_owned();
            (field("name"), field("left_out"))
        })
        .collect();
    assert_eq!(left_out, rejected);
    assert_eq!(left_out.len(), 3, "{left_out:?}");
}
