//! Issue 35.1: a declared output schema is checked. MCP tools: "Clients
//! SHOULD validate structured results against this schema". A call that
//! reached the server ran, so a mismatch is said, never turned into an
//! error a model would retry.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Bench, begin};
use serde_json::{Value, json};
use spear_capabilities::internals::session::TIMEOUT_GRACE;
use spear_capabilities::{AnswerStatus, Auto, CallResult, Content, ToolSpec};
use spear_testkit::schemas::doubling_defs;
use spear_testkit::{MockHandle, ours};

fn weather_schema() -> Value {
    json!({"type": "object", "properties": {
        "temperature": {"type": "number"}, "conditions": {"type": "string"}
    }, "required": ["temperature", "conditions"]})
}

fn bench() -> (Bench, MockHandle) {
    let b = Bench::new(json!([
        {"id": "wx", "scope": "global", "read": ["weather", "broken"]}
    ]));
    let wx = b.provider("wx");
    wx.add_tool(
        ToolSpec::new("weather", json!({"type": "object"}))
            .with_description("The weather.")
            .with_output_schema(weather_schema()),
    )
    .add_tool(
        ToolSpec::new("broken", json!({"type": "object"}))
            .with_output_schema(json!({"type": "object", "$ref": "https://example.invalid/s"})),
    );
    (b, wx)
}

fn result(structured: Option<Value>) -> CallResult {
    let r = CallResult::new(vec![Content::text("Sunny, 21 degrees")]);
    match structured {
        Some(s) => r.with_structured(s),
        None => r,
    }
}

#[tokio::test]
async fn a_structured_result_that_does_not_match_is_said_and_the_call_ran() {
    let (b, wx) = bench();
    let s = b.session(Arc::new(Auto));
    let t = begin(&s).await;
    assert!(
        t.shown().text.contains("structured result: {"),
        "{}",
        t.shown().text
    );
    let described = ours(&t, "spear-capability describe wx/weather").await;
    assert!(
        described
            .text
            .contains("structured result (JSON Schema): {\"properties\""),
        "{}",
        described.text
    );

    wx.answer(
        "weather",
        result(Some(json!({"temperature": "hot", "conditions": 7}))),
    );
    let a = ours(&t, "spear-capability invoke wx/weather '{}'").await;
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    assert!(a.text.contains("Sunny, 21 degrees"), "{}", a.text);
    assert!(
        a.text.contains("The call to `wx/weather` ran, but its structured result does not match the tool's declared output schema; the first reason:\n"),
        "{}",
        a.text
    );
    let reason = a.structured_mismatch.clone().expect("typed");
    assert!(
        reason == "at /temperature: \"hot\" is not of type \"number\""
            || reason == "at /conditions: 7 is not of type \"string\"",
        "{reason}"
    );
    let invoked = b.sink.named("capability_invoked");
    assert_eq!(invoked[0]["outcome"], "ok");
    assert_eq!(invoked[0]["structured_mismatch"], reason.as_str());

    wx.answer("weather", result(None));
    let a = ours(&t, "spear-capability invoke wx/weather '{}'").await;
    assert_eq!(a.status, AnswerStatus::Ok);
    assert_eq!(
        a.structured_mismatch.as_deref(),
        Some("the tool declares an output schema, and its result has no structuredContent")
    );

    wx.answer(
        "weather",
        result(Some(json!({"temperature": 21, "conditions": "sunny"}))),
    );
    let a = ours(&t, "spear-capability invoke wx/weather '{}'").await;
    assert_eq!(
        (a.status, a.structured_mismatch.as_deref()),
        (AnswerStatus::Ok, None)
    );
    assert!(!a.text.contains("does not match"), "{}", a.text);

    // A result the tool reports as a failure is not checked.
    wx.answer("weather", result(None).with_error(true));
    let a = ours(&t, "spear-capability invoke wx/weather '{}'").await;
    assert_eq!(
        (a.status, a.structured_mismatch.as_deref()),
        (AnswerStatus::Failed, None)
    );
    assert!(
        b.sink.named("capability_invoked")[3]
            .get("structured_mismatch")
            .is_none()
    );
    s.close().await;
}

