//! mcp-stdio: which answer is a request's, and what one bad result costs,
//! through `Provider::call_tool` against the script player.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{assert_gone, call, options};
use serde_json::{Value, json};
use spear_capabilities::{Error, Provider};
use spear_mcp_stdio::{McpProvider, ServerConfig};

const SCRIPT: &str = env!("CARGO_BIN_EXE_spear-script-server");

/// Starts the script player on `calls` (tool name -> actions).
async fn script(calls: Value) -> (McpProvider, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("script.json");
    let tools: Vec<Value> = calls
        .as_object()
        .expect("an object")
        .keys()
        .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
        .collect();
    let script = json!({"tools/list": {"": [{"result": {"tools": tools}}]}, "tools/call": calls});
    std::fs::write(&path, script.to_string()).expect("script");
    let config = ServerConfig::new([SCRIPT, path.to_str().expect("utf-8")]);
    let provider = McpProvider::start("sc", &config, Path::new("/"), options())
        .await
        .expect("the script player starts");
    (provider, dir)
}

fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

/// Issue 42.12: an answer under a pending call's id that cannot be read at
/// all (a byte that is not UTF-8, a member given twice, a byte-order mark,
/// a raw NUL; also with a lone surrogate, a number past any float, or a
/// nesting 200 deep in another member) fails that call at once with the
/// reason, is counted as junk, and leaves the provider up.
#[tokio::test]
async fn an_unreadable_answer_to_a_pending_call_fails_it_at_once() {
    let ok = r#""result":{"content":[{"type":"text","text":"x"}]}"#;
    let cases = [
        (
            "latin1",
            format!("{{\"jsonrpc\":\"2.0\",\"id\":$ID,{ok},\"note\":\"caf\u{e9}\"}}\n"),
            "it is not UTF-8: ",
        ),
        (
            "twice",
            format!("{{\"jsonrpc\":\"2.0\",\"id\":$ID,{ok},{ok}}}\n"),
            "duplicate field `result`",
        ),
        (
            "bom",
            format!("\u{ef}\u{bb}\u{bf}{{\"jsonrpc\":\"2.0\",\"id\":$ID,{ok}}}\n"),
            "it begins with a byte-order mark",
        ),
        (
            "nul",
            format!("{{\"jsonrpc\":\"2.0\",\"id\":$ID,{ok},\"note\":\"a\u{0}b\"}}\n"),
            "control character (\\u0000-\\u001F) found while parsing a string",
        ),
        // Each with, in another member, what a JSON value cannot hold.
        (
            "twice_surrogate",
            format!("{{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{{\"t\":\"\\ud800\"}},{ok}}}\n"),
            "duplicate field `result`",
        ),
        (
            "latin1_huge_number",
            "{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"n\":1e400},\"note\":\"caf\u{e9}\"}\n"
                .into(),
            "it is not UTF-8: ",
        ),
        (
            "bom_deep",
            format!(
                "\u{ef}\u{bb}\u{bf}{{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{}{}}}\n",
                "[".repeat(200),
                "]".repeat(200)
            ),
            "it begins with a byte-order mark",
        ),
    ];
    let cases = cases.map(|(tool, bytes, why)| {
        let unreadable = "the server's answer to this call cannot be read: ";
        let fits = move |r: &str| r.starts_with(unreadable) && r.contains(why);
        (tool, json!({"bytes": bytes}), fits)
    });
    each_answer_fails_its_call_at_once(&cases).await;
}

/// Plays each case's action as the answer to a call of its tool: the call
/// fails at once as unreadable, with a reason `fits` accepts; the line is
/// counted as junk, the provider has not failed and answers the next call.
async fn each_answer_fails_its_call_at_once(cases: &[(&str, Value, impl Fn(&str) -> bool)]) {
    let mut calls = serde_json::Map::new();
    for (tool, action, _) in cases {
        calls.insert((*tool).into(), json!([action]));
    }
    calls.insert("good".into(), json!([{"result": text("fine")}]));
    let (p, _dir) = script(Value::Object(calls)).await;
    for (n, (tool, _, fits)) in cases.iter().enumerate() {
        // A call that waited for any timeout would fail the test.
        let err = tokio::time::timeout(Duration::from_secs(10), p.call_tool(call(tool)))
            .await
            .expect("failed at once, not at the caller's deadline")
            .expect_err("unreadable");
        let Error::CallUnreadable { reason, .. } = &err else {
            panic!("{tool}: {err:?}")
        };
        assert!(fits(reason), "{tool}: {reason}");
        assert!(p.failure().is_none(), "{tool}: {:?}", p.failure());
        assert_eq!(p.stats().junk_lines, n as u64 + 1, "{tool}");
        let next = p
            .call_tool(call("good"))
            .await
            .expect("the next call succeeds");
        assert_eq!(next.joined_text(), "fine");
    }
    assert_eq!(p.stats().stray_answers, 0);
    let pid = p.pid();
    p.shutdown().await.expect("shutdown");
    assert_gone(pid);
}

