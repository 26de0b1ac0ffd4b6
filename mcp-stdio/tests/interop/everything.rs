//! `@modelcontextprotocol/server-everything` (TypeScript SDK), as pinned in
//! `interop/package-lock.json`.
//!
//! Two habits of this server matter here: right after `initialized` it sends
//! `notifications/tools/list_changed` unasked, and one tool
//! (`simulate-research-query`) needs the newer tasks feature, which a 2025-06-18
//! client does not have. It also ignores a closed stdin once its simulated
//! logging runs, so a shutdown that only closes stdin would wait forever.

use std::time::{Duration, Instant};

use serde_json::json;
use spear_capabilities::{Content, ResourceBody};

use super::{PNG_BASE64_PREFIX, Running, captured_tools, installed, start, string};

const ENTRY: &str = "node_modules/@modelcontextprotocol/server-everything/dist/index.js";

/// `node dist/index.js stdio`: one process.
async fn direct() -> Running {
    let node = string(&installed(ENTRY));
    start("everything", vec!["node".into(), node, "stdio".into()]).await
}

/// `npx --prefix .interop --no -- mcp-server-everything stdio`: npm, a shell
/// and node, the way most users register this server.
async fn via_npx() -> Running {
    installed(ENTRY);
    let prefix = string(&installed(""));
    let command = [
        "npx",
        "--prefix",
        &prefix,
        "--no",
        "--",
        "mcp-server-everything",
        "stdio",
    ];
    start("everything", command.map(str::to_owned).to_vec()).await
}

#[tokio::test]
async fn everything_lists_every_tool_as_captured() {
    let server = direct().await;
    let list = server
        .provider
        .list_tools()
        .await
        .expect("tools/list answers");
    let want = captured_tools("core/tests/data/real-tools/server-everything.json");
    assert_eq!(want.len(), 13, "the pinned version offers 13 tools");
    assert_eq!(list.tools, want);
    assert!(list.rejected.is_empty(), "{:?}", list.rejected);
    server.shutdown_leaving_nothing(1).await;
}

#[tokio::test]
async fn everything_echo_answers_text() {
    let server = direct().await;
    let result = server
        .call("echo", json!({"message": "hello, interop"}))
        .await;
    assert!(!result.is_error);
    assert_eq!(result.content, [Content::text("Echo: hello, interop")]);
    server.shutdown_leaving_nothing(1).await;
}

