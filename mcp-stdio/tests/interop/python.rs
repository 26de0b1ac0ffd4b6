//! `interop/python_server.py`, written with the official Python SDK (`mcp`,
//! pinned in `interop/requirements.txt`), run from `.interop/venv`.
//!
//! Its tools/list comes in pages of `--page-size` tools, so a client that
//! follows only the first page sees a fraction of them.

use std::time::{Duration, Instant};

use serde_json::json;
use spear_capabilities::{Content, Error};

use super::{PNG_BASE64_PREFIX, Running, captured_tools, installed, start, string};

async fn python(page_size: usize) -> Running {
    let interpreter = string(&installed("venv/bin/python"));
    let script = string(&super::root().join("interop/python_server.py"));
    let command = vec![
        interpreter,
        script,
        "--page-size".to_owned(),
        page_size.to_string(),
    ];
    start("python", command).await
}

/// Every tool of the server, in its order.
fn all_names() -> Vec<String> {
    let named = ["echo", "tiny_image", "fail", "slow", "add"].map(str::to_owned);
    let fillers = (0..18).map(|i| format!("filler_{i:02}"));
    named.into_iter().chain(fillers).collect()
}

#[tokio::test]
async fn python_pagination_gives_every_tool() {
    // 23 tools: 6 pages of 4, then 23 pages of 1.
    for page_size in [4, 1] {
        let server = python(page_size).await;
        let list = server
            .provider
            .list_tools()
            .await
            .expect("tools/list answers");
        let names: Vec<&str> = list.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, all_names(), "page size {page_size}");
        assert!(list.rejected.is_empty(), "{:?}", list.rejected);
        let echo = &list.tools[0];
        assert_eq!(echo.title.as_deref(), Some("Echo"));
        assert_eq!(echo.input_schema["required"], json!(["message"]));
        server.shutdown_leaving_nothing(1).await;
    }
}

/// The list as captured in `core/tests/data/interop-tools/python-server.json`,
/// which the token estimate is measured on.
#[tokio::test]
async fn python_lists_every_tool_as_captured() {
    let want = captured_tools("core/tests/data/interop-tools/python-server.json");
    let server = python(4).await;
    let list = server
        .provider
        .list_tools()
        .await
        .expect("tools/list answers");
    assert_eq!(list.tools, want);
    server.shutdown_leaving_nothing(1).await;
}

#[tokio::test]
async fn python_echo_answers_text() {
    let server = python(4).await;
    let result = server
        .call("echo", json!({"message": "hello from rust"}))
        .await;
    assert!(!result.is_error);
    assert_eq!(result.content, [Content::text("Echo: hello from rust")]);
    server.shutdown_leaving_nothing(1).await;
}

#[tokio::test]
async fn python_image_is_an_image_block() {
    let server = python(4).await;
    let result = server.call("tiny_image", json!({})).await;
    assert!(!result.is_error);
    assert_eq!(result.content.len(), 2, "{:?}", result.content);
    assert_eq!(result.content[0], Content::text("a 2x2 PNG follows"));
    match &result.content[1] {
        Content::Image { mime_type, data } => {
            assert_eq!(mime_type, "image/png");
            assert!(data.starts_with(PNG_BASE64_PREFIX), "not a PNG: {data}");
        }
        other => panic!("expected an image block, got {other:?}"),
    }
    server.shutdown_leaving_nothing(1).await;
}

#[tokio::test]
async fn python_tool_failure_is_is_error_and_not_a_provider_failure() {
    let server = python(4).await;
    let result = server.call("fail", json!({"reason": "on purpose"})).await;
    assert!(result.is_error, "{result:?}");
    assert_eq!(result.joined_text(), "failed: on purpose");
    let ok = server.call("echo", json!({"message": "after"})).await;
    assert_eq!(ok.joined_text(), "Echo: after");
    server.shutdown_leaving_nothing(1).await;
}

#[tokio::test]
async fn python_json_rpc_error_is_a_rejected_call_with_its_code() {
    let server = python(4).await;
    let err = server
        .provider
        .call_tool(spear_capabilities::CallRequest::new(
            "no_such_tool",
            Default::default(),
        ))
        .await
        .expect_err("the server answers with a JSON-RPC error");
    match &err {
        Error::CallError {
            code,
            message,
            tool,
            ..
        } => {
            assert_eq!(*code, -32602);
            assert!(message.contains("no_such_tool"), "{message}");
            assert_eq!(tool, "no_such_tool");
        }
        other => panic!("expected a rejected call, got {other}"),
    }
    assert_eq!(err.unavailable_reason(), None);
    let ok = server.call("echo", json!({"message": "after"})).await;
    assert_eq!(ok.joined_text(), "Echo: after");
    server.shutdown_leaving_nothing(1).await;
}

#[tokio::test]
async fn python_structured_content_is_kept() {
    let server = python(4).await;
    let result = server.call("add", json!({"a": 2, "b": 40})).await;
    assert_eq!(result.joined_text(), "42");
    assert_eq!(result.structured, Some(json!({"sum": 42})));
    server.shutdown_leaving_nothing(1).await;
}

#[tokio::test]
async fn python_calls_in_flight_each_get_their_own_answer() {
    let server = python(4).await;
    let begin = Instant::now();
    let slow = async {
        let r = server.call("slow", json!({"ms": 2000})).await;
        (r, begin.elapsed())
    };
    let quick = async {
        let answers = echoes_at_once(&server, 8).await;
        (answers, begin.elapsed())
    };
    let ((slow, slow_took), (answers, quick_took)) = tokio::join!(slow, quick);
    assert_eq!(slow.joined_text(), "slept 2000 ms");
    assert!(slow_took >= Duration::from_secs(2), "{slow_took:?}");
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(answer, &format!("Echo: n{i}"));
    }
    // Had the echoes queued behind the 2 s call, they would take 2 s too.
    assert!(
        quick_took < Duration::from_secs(1),
        "the echoes waited: {quick_took:?}"
    );
    server.shutdown_leaving_nothing(1).await;
}

/// `n` echo calls in flight at once, their texts in call order.
async fn echoes_at_once(server: &Running, n: usize) -> Vec<String> {
    let mut set = tokio::task::JoinSet::new();
    for i in 0..n {
        let provider = server.provider.clone();
        set.spawn(async move {
            let args = super::object(json!({"message": format!("n{i}")}));
            let request = spear_capabilities::CallRequest::new("echo", args);
            let r = provider.call_tool(request).await.expect("echo answers");
            (i, r.joined_text())
        });
    }
    let mut answers = vec![String::new(); n];
    while let Some(done) = set.join_next().await {
        let (i, t) = done.expect("the call task ends");
        answers[i] = t;
    }
    answers
}
