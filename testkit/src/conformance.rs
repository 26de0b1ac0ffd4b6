//! A conformance suite every [`Provider`] implementation runs.
//!
//! Each check is a `pub async fn` over `&dyn Provider` that panics with a
//! message when the provider does not behave as the core relies on (the
//! trait's `# Contract` among it). The provider under test must offer four
//! tools:
//!
//! - `echo`, with an object schema declaring a string `text`, whose result's
//!   text contains the `text` it was given;
//! - `fail`, whose result is the tool's own failure (`is_error`);
//! - `reject`, which the provider answers with [`Error::CallError`];
//! - `hang`, which does not answer while the suite waits (seconds).
//!
//! [`script_mock`] sets a [`MockProvider`](crate::MockProvider) up that way;
//! `spear-fixture-server` offers them as MCP tools. [`run_all`] runs every
//! check, shutdown last. A check that names the calls it makes, such as
//! [`a_dropped_call_is_abandoned_alone`] and
//! [`a_call_has_no_deadline_of_the_kinds_own`], runs on any provider's own
//! tools.

use std::pin::pin;
use std::time::Duration;

use futures::future::join_all;
use serde_json::{Map, Value, json};
use spear_capabilities::{CallRequest, CallResult, Error, Provider};

use crate::MockHandle;

/// Scripts a mock provider to offer the four tools the suite calls.
pub fn script_mock(handle: &MockHandle) {
    handle
        .add_simple_tool("echo", "Echoes its text", &["text"])
        .add_simple_tool("fail", "Fails as a tool", &[])
        .add_simple_tool("reject", "Answers with an error", &[])
        .add_simple_tool("hang", "Never answers", &[])
        .tool_latency("hang", Duration::from_secs(3600))
        .answer("fail", CallResult::text("the tool failed").with_error(true))
        .fail_call(
            "reject",
            crate::MockFailure::Reject(-32602, "rejected on purpose".into()),
        );
}

fn args(text: &str) -> Map<String, Value> {
    let Value::Object(map) = json!({ "text": text }) else {
        unreachable!()
    };
    map
}

async fn echo(p: &dyn Provider, text: &str) -> Result<CallResult, Error> {
    p.call_tool(CallRequest::new("echo", args(text))).await
}

/// The listing holds the suite's tools, each with an object schema and a
/// unique, valid name.
pub async fn lists_usable_tools(p: &dyn Provider) {
    let list = p.list_tools().await.expect("list_tools succeeds");
    let names: Vec<&str> = list.tools.iter().map(|t| t.name.as_str()).collect();
    for want in ["echo", "fail", "reject", "hang"] {
        assert!(
            names.contains(&want),
            "{}: no tool {want} in {names:?}",
            p.id()
        );
    }
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "duplicate names in {names:?}");
    for tool in &list.tools {
        assert!(
            (1..=128).contains(&tool.name.len())
                && tool
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)),
            "invalid name {:?}",
            tool.name
        );
        assert_eq!(
            tool.input_schema["type"], "object",
            "{}: not an object schema",
            tool.name
        );
    }
}

/// Listing twice gives the same tools (the gateway lists once per session,
/// but a reload lists again).
pub async fn listing_is_repeatable(p: &dyn Provider) {
    let first = p.list_tools().await.expect("first listing");
    let second = p.list_tools().await.expect("second listing");
    assert_eq!(first, second);
}

/// A text argument comes back intact, non-ASCII included.
pub async fn echo_round_trips_text(p: &dyn Provider) {
    let text = "héllo ✓ 42";
    let result = echo(p, text).await.expect("echo succeeds");
    assert!(!result.is_error, "echo reported a tool failure");
    assert!(result.joined_text().contains(text), "{result:?}");
}

/// A tool's own failure is a result with `is_error`, not an error.
pub async fn tool_failure_is_a_result(p: &dyn Provider) {
    let result = p
        .call_tool(CallRequest::new("fail", Map::new()))
        .await
        .expect("a failing tool still answers");
    assert!(result.is_error, "{result:?}");
}

/// A rejected call is [`Error::CallError`], leaves the provider available
/// and usable.
pub async fn rejected_call_leaves_the_provider_usable(p: &dyn Provider) {
    let err = p
        .call_tool(CallRequest::new("reject", Map::new()))
        .await
        .expect_err("reject is refused");
    assert!(
        matches!(&err, Error::CallError { tool, .. } if tool == "reject"),
        "{err:?}"
    );
    assert_eq!(err.unavailable_reason(), None);
    echo(p, "still here")
        .await
        .expect("usable after a rejection");
}

