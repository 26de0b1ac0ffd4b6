//! Issue 35.1: a declared output schema is checked. MCP tools: "Clients
//! SHOULD validate structured results against this schema". A call that
//! reached the server ran, so a mismatch is said, never turned into an
//! error a model would retry.

mod common;

use std::sync::Arc;

use common::{Bench, begin};
use serde_json::{Value, json};
use spear_capabilities::{AnswerStatus, Auto, CallResult, Content, ToolSpec};
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
