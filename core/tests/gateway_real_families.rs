//! What a turn is shown for families made of real servers' tools (captured
//! from six MCP servers written by others). The exact texts are snapshots in
//! `tests/snapshots/`; `UPDATE_SNAPSHOTS=1` rewrites them after a deliberate
//! change, and the diff is then reviewed like code.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{Bench, implementation};
use serde_json::{Value, json};
use spear_capabilities::{Auto, ToolSpec, exposure::Exposure};
use spear_testkit::MockHandle;

/// Loads the tools of `server` named in `only` (all when it is empty).
fn load(server: &str, only: &[&str], into: &MockHandle) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/real-tools/{server}.json"));
    let v: Value = serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("json");
    let tools = v["tools"].as_array().expect("tools");
    let wanted = |t: &&Value| only.is_empty() || only.iter().any(|n| t["name"] == *n);
    for t in tools.iter().filter(wanted) {
        let mut spec = ToolSpec::new(t["name"].as_str().expect("name"), t["inputSchema"].clone());
        if let Some(d) = t["description"].as_str() {
            spec = spec.with_description(d);
        }
        if let Some(title) = t["title"].as_str() {
            spec = spec.with_title(title);
        }
        into.add_tool(spec);
    }
}

fn snapshot(name: &str, text: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/snapshots/{name}.txt"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, text).expect("write snapshot");
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        text == want,
        "snapshot {name} differs (UPDATE_SNAPSHOTS=1 to accept):\n{text}"
    );
}

async fn shown(servers: &[(&str, &str, &[&str])]) -> spear_capabilities::exposure::Shown {
    let all: Vec<_> = servers
        .iter()
        .map(|&(id, server, read)| (id, server, read, &[][..]))
        .collect();
    shown_only(&all).await
}

/// [`shown`], each server with only the tools its last list names (all when
/// it is empty).
async fn shown_only(
    servers: &[(&str, &str, &[&str], &[&str])],
) -> spear_capabilities::exposure::Shown {
    let entries: Vec<Value> = servers
        .iter()
        .map(|(id, _, read, _)| json!({"id": id, "scope": "global", "read": read}))
        .collect();
    let b = Bench::new(Value::Array(entries));
    for (id, server, _, only) in servers {
        load(server, only, &b.provider(id));
    }
    b.session(Arc::new(Auto))
        .begin_turn(implementation())
        .await
        .expect("the turn begins")
        .shown()
        .clone()
}

#[tokio::test]
async fn the_time_server_alone_is_shown_whole() {
    let s = shown(&[(
        "time",
        "mcp-server-time",
        &["get_current_time", "convert_time"],
    )])
    .await;
    assert_eq!(s.exposure, Exposure::Whole);
    snapshot("time-whole", &s.text);
}

#[tokio::test]
async fn the_git_server_has_more_than_eight_tools_and_is_an_index() {
    let s = shown(&[(
        "git",
        "mcp-server-git",
        &["git_status", "git_diff", "git_log", "git_show"],
    )])
    .await;
    assert_eq!(s.capabilities.len(), 12);
    assert_eq!(s.exposure, Exposure::Index);
    snapshot("git-index", &s.text);
}

#[tokio::test]
async fn few_tools_with_long_schemas_cross_the_token_limit() {
    // 3 tools that o200k counts as 1074 tokens: about 1100 estimated, under
    // the limit, shown whole. (The estimate of one token per three bytes
    // made them 1650, an index: a family a third under the spec's size.)
    // The thinking tool's description is longer than a shown description
    // may be; whole or index counts it whole.
    let time_and_thinking = [
        ("time", "mcp-server-time", &[][..], &[][..]),
        ("think", "server-sequential-thinking", &[], &[]),
    ];
    let s = shown_only(&time_and_thinking).await;
    assert_eq!(s.capabilities.len(), 3);
    assert!((1074..1200).contains(&s.tokens), "{}", s.tokens);
    assert_eq!(s.exposure, Exposure::Whole);
    // With four of the filesystem server's longer tools: 7 tools, 1681
    // tokens to o200k, about 1750 estimated: over, an index.
    let longer = [
        "edit_file",
        "read_text_file",
        "search_files",
        "read_multiple_files",
    ];
    let mut seven = time_and_thinking.to_vec();
    seven.push(("fs", "server-filesystem", &[], &longer));
    let s = shown_only(&seven).await;
    assert_eq!(s.capabilities.len(), 7);
    assert!((1681..1900).contains(&s.tokens), "{}", s.tokens);
    assert_eq!(s.exposure, Exposure::Index);
    // The same with the memory server's nine tools: far over, an index.
    let s = shown(&[
        ("time", "mcp-server-time", &[]),
        ("memory", "server-memory", &[]),
    ])
    .await;
    assert_eq!(s.exposure, Exposure::Index);
    // server-everything's 13 tools, some with the newer `execution` field and
    // `$schema` keys, all compile and are offered.
    let s = shown(&[("everything", "server-everything", &["echo"])]).await;
    assert_eq!(s.capabilities.len(), 13);
    snapshot("everything-index", &s.text);
}
