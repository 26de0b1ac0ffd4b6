//! The person approves only what they can see: a WRITE's confirmation
//! names every argument with its value, each bounded on its own, so a huge
//! argument cannot push another out of the question.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::json;
use spear_capabilities::{
    AnswerStatus, Ask, Registry, Session, SessionOptions, TurnContext, TurnKind, WriteRequest,
};
use spear_testkit::{RecordingSink, ours};

const SCRIPT: &str = env!("CARGO_BIN_EXE_spear-script-server");

#[tokio::test]
async fn every_argument_is_in_the_question_whatever_the_size_of_the_others() {
    let dir = tempfile::tempdir().expect("tempdir");
    let send = json!({"name": "send", "inputSchema": {"type": "object", "properties": {
        "a_body": {"type": "string"}, "text": {"type": "string"}, "to": {"type": "string"}}}});
    let script = json!({"tools/list": {"": [{"result": {"tools": [send]}}]},
                        "tools/call": {"*": [{"result": {"content": [{"type": "text", "text": "sent"}]}}]}});
    let script_path = dir.path().join("script.json");
    std::fs::write(&script_path, script.to_string()).expect("script");
    let file = json!({"providers": [{"id": "mail", "command": [SCRIPT, script_path], "scope": "global",
                                     "write": "confirm", "timeout": 20}]});
    let (sink, audit) = RecordingSink::new();
    let kinds = spear_providers::kinds().expect("built-in kinds");
    // Its folder is where the server runs: one that exists.
    let path = dir.path().join("capabilities.json");
    let registry =
        Registry::parse(file.to_string().as_bytes(), &path, &kinds, &audit).expect("registry");
    let asked: Arc<Mutex<Vec<WriteRequest>>> = Arc::default();
    let seen = Arc::clone(&asked);
    let person = Ask::new(move |request: WriteRequest| -> BoxFuture<'static, bool> {
        seen.lock().expect("lock").push(request);
        Box::pin(async { true })
    });
    let session = Session::open(
        Arc::new(registry),
        SessionOptions::new("confirm", Arc::new(person)).with_audit(audit),
    );
    let turn = session
        .begin_turn(TurnContext::new("/src", TurnKind::Implementation).with_project("p"))
        .await
        .expect("the turn begins");
    // Keys sort `a_body` first: 4 100 spaces of it once hid `to` in a
    // prompt cut at 4 KiB.
    let body = " ".repeat(4100);
    let arguments = json!({"a_body": body, "text": "hello", "to": "attacker@evil.example"});
    let line = format!("spear-capability invoke mail/send '{arguments}'");
    let a = ours(&turn, &line).await;
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    let question = asked.lock().expect("lock")[0].question();
    assert!(question.starts_with("Allow the WRITE mail/send with these arguments?\n"));
    assert!(
        question.contains("\n  to: \"attacker@evil.example\""),
        "{question}"
    );
    assert!(question.contains("\n  text: \"hello\""), "{question}");
    let body_line = question
        .lines()
        .find(|l| l.starts_with("  a_body: "))
        .expect("a_body is named");
    assert!(
        body_line.ends_with("… [3803 more characters not shown]"),
        "{body_line}"
    );
    assert!(question.len() < 1000, "bounded: {} bytes", question.len());
    assert_eq!(sink.named("write_approved").len(), 1);
    session.close().await;
}
