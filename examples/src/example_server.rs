//! `spear-example-server`: a small MCP server over stdio, for the examples
//! and the README's first command. It keeps notes in memory and offers two
//! READ tools (`search_notes`, `get_note`) and one WRITE tool (`add_note`),
//! each annotated as MCP servers do (`readOnlyHint`): a hint `get --start`
//! shows the operator, never a class.
//!
//! It speaks just what SPEAR uses of MCP 2025-06-18: `initialize`,
//! `notifications/initialized`, `tools/list`, `tools/call` and `ping`, one
//! JSON-RPC message a line.
#![forbid(unsafe_code)]

use std::io::{BufRead, Write};

use serde_json::{Value, json};

fn tools() -> Value {
    json!([
        {"name": "search_notes", "title": "Search notes",
         "description": "Find notes whose title or text contains a word. Returns matching note ids and titles.",
         "inputSchema": {"type": "object",
            "properties": {"query": {"type": "string", "description": "The word to look for"}},
            "required": ["query"]},
         "annotations": {"readOnlyHint": true}},
        {"name": "get_note", "title": "Read a note",
         "description": "Read one note by its id.",
         "inputSchema": {"type": "object",
            "properties": {"id": {"type": "integer", "minimum": 1, "description": "The note's id"}},
            "required": ["id"]},
         "annotations": {"readOnlyHint": true}},
        {"name": "add_note", "title": "Add a note",
         "description": "Create a note. It is kept until the server stops.",
         "inputSchema": {"type": "object",
            "properties": {"title": {"type": "string"}, "text": {"type": "string"}},
            "required": ["title", "text"]},
         "annotations": {"readOnlyHint": false, "destructiveHint": false}}
    ])
}

struct Notes(Vec<(String, String)>);

impl Notes {
    fn call(&mut self, name: &str, args: &Value) -> Value {
        let text = |t: String, is_error: bool| json!({"content": [{"type": "text", "text": t}], "isError": is_error});
        match name {
            "search_notes" => {
                let q = args["query"].as_str().unwrap_or_default().to_lowercase();
                let hits: Vec<String> = self
                    .0
                    .iter()
                    .enumerate()
                    .filter(|(_, (t, b))| {
                        t.to_lowercase().contains(&q) || b.to_lowercase().contains(&q)
                    })
                    .map(|(i, (t, _))| format!("#{}: {t}", i + 1))
                    .collect();
                if hits.is_empty() {
                    text(format!("no note mentions {q:?}"), false)
                } else {
                    text(hits.join("\n"), false)
                }
            }
            "get_note" => {
                let id = args["id"].as_u64().unwrap_or(0) as usize;
                match id.checked_sub(1).and_then(|i| self.0.get(i)) {
                    Some((t, b)) => text(format!("# {t}\n\n{b}"), false),
                    None => text(format!("there is no note #{id}"), true),
                }
            }
            "add_note" => {
                let title = args["title"].as_str().unwrap_or_default().to_owned();
                let body = args["text"].as_str().unwrap_or_default().to_owned();
                self.0.push((title, body));
                text(format!("added note #{}", self.0.len()), false)
            }
            other => text(format!("no tool {other:?}"), true),
        }
    }
}

fn main() {
    let mut notes = Notes(vec![
        (
            "Release checklist".into(),
            "Tag the release, update the changelog, announce it.".into(),
        ),
        (
            "Flaky test".into(),
            "The timeout test fails on slow machines; raise its limit.".into(),
        ),
        (
            "Onboarding".into(),
            "New engineers read DESIGN.md first, then the open issues.".into(),
        ),
    ]);
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = msg.get("id").cloned() else {
            continue;
        }; // a notification
        let result = match msg["method"].as_str().unwrap_or_default() {
            "initialize" => Ok(json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "spear-example-server", "version": env!("CARGO_PKG_VERSION")}
            })),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({"tools": tools()})),
            "tools/call" => Ok(notes.call(
                msg["params"]["name"].as_str().unwrap_or_default(),
                &msg["params"]["arguments"],
            )),
            other => Err(json!({"code": -32601, "message": format!("method not found: {other}")})),
        };
        let reply = match result {
            Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
            Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e}),
        };
        if writeln!(out, "{reply}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
}