#[tokio::test]
async fn everything_tiny_image_is_an_image_block() {
    let server = direct().await;
    let result = server.call("get-tiny-image", json!({})).await;
    assert!(!result.is_error);
    let images: Vec<_> = result
        .content
        .iter()
        .filter_map(|c| match c {
            Content::Image { mime_type, data } => Some((mime_type.as_str(), data.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(images.len(), 1, "{:?}", result.content);
    assert_eq!(images[0].0, "image/png");
    assert!(images[0].1.starts_with(PNG_BASE64_PREFIX), "not a PNG");
    server.shutdown_leaving_nothing(1).await;
}

#[tokio::test]
async fn everything_reports_a_failing_tool_as_is_error() {
    // This server has no tool that fails on purpose; its argument validation
    // answers through the tool result with isError, as the spec recommends.
    let server = direct().await;
    let result = server.call("echo", json!({})).await;
    assert!(result.is_error, "{result:?}");
    assert!(
        result.joined_text().contains("Input validation error"),
        "{result:?}"
    );
    let ok = server.call("echo", json!({"message": "still here"})).await;
    assert_eq!(ok.joined_text(), "Echo: still here");
    server.shutdown_leaving_nothing(1).await;
}

#[tokio::test]
async fn everything_task_only_tool_fails_cleanly_and_the_provider_stays_usable() {
    let server = direct().await;
    let result = server
        .call("simulate-research-query", json!({"topic": "interop"}))
        .await;
    assert!(result.is_error, "{result:?}");
    assert!(result.joined_text().contains("task"), "{result:?}");
    let after = server.call("get-sum", json!({"a": 2, "b": 40})).await;
    assert_eq!(after.joined_text(), "The sum of 2 and 40 is 42.");
    server.shutdown_leaving_nothing(1).await;
}

#[tokio::test]
async fn everything_unasked_notifications_are_ignored() {
    // list_changed arrives right after `initialized`; simulated logging then
    // sends notifications/message at once and every 5 s, between answers.
    let server = direct().await;
    let first = server
        .provider
        .list_tools()
        .await
        .expect("tools/list answers");
    let started = server.call("toggle-simulated-logging", json!({})).await;
    assert!(
        started.joined_text().contains("Started simulated"),
        "{started:?}"
    );
    for i in 0..20 {
        let r = server
            .call("echo", json!({"message": format!("m{i}")}))
            .await;
        assert_eq!(r.joined_text(), format!("Echo: m{i}"));
    }
    let again = server
        .provider
        .list_tools()
        .await
        .expect("tools/list answers");
    assert_eq!(first, again);
    // With logging on, this server ignores the closed stdin: shutdown must
    // escalate to signals.
    server.shutdown_leaving_nothing(1).await;
}

#[tokio::test]
async fn everything_structured_and_resource_content_are_mapped() {
    let server = direct().await;
    let weather = server
        .call("get-structured-content", json!({"location": "New York"}))
        .await;
    let structured = weather.structured.as_ref().expect("structuredContent kept");
    assert!(structured["temperature"].is_number(), "{structured}");

    let links = server.call("get-resource-links", json!({"count": 2})).await;
    let uris: Vec<&str> = links
        .content
        .iter()
        .filter_map(|c| match c {
            Content::ResourceLink { uri, .. } => Some(uri.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(uris.len(), 2, "{:?}", links.content);
    assert!(
        uris.iter().all(|u| u.starts_with("demo://resource/")),
        "{uris:?}"
    );

    let reference = server.call("get-resource-reference", json!({})).await;
    let embedded = reference.content.iter().find_map(|c| match c {
        Content::Resource { uri, body, .. } => Some((uri.as_str(), body)),
        _ => None,
    });
    let (uri, body) = embedded.expect("an embedded resource block");
    assert!(uri.starts_with("demo://resource/"), "{uri}");
    assert!(
        matches!(body, ResourceBody::Text(t) if !t.is_empty()),
        "{body:?}"
    );
    server.shutdown_leaving_nothing(1).await;
}

#[tokio::test]
async fn everything_answers_calls_in_flight_together() {
    let server = direct().await;
    let begin = Instant::now();
    let long = async {
        let args = json!({"duration": 2, "steps": 2});
        let r = server.call("trigger-long-running-operation", args).await;
        (r, begin.elapsed())
    };
    let quick = async {
        let r = server.call("echo", json!({"message": "quick"})).await;
        (r, begin.elapsed())
    };
    let ((long, long_took), (quick, quick_took)) = tokio::join!(long, quick);
    assert_eq!(quick.joined_text(), "Echo: quick");
    assert!(
        long.joined_text()
            .contains("Long running operation completed"),
        "{long:?}"
    );
    assert!(long_took >= Duration::from_secs(2), "{long_took:?}");
    // Had the echo queued behind the 2 s call, it would take 2 s too.
    assert!(
        quick_took < Duration::from_secs(1),
        "the echo waited: {quick_took:?}"
    );
    server.shutdown_leaving_nothing(1).await;
}

#[tokio::test]
async fn everything_via_npx_leaves_no_process_after_shutdown() {
    let server = via_npx().await;
    let tools = server
        .provider
        .list_tools()
        .await
        .expect("tools/list answers");
    assert_eq!(tools.tools.len(), 13);
    let r = server.call("echo", json!({"message": "through npx"})).await;
    assert_eq!(r.joined_text(), "Echo: through npx");
    // npm exec, the shell it runs the bin with, and node.
    server.shutdown_leaving_nothing(3).await;
}

#[tokio::test]
async fn everything_via_sh_with_a_background_grandchild_leaves_no_process() {
    // The shell leaves a `sleep` behind that outlives the server: only a
    // signal to the whole process group ends it.
    let node = string(&installed(ENTRY));
    let script = format!("sleep 300 & node '{node}' stdio");
    let server = start("everything", vec!["sh".into(), "-c".into(), script]).await;
    let r = server.call("echo", json!({"message": "through sh"})).await;
    assert_eq!(r.joined_text(), "Echo: through sh");
    // sh, sleep and node.
    server.shutdown_leaving_nothing(3).await;
}

#[tokio::test]
async fn everything_dropped_without_shutdown_leaves_no_process() {
    // With logging on, node outlives its closed stdin and the npm process
    // above it: only the end of the whole group stops it.
    let server = via_npx().await;
    let started = server.call("toggle-simulated-logging", json!({})).await;
    assert!(
        started.joined_text().contains("Started simulated"),
        "{started:?}"
    );
    let before = server.processes(3).await;
    let tag = server.tag.clone();
    drop(server);
    let left = super::procs::survivors(
        &before,
        &tag,
        super::procs::Reaping::Deferred,
        super::GONE_WITHIN,
    )
    .await;
    assert!(left.is_empty(), "still there after drop: {left:?}");
}
