//! What the core gives the deployment's operator and never a turn: a ready
//! provider's own description in its state, and a call's raw result in its
//! answer.

mod common;

use std::sync::Arc;

use common::{Bench, begin};
use serde_json::json;
use spear_capabilities::{AnswerStatus, Auto, CallResult, Content, ProviderInfo, ProviderState};

#[tokio::test]
async fn a_ready_providers_state_carries_what_its_kind_says_of_it() {
    let b = Bench::new(json!([{"id": "notes", "scope": "global", "read": ["get_note"]}]));
    b.provider("notes")
        .add_simple_tool("get_note", "Read one note.", &["id"]);
    let s = b.session(Arc::new(Auto));
    let t = begin(&s).await;
    let states = s.provider_states();
    let ProviderState::Ready { tools, info, .. } = &states[0].1 else {
        panic!("{states:?}");
    };
    assert_eq!(*tools, 1);
    assert_eq!(info, &ProviderInfo::new("mock").with_detail("tools", "1"));
    // The turn is shown none of it.
    assert!(!t.shown().text.contains("mock"), "{}", t.shown().text);
    s.close().await;
}

#[tokio::test]
async fn an_invoke_that_reached_its_provider_carries_the_raw_result() {
    let b = Bench::new(json!([{"id": "notes", "scope": "global", "read": ["get_note", "broken"]}]));
    let raw = CallResult::new(vec![
        Content::text("note 7"),
        Content::Image {
            mime_type: "image/png".into(),
            data: "AA==".into(),
        },
    ])
    .with_structured(json!({"id": 7}));
    let failed = CallResult::text("no such note").with_error(true);
    b.provider("notes")
        .add_simple_tool("get_note", "Read one note.", &["id"])
        .add_simple_tool("broken", "Fails.", &[])
        .answer("get_note", raw.clone())
        .answer("broken", failed.clone());
    let s = b.session(Arc::new(Auto));
    let t = begin(&s).await;

    let ok = t
        .answer(r#"spear-capability invoke notes/get_note '{"id": "7"}'"#)
        .await
        .expect("ours");
    assert_eq!(ok.status, AnswerStatus::Ok);
    assert!(ok.text.contains("note 7"), "{}", ok.text);
    assert_eq!(ok.operator_result().cloned(), Some(raw));

    let tool_error = t
        .answer("spear-capability invoke notes/broken '{}'")
        .await
        .expect("ours");
    assert_eq!(tool_error.status, AnswerStatus::Failed);
    assert_eq!(tool_error.operator_result().cloned(), Some(failed));

    // Refused before any provider: no result.
    let refused = t
        .answer(r#"spear-capability invoke notes/get_note '{"id": 7}'"#)
        .await
        .expect("ours");
    assert_eq!(refused.status, AnswerStatus::Refused, "{}", refused.text);
    assert_eq!(refused.operator_result().cloned(), None);
    let listed = t.answer("spear-capability list").await.expect("ours");
    assert_eq!(listed.operator_result().cloned(), None);
    s.close().await;
}
