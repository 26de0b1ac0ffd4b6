//! mcp-stdio: a call sent while others are in flight, abandoned right
//! after its first poll (its line written at once, or waiting in the
//! outbox's queue for room in the pipe: `mcp-stdio/src/outbox.rs`): its
//! line must still go out, followed by its cancellation, and nothing may be
//! left waiting behind it.

mod common;

use std::pin::pin;

use common::{call, received, start, stop, text_args};
use spear_capabilities::{CallRequest, Provider};

#[tokio::test]
async fn a_call_abandoned_before_its_queued_line_is_written_still_sends_it_and_its_cancellation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("in.jsonl");
    let p = start(&["--log", log.to_str().expect("utf-8")]).await;
    {
        // One call in flight, so that the next one is sent behind it.
        let mut hang = pin!(p.call_tool(call("hang")));
        assert!(futures::poll!(hang.as_mut()).is_pending());
        let mut queued = pin!(p.call_tool(CallRequest::new("echo", text_args("queued"))));
        // Its first poll sends its line.
        assert!(futures::poll!(queued.as_mut()).is_pending());
        // Both are dropped here, the queued one first.
    }
    let after = p
        .call_tool(CallRequest::new("echo", text_args("after")))
        .await
        .expect("the provider stays usable");
    assert_eq!(after.joined_text(), "after");
    stop(p).await;
    let lines = received(&log);
    let position = |pred: &dyn Fn(&serde_json::Value) -> bool| {
        lines.iter().position(pred).expect("the line was received")
    };
    let queued = position(&|m| m["params"]["arguments"]["text"] == "queued");
    let queued_id = lines[queued]["id"].clone();
    let cancelled = position(&|m| {
        m["method"] == "notifications/cancelled" && m["params"]["requestId"] == queued_id
    });
    let after = position(&|m| m["params"]["arguments"]["text"] == "after");
    assert!(
        queued < cancelled,
        "the call went out before its cancellation"
    );
    assert!(cancelled < after, "both went out before the next call");
}