#[tokio::test]
async fn an_output_schema_that_cannot_be_used_is_said_once_and_results_go_unchecked() {
    let (b, wx) = bench();
    let s = b.session(Arc::new(Auto));
    let t = begin(&s).await;
    let unchecked = b.sink.named("output_unchecked");
    assert_eq!(unchecked.len(), 1, "{unchecked:?}");
    assert_eq!(unchecked[0]["tool"], "broken");
    wx.answer("broken", result(Some(json!([1]))));
    let a = ours(&t, "spear-capability invoke wx/broken '{}'").await;
    assert_eq!(
        (a.status, a.structured_mismatch.as_deref()),
        (AnswerStatus::Ok, None)
    );
    s.close().await;
}

/// An output schema that passes vetting and is slow to check: each of the
/// result's items reaches about 2^11 schema nodes (10 levels, each referring
/// twice to the next), so that 30 000 items take tens of seconds to check.
fn slow_schema() -> Value {
    json!({"type": "object", "$defs": doubling_defs(10),
           "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/d0"}}}})
}

/// A provider `slow` (timeout 0.5 s) whose tool `many` answers at once
/// with 30 000 structured items.
fn slow_bench() -> Bench {
    let b = Bench::new(json!([
        {"id": "slow", "scope": "global", "read": ["many"], "timeout": 0.5}
    ]));
    let slow = b.provider("slow");
    slow.add_tool(
        ToolSpec::new("many", json!({"type": "object"})).with_output_schema(slow_schema()),
    );
    let items: Vec<Value> = (0..30_000).map(|i| json!({"n": i})).collect();
    for _ in 0..4 {
        slow.answer(
            "many",
            result(Some(json!({"items": items}))).with_structured(json!({"items": items})),
        );
    }
    b
}

/// Issue 43.3: the output-schema check is bounded by what is left of the
/// call's bound (the entry's timeout and the grace); past it the call is
/// still reported as run, and its answer and audit record say the result
/// was not checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_too_slow_to_check_is_answered_within_the_calls_bound_and_said_unchecked() {
    let b = slow_bench();
    let s = b.session(Arc::new(Auto));
    let t = begin(&s).await;
    let bound = Duration::from_millis(500) + TIMEOUT_GRACE;
    let began = Instant::now();
    let a = ours(&t, "spear-capability invoke slow/many '{}'").await;
    let took = began.elapsed();
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    assert!(took < bound + Duration::from_secs(1), "after {took:?}");
    assert!(
        a.text.ends_with(
            "The call to `slow/many` ran, but its structured result was not checked against the tool's declared output schema: it was too long to check within the call's time bound."
        ),
        "{}",
        &a.text[a.text.len().saturating_sub(300)..]
    );
    assert_eq!(
        a.structured_unchecked.as_deref(),
        Some("it was too long to check within the call's time bound")
    );
    assert_eq!(a.structured_mismatch, None);
    let invoked = b.sink.named("capability_invoked");
    assert_eq!(invoked[0]["outcome"], "ok");
    assert_eq!(
        invoked[0]["structured_unchecked"],
        "it was too long to check within the call's time bound"
    );
    assert!(invoked[0].get("structured_mismatch").is_none());
    s.close().await;
}

/// A check past its bound cannot be stopped, so it keeps one of its
/// provider's places for checks: the checks in flight are bounded
/// (`MAX_CHECKS_IN_FLIGHT`, two), and a result that finds no place free
/// within its bound is said not checked, without starting a check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_checks_keep_their_places_so_that_checks_in_flight_stay_bounded() {
    let b = slow_bench();
    let s = b.session(Arc::new(Auto));
    let t = begin(&s).await;
    let mut reasons = Vec::new();
    for _ in 0..3 {
        let a = ours(&t, "spear-capability invoke slow/many '{}'").await;
        assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
        reasons.push(a.structured_unchecked.expect("not checked"));
    }
    assert_eq!(
        reasons,
        [
            "it was too long to check within the call's time bound",
            "it was too long to check within the call's time bound",
            "2 earlier checks of the provider's schemas were still running",
        ]
    );
    s.close().await;
}
