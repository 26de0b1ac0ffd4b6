//! mcp-stdio: tools/call, many in flight, timeouts, crashes, server traffic.

mod common;

use std::time::Duration;

use common::{call, options, received, start, stop, text_args};
use futures::future::join_all;
use serde_json::json;
use spear_capabilities::{CallRequest, Content, Error, Provider, ResourceBody};

#[tokio::test]
async fn every_content_type_and_structured_content_are_mapped() {
    let p = start(&[]).await;
    let r = p.call_tool(call("mixed")).await.expect("called");
    assert!(!r.is_error);
    assert_eq!(r.structured, Some(json!({"kinds": 5})));
    assert_eq!(r.content.len(), 5);
    assert_eq!(r.content[0], Content::text("all kinds"));
    assert!(matches!(&r.content[1], Content::Image { mime_type, .. } if mime_type == "image/png"));
    assert!(matches!(&r.content[2], Content::Audio { mime_type, .. } if mime_type == "audio/wav"));
    assert!(matches!(&r.content[3], Content::ResourceLink { uri, .. } if uri == "fixture://doc"));
    assert!(
        matches!(&r.content[4], Content::Resource { body: ResourceBody::Text(t), .. } if t == "inline")
    );
    let failed = p.call_tool(call("fail")).await.expect("a result");
    assert!(failed.is_error);
    stop(p).await;
}

/// Echoes every text in one call each, all in flight at once; each call
/// must get its own text back.
async fn echo_all_at_once(p: &impl Provider, texts: &[String]) {
    let results = join_all(
        texts
            .iter()
            .map(|t| p.call_tool(CallRequest::new("echo", text_args(t)))),
    )
    .await;
    for (t, r) in texts.iter().zip(results) {
        assert_eq!(&r.expect("answered").joined_text(), t);
    }
}

#[tokio::test]
async fn answers_in_reverse_order_reach_their_own_callers() {
    // The fixture holds 16 calls and answers them last first.
    let p = start(&["--gather", "16"]).await;
    let texts: Vec<String> = (0..16).map(|i| format!("text {i:02}")).collect();
    echo_all_at_once(&p, &texts).await;
    stop(p).await;
}

#[tokio::test]
async fn answers_to_no_pending_request_are_dropped_and_counted() {
    let p = start(&[]).await;
    let r = p.call_tool(call("stray")).await.expect("called");
    assert_eq!(r.joined_text(), "after the strays");
    assert_eq!(p.stats().stray_answers, 2);
    stop(p).await;
}

#[tokio::test]
async fn a_rejected_call_carries_code_and_message_and_fails_nothing() {
    let p = start(&[]).await;
    let err = p.call_tool(call("reject")).await.expect_err("rejected");
    let Error::CallError {
        tool,
        code,
        message,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(
        (tool.as_str(), *code, message.as_str()),
        ("reject", -32602, "rejected on purpose")
    );
    p.call_tool(call("fail")).await.expect("still usable");
    stop(p).await;
}

#[tokio::test]
async fn an_abandoned_call_is_cancelled_and_the_provider_stays_usable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("in.jsonl");
    let p = start(&["--log", log.to_str().expect("utf-8")]).await;
    let gave_up = tokio::time::timeout(Duration::from_millis(100), p.call_tool(call("hang"))).await;
    assert!(gave_up.is_err());
    p.call_tool(call("fail")).await.expect("still usable");
    stop(p).await;
    let cancelled: Vec<_> = received(&log)
        .into_iter()
        .filter(|m| m["method"] == "notifications/cancelled")
        .collect();
    assert_eq!(cancelled.len(), 1);
    assert_eq!(
        cancelled[0]["params"]["reason"],
        "the client stopped waiting"
    );
}