/// A result no string can hold (a lone surrogate, as a Python server
/// listing a non-UTF-8 file name writes) or nested past what can be read
/// fails that call only, with the reason; the next call succeeds and the
/// provider has not failed.
#[tokio::test]
async fn a_result_that_cannot_be_read_fails_that_call_only() {
    let deep = format!("{}1{}", "{\"a\":".repeat(200), "}".repeat(200));
    let (p, _dir) = script(json!({
        "surrogate": [{"raw": "{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"caf\\ud800\"}]}}\n"}],
        "deep": [{"raw": format!("{{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{{\"content\":[],\"structuredContent\":{deep}}}}}\n")}],
        "good": [{"result": text("fine")}],
    }))
    .await;
    let reasons = [
        ("surrogate", "content block 0: it cannot be read: "),
        ("deep", "the tools/call result cannot be read: "),
    ];
    for (tool, why) in reasons {
        let err = p.call_tool(call(tool)).await.expect_err("unreadable");
        let Error::CallUnreadable {
            provider,
            tool: called,
            reason,
        } = &err
        else {
            panic!("{err:?}")
        };
        assert_eq!((provider.as_str(), called.as_str()), ("sc", tool));
        assert!(reason.starts_with(why), "{reason}");
        assert_eq!(err.unavailable_reason(), None);
        assert!(p.failure().is_none(), "{:?}", p.failure());
        let next = tokio::time::timeout(Duration::from_secs(20), p.call_tool(call("good")))
            .await
            .expect("in time")
            .expect("the next call succeeds");
        assert_eq!(next.joined_text(), "fine");
    }
    let pid = p.pid();
    p.shutdown().await.expect("shutdown");
    assert_gone(pid);
}

/// MCP 2025-06-18: an answer to a pending call that breaks JSON-RPC (both
/// result and error, neither, an error without an integer code, no
/// `"jsonrpc": "2.0"`) fails that call at once with the reason, is counted
/// as junk, and leaves the provider up.
#[tokio::test]
async fn a_malformed_answer_to_a_pending_call_fails_it_at_once() {
    let cases = [
        (
            "both",
            r#"{"jsonrpc":"2.0","id":$ID,"result":{},"error":{"code":1,"message":"m"}}"#,
            "it holds both a result and an error",
        ),
        (
            "neither",
            r#"{"jsonrpc":"2.0","id":$ID}"#,
            "it holds neither a result nor an error",
        ),
        (
            "codeless",
            r#"{"jsonrpc":"2.0","id":$ID,"error":{"code":"x","message":"m"}}"#,
            "its error has no integer code",
        ),
        (
            "versionless",
            r#"{"id":$ID,"result":{"content":[]}}"#,
            "it is not JSON-RPC 2.0",
        ),
    ];
    let cases = cases.map(|(tool, raw, why)| {
        let reason = format!("the server's answer to this call is not valid JSON-RPC: {why}");
        (tool, json!({"raw": format!("{raw}\n")}), move |r: &str| {
            r == reason
        })
    });
    each_answer_fails_its_call_at_once(&cases).await;
}

/// A line with an `id` but no `result`, no `error` and no `"jsonrpc":
/// "2.0"` (a server's JSON log line that names the request it handles) is
/// no answer: it is counted as junk, and the call it names gets its real
/// answer, which follows.
#[tokio::test]
async fn a_log_line_naming_a_pending_id_is_not_its_answer() {
    let log = json!({"line": {"level": "info", "msg": "handling", "id": "$ID"}});
    let calls = json!({"logged": [log, {"result": text("fine")}]});
    let (p, _dir) = script(calls).await;
    let r = tokio::time::timeout(Duration::from_secs(10), p.call_tool(call("logged")))
        .await
        .expect("in time")
        .expect("its real answer");
    assert_eq!(r.joined_text(), "fine");
    let stats = p.stats();
    assert_eq!((stats.junk_lines, stats.stray_answers), (1, 0));
    assert!(p.failure().is_none(), "{:?}", p.failure());
    p.shutdown().await.expect("shutdown");
}

/// MCP lifecycle: only negotiated capabilities are used. A server whose
/// `capabilities` has no `tools` is a provider with no tools, and is never
/// sent `tools/list` (the script would answer it with -32601).
#[tokio::test]
async fn a_server_without_the_tools_capability_is_never_sent_tools_list() {
    for capabilities in [json!({}), json!({"prompts": {}})] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("script.json");
        let init = json!({"result": {
            "protocolVersion": "2025-06-18",
            "capabilities": capabilities,
            "serverInfo": {"name": "no-tools", "version": "1"}
        }});
        let script = json!({"initialize": [init],
            "tools/list": {"": [{"error": {"code": -32601, "message": "method not found"}}]}});
        std::fs::write(&path, script.to_string()).expect("script");
        let config = ServerConfig::new([SCRIPT, path.to_str().expect("utf-8")]);
        let p = McpProvider::start("sc", &config, Path::new("/"), options())
            .await
            .expect("starts");
        let list = p.list_tools().await.expect("no tools, no error");
        assert!(
            list.tools.is_empty() && list.rejected.is_empty(),
            "{list:?}"
        );
        // Said as such, not as a listing that came back empty (issue 35.2).
        assert!(list.declares_no_tools, "{list:?}");
        let info = p.info();
        let detail = info.details.iter().find(|(k, _)| k == "tools_capability");
        assert_eq!(
            detail.map(|(_, v)| v.as_str()),
            Some("not declared: no tools/list is sent"),
            "{info:?}"
        );
        let pid = p.pid();
        p.shutdown().await.expect("shutdown");
        assert_gone(pid);
    }
}
