//! The custom kind works through the unchanged core: registry, selection,
//! the default connector (which finds kinds by name), exposure and calls.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use spear_capabilities::{
    AnswerStatus, Audit, Auto, CallRequest, Registry, Session, SessionOptions, TurnContext,
    TurnKind,
    kind::{ConnectRequest, Kinds},
};
use spear_example_kind as _;
use spear_testkit::{conformance, ours};

#[test]
fn the_kind_is_registered_by_linking_the_crate() {
    assert_eq!(Kinds::linked().expect("linked").names(), ["calculator"]);
}

#[tokio::test]
async fn a_turn_uses_the_calculator_through_the_gateway() {
    let file = br#"{"providers": [
        {"id": "calc", "kind": "calculator", "max": 1000, "scope": "global", "read": ["add"]},
        {"id": "bad", "kind": "calculator", "max": -1}
    ]}"#;
    // The kinds can also be named outright: the one kind of this crate.
    let kinds = Kinds::new([&spear_example_kind::KIND]).expect("one kind");
    let registry = Registry::parse(
        file,
        Path::new("/etc/capabilities.json"),
        &kinds,
        &Audit::null(),
    )
    .expect("parses");
    assert_eq!(
        registry.refused()[0].to_string(),
        r#"providers[1] ("bad") refused: key "max": must be a positive integer, found -1;"#
    );
    let session = Session::open(Arc::new(registry), SessionOptions::new("s", Arc::new(Auto)));
    let turn = session
        .begin_turn(TurnContext::new("/src", TurnKind::Implementation).with_project("p"))
        .await
        .expect("the turn begins");
    assert!(turn.shown().text.contains("calc/add (READ)"));
    assert!(turn.shown().text.contains("calc/multiply (WRITE)"));
    let a = ours(
        &turn,
        r#"spear-capability invoke calc/add '{"a": 2, "b": 40}'"#,
    )
    .await;
    assert_eq!(a.status, AnswerStatus::Ok);
    assert!(a.text.contains("\n42\n"), "{}", a.text);
    let big = ours(
        &turn,
        r#"spear-capability invoke calc/add '{"a": 2000, "b": 1}'"#,
    )
    .await;
    assert_eq!(big.status, AnswerStatus::Failed);
    assert!(
        big.text.contains("operands above 1000 are refused"),
        "{}",
        big.text
    );
    let write = ours(
        &turn,
        r#"spear-capability invoke calc/multiply '{"a": 2, "b": 3}'"#,
    )
    .await;
    assert_eq!(
        write.status,
        AnswerStatus::Refused,
        "multiply is a WRITE and the default policy refuses"
    );
    session.close().await;
}

/// The kind keeps `Provider`'s contract, as testkit's conformance check
/// holds every kind to it: a call dropped by its caller leaves the provider
/// answering the next at once.
#[tokio::test]
async fn the_calculator_keeps_the_provider_contract() {
    let request = ConnectRequest::new("calc", Map::new(), Duration::from_secs(5), "/");
    let p = (spear_example_kind::KIND.connect)(request)
        .await
        .expect("connects");
    let Value::Object(operands) = json!({"a": 2, "b": 40}) else {
        unreachable!()
    };
    let add = CallRequest::new("add", operands);
    conformance::a_dropped_call_is_abandoned_alone(p.as_ref(), add.clone(), add).await;
}