#[tokio::test]
async fn a_crash_mid_call_fails_every_pending_request_at_once() {
    let p = start(&[]).await;
    let (hang, crash) = tokio::join!(p.call_tool(call("hang")), async {
        // Let the hang request go first, so it is pending when the crash comes.
        tokio::time::sleep(Duration::from_millis(50)).await;
        p.call_tool(call("crash")).await
    });
    for err in [
        hang.expect_err("hang failed"),
        crash.expect_err("crash failed"),
    ] {
        let Error::Crashed { status, stderr, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(status, "exit status: 3");
        assert!(
            stderr.ends_with("fixture: crashing on purpose\n"),
            "{stderr}"
        );
    }
    let later = p.list_tools().await.expect_err("the provider failed");
    assert!(matches!(later, Error::Crashed { .. }), "{later:?}");
    stop(p).await;
}

#[tokio::test]
async fn server_notifications_and_requests_interleaved_with_answers_are_handled() {
    // Before each answer the fixture sends two notifications, a ping and a
    // roots/list request, and waits for our answers to both requests.
    let p = start(&["--chatty"]).await;
    let results = join_all((0..3).map(|i| {
        let text = format!("chat {i}");
        let p = &p;
        async move {
            (
                text.clone(),
                p.call_tool(CallRequest::new("echo", text_args(&text)))
                    .await,
            )
        }
    }))
    .await;
    for (text, r) in results {
        let r = r.expect("answered");
        assert_eq!(r.joined_text(), text);
        let replies = &r.structured.expect("the fixture's record")["replies"];
        assert_eq!(
            replies["\"srv-ping\""],
            json!({"jsonrpc": "2.0", "id": "srv-ping", "result": {}})
        );
        assert_eq!(replies["77"]["error"]["code"], -32601);
    }
    let stats = p.stats();
    assert_eq!(
        (stats.notifications, stats.server_requests),
        (6, 6),
        "{stats:?}"
    );
    stop(p).await;
}

#[tokio::test]
async fn a_late_answer_to_an_abandoned_call_is_dropped_and_counted() {
    let p = start(&[]).await;
    let mut slow = serde_json::Map::new();
    slow.insert("ms".into(), json!(300));
    let gave_up = tokio::time::timeout(
        Duration::from_millis(50),
        p.call_tool(CallRequest::new("sleep", slow)),
    )
    .await;
    assert!(gave_up.is_err());
    // The single-threaded fixture answers the sleep first, then this call.
    let r = p.call_tool(call("fail")).await.expect("answered");
    assert!(r.is_error);
    assert_eq!(p.stats().stray_answers, 1);
    stop(p).await;
}

/// Issue 42.8: a server that closes its stdout in the middle of a call and
/// lives on fails the call at once, not after a wait for its exit: the
/// error says it is still running.
#[tokio::test]
async fn a_server_that_closes_its_stdout_mid_call_fails_the_call_at_once() {
    let init = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"1"}}}"#;
    let script = format!("read -r _; echo '{init}'; read -r _; read -r _; exec >&-; exec sleep 5");
    let config = spear_mcp_stdio::ServerConfig::new(["sh", "-c", &script]);
    let p =
        spear_mcp_stdio::McpProvider::start("sh", &config, std::path::Path::new("/"), options())
            .await
            .expect("started");
    let began = std::time::Instant::now();
    let err = p
        .call_tool(call("anything"))
        .await
        .expect_err("stdout closed");
    let took = began.elapsed();
    let Error::Crashed { status, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(status, "it closed its stdout but is still running");
    assert!(took < Duration::from_secs(1), "failed after {took:?}");
    stop(p).await;
}

/// A server that closes its stdin after the handshake and lives on can be
/// sent nothing more: the next call fails at once (its request has no
/// reader), not at its caller's deadline, and says the server is still
/// running.
#[tokio::test]
async fn a_server_that_closes_its_stdin_fails_the_next_call_at_once() {
    let init = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"1"}}}"#;
    // "closed" (a junk line) says stdin is closed before the call is sent.
    let script =
        format!("read -r _; echo '{init}'; read -r _; exec <&-; echo closed; exec sleep 5");
    let config = spear_mcp_stdio::ServerConfig::new(["sh", "-c", &script]);
    let p =
        spear_mcp_stdio::McpProvider::start("sh", &config, std::path::Path::new("/"), options())
            .await
            .expect("started");
    let closed = async {
        while p.stats().junk_lines == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), closed)
        .await
        .expect("the server closed its stdin");
    let err = tokio::time::timeout(Duration::from_secs(10), p.call_tool(call("anything")))
        .await
        .expect("failed at once, not at the caller's deadline")
        .expect_err("stdin closed");
    let Error::Crashed { status, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(status, "it closed its stdin but is still running");
    assert!(p.failure().is_some());
    stop(p).await;
}

/// Lines larger than the pipe holds go out in pieces as the pipe has room;
/// lines sent meanwhile wait behind them in the one queue, so none is cut
/// into another and every call gets its own answer.
#[tokio::test]
async fn lines_larger_than_the_pipe_never_interleave() {
    let p = start(&[]).await;
    let texts: Vec<String> = (0..24)
        .map(|i| {
            let size = if i % 3 == 0 { 300_000 } else { 10 };
            format!("{i:02}:{}", "x".repeat(size))
        })
        .collect();
    echo_all_at_once(&p, &texts).await;
    // One alone, larger than the pipe.
    let big = "y".repeat(1_000_000);
    let r = p
        .call_tool(CallRequest::new("echo", text_args(&big)))
        .await
        .expect("answered");
    assert_eq!(r.joined_text(), big);
    stop(p).await;
}
