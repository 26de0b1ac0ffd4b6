//! The caller of a lone call reads the server's stdout itself
//! while it waits for its answer (`mcp-stdio/src/inbox.rs`). When it stops
//! waiting, answered or dropped, reading must go back to the reader task:
//! otherwise what the server sends while no call is in flight, and the
//! answers of the calls still waiting, would be left unread.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{FIXTURE, call, detail, options, stop};
use serde_json::{Value, json};
use spear_capabilities::{CallRequest, Provider};
use spear_mcp_stdio::{McpProvider, ServerConfig};

const SCRIPT: &str = env!("CARGO_BIN_EXE_spear-script-server");

/// Waits up to 10 s for `done`, polling.
async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..500 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what}: not within 10 s");
}

fn sleep_call(ms: u64) -> CallRequest {
    let Value::Object(args) = json!({ "ms": ms }) else {
        unreachable!()
    };
    CallRequest::new("sleep", args)
}

#[tokio::test]
async fn after_a_lone_call_what_the_server_sends_while_idle_is_still_read() {
    after_a_lone_call_what_the_server_sends_while_idle_is_still_read_body().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_lone_call_what_the_server_sends_while_idle_is_still_read_multi_thread() {
    after_a_lone_call_what_the_server_sends_while_idle_is_still_read_body().await;
}

async fn after_a_lone_call_what_the_server_sends_while_idle_is_still_read_body() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("script.json");
    let idle = json!([
        {"result": {"content": [{"type": "text", "text": "done"}]}},
        {"sleep_ms": 200},
        {"line": {"jsonrpc": "2.0", "id": "s1", "method": "ping"}},
        {"line": {"jsonrpc": "2.0", "method": "notifications/message", "params": {}}},
        {"sleep_ms": 200},
        {"stderr": "script: leaving while idle"},
        {"exit": 3}
    ]);
    let body = json!({"tools/call": {"x": idle}});
    std::fs::write(&script, body.to_string()).expect("script");
    let config = ServerConfig::new([SCRIPT, script.to_str().expect("utf-8 path")]);
    let p = McpProvider::start("fx", &config, std::path::Path::new("/"), options())
        .await
        .expect("starts");
    let answer = p.call_tool(call("x")).await.expect("answered");
    assert!(!answer.is_error);
    // No call is in flight from here on: only the reader task can read.
    until("the server's ping and notification are read", || {
        detail(&p, "server_requests") == "1" && detail(&p, "notifications") == "1"
    })
    .await;
    until("the server's exit is seen", || p.failure().is_some()).await;
    let failure = p.failure().map(|e| e.to_string()).unwrap_or_default();
    assert!(failure.contains("exit status: 3"), "{failure}");
    stop(p).await;
}

#[tokio::test]
async fn a_caller_dropped_while_it_reads_hands_reading_back() {
    a_caller_dropped_while_it_reads_hands_reading_back_body().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_dropped_while_it_reads_hands_reading_back_multi_thread() {
    a_caller_dropped_while_it_reads_hands_reading_back_body().await;
}

async fn a_caller_dropped_while_it_reads_hands_reading_back_body() {
    let p = Arc::new(
        McpProvider::start(
            "fx",
            &ServerConfig::new([FIXTURE]),
            std::path::Path::new("/"),
            options(),
        )
        .await
        .expect("starts"),
    );
    // The first call waits, reading for itself.
    let first = tokio::spawn({
        let p = Arc::clone(&p);
        async move { p.call_tool(sleep_call(300)).await }
    });
    tokio::task::yield_now().await;
    // The second takes reading over, and is dropped before any answer.
    let second =
        tokio::time::timeout(Duration::from_millis(50), p.call_tool(sleep_call(100))).await;
    assert!(second.is_err(), "the second call was not dropped");
    // The first call's answer is still read and handed to it.
    let first = tokio::time::timeout(Duration::from_secs(10), first)
        .await
        .expect("the first call's answer was read")
        .expect("the task ran")
        .expect("the first call succeeded");
    assert!(!first.is_error);
    // And the connection goes on.
    p.call_tool(sleep_call(0)).await.expect("a later call");
    let p = Arc::into_inner(p).expect("the only handle");
    stop(p).await;
}