/// Many calls in flight at once each get their own answer.
pub async fn concurrent_calls_get_their_own_answers(p: &dyn Provider) {
    let texts: Vec<String> = (0..32).map(|i| format!("call number {i} of 32")).collect();
    let results = join_all(texts.iter().map(|t| echo(p, t))).await;
    for (text, result) in texts.iter().zip(results) {
        let result = result.expect("every concurrent call succeeds");
        let got = result.joined_text();
        // No text is a substring of another, so containment identifies it.
        assert!(got.contains(text.as_str()), "{text} got {got}");
    }
}

/// The contract's cancellation (`Provider`'s `# Contract`): a call whose
/// future is dropped while in flight, as its caller's deadline drops it, is
/// abandoned alone: the provider answers `next` at once (not after the
/// dropped call) and has not failed. `dropped` should be a call that does
/// not answer at once; one that does is dropped after its answer, and only
/// `next` is checked.
pub async fn a_dropped_call_is_abandoned_alone(
    p: &dyn Provider,
    dropped: CallRequest,
    next: CallRequest,
) {
    {
        let mut call = pin!(p.call_tool(dropped));
        // In flight for a moment, then its caller gives up.
        let _ = tokio::time::timeout(Duration::from_millis(100), call.as_mut()).await;
    }
    let answered = tokio::time::timeout(Duration::from_secs(10), p.call_tool(next))
        .await
        .unwrap_or_else(|_| panic!("{}: the call after a dropped one waited", p.id()));
    answered.unwrap_or_else(|e| panic!("{}: the call after a dropped one failed: {e}", p.id()));
    assert!(p.failure().is_none(), "{}: {:?}", p.id(), p.failure());
}

/// The contract's deadline (`Provider`'s `# Contract`): a call's deadline
/// is its caller's, and a kind sets none of its own. `slow` is a call that
/// takes longer than `start_timeout`, the one the provider was connected
/// with (the only timeout a kind keeps): it is answered, and the provider
/// has not failed.
pub async fn a_call_has_no_deadline_of_the_kinds_own(
    p: &dyn Provider,
    slow: CallRequest,
    start_timeout: Duration,
) {
    let began = std::time::Instant::now();
    let answered = p.call_tool(slow).await;
    let took = began.elapsed();
    answered.unwrap_or_else(|e| panic!("{}: a call past the start timeout failed: {e}", p.id()));
    assert!(
        took > start_timeout,
        "{}: the slow call took {took:?}, not past the start timeout of {start_timeout:?}",
        p.id()
    );
    assert!(p.failure().is_none(), "{}: {:?}", p.id(), p.failure());
}

/// `info` names the kind; nothing else is required of it.
pub async fn info_names_the_kind(p: &dyn Provider, kind: &str) {
    assert_eq!(p.info().kind, kind);
}

/// Shutdown succeeds, a second one too, and every later use is
/// [`Error::ShutDown`].
pub async fn shutdown_is_final_and_idempotent(p: &dyn Provider) {
    p.shutdown().await.expect("shutdown");
    p.shutdown().await.expect("a second shutdown is harmless");
    let list = p.list_tools().await.expect_err("listing after shutdown");
    assert!(matches!(list, Error::ShutDown { .. }), "{list:?}");
    let call = echo(p, "late").await.expect_err("call after shutdown");
    assert!(matches!(call, Error::ShutDown { .. }), "{call:?}");
}

/// Every check, in order, shutdown last.
pub async fn run_all(p: &dyn Provider, kind: &str) {
    lists_usable_tools(p).await;
    listing_is_repeatable(p).await;
    echo_round_trips_text(p).await;
    tool_failure_is_a_result(p).await;
    rejected_call_leaves_the_provider_usable(p).await;
    concurrent_calls_get_their_own_answers(p).await;
    let hang = CallRequest::new("hang", Map::new());
    a_dropped_call_is_abandoned_alone(p, hang, CallRequest::new("echo", args("after"))).await;
    info_names_the_kind(p, kind).await;
    shutdown_is_final_and_idempotent(p).await;
}
