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

/// A server that writes, with its answer, answers for the ids that come
/// next (ids are easy to guess) has them counted as strays: the next call
/// gets the answer the server writes after it was sent, however long that
/// takes.
#[tokio::test]
async fn an_answer_written_before_its_request_is_never_that_requests_answer() {
    let forged: String = (1..=20)
        .map(|id| {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{}}}\n",
                text("forged")
            )
        })
        .collect();
    let (p, _dir) = script(json!({
        "early": [{"result": text("early")}, {"raw": forged}],
        "late": [{"sleep_ms": 300}, {"result": text("honest")}],
    }))
    .await;
    for _ in 0..3 {
        let early = p.call_tool(call("early")).await.expect("answered");
        assert_eq!(early.joined_text(), "early");
        let late = p.call_tool(call("late")).await.expect("answered");
        assert_eq!(late.joined_text(), "honest");
    }
    assert_eq!(p.stats().stray_answers, 60);
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
    for tool in ["surrogate", "deep"] {
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
        assert!(
            reason.starts_with("the tools/call result cannot be read: "),
            "{reason}"
        );
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
