//! What an embedding runtime does every day, through the public API:
//! cancel a turn's answer, close a session shared by clones, run without a
//! tokio runtime by mistake, write its own permission mode and audit sink,
//! and start providers before the first turn.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Bench, begin, implementation};
use futures::future::BoxFuture;
use serde_json::json;
use spear_capabilities::{
    AnswerStatus, Ask, Auto, Error, PermissionMode, ProviderState, Refusal, TurnError, WritePolicy,
    WriteRequest, async_trait,
    audit::{AuditRecord, AuditSink},
};
use spear_testkit::{MockHandle, ours};

const WRITE: &str = r#"spear-capability invoke notes/add_note '{"text": "hi"}'"#;

/// A session bench with the mock `notes` (a READ and a slow WRITE), and
/// the mock's handle.
fn bench() -> (Bench, MockHandle) {
    let b = Bench::new(json!([
        {"id": "notes", "scope": "global", "read": ["get_note"], "write": "confirm"}
    ]));
    let notes = b.provider("notes");
    notes
        .add_simple_tool("get_note", "Read one note.", &["id"])
        .add_simple_tool("add_note", "Create a note.", &["text"])
        .tool_latency("add_note", Duration::from_secs(1));
    (b, notes)
}

/// A person who answers after `after`, `yes`.
fn person(after: Duration, yes: bool) -> Ask {
    Ask::new(move |_| -> BoxFuture<'static, bool> {
        Box::pin(async move {
            tokio::time::sleep(after).await;
            yes
        })
    })
}

/// Drops the answer to `line` after `after`.
async fn drop_after(turn: &spear_capabilities::Turn, line: &str, after: Duration) {
    let dropped = tokio::time::timeout(after, turn.answer(line)).await;
    assert!(dropped.is_err(), "answered before it was dropped");
}

#[tokio::test(start_paused = true)]
async fn a_dropped_answer_is_recorded_at_every_point_it_can_be_dropped() {
    // Before the person answers: nothing was approved, nothing sent.
    let (b, notes) = bench();
    let s = b.session(Arc::new(person(Duration::from_secs(60), true)));
    let t = begin(&s).await;
    drop_after(&t, WRITE, Duration::from_secs(1)).await;
    assert!(b.sink.named("write_approved").is_empty());
    assert!(b.sink.named("capability_invoked").is_empty());
    assert!(notes.calls().is_empty());

    // After the approval, while the call is in flight: the approval and
    // the call are recorded, the call as cancelled.
    let (b, notes) = bench();
    let s = b.session(Arc::new(person(Duration::from_millis(100), true)));
    let t = begin(&s).await;
    drop_after(&t, WRITE, Duration::from_millis(300)).await;
    let approved = b.sink.named("write_approved");
    assert_eq!(approved.len(), 1);
    assert_eq!(approved[0]["capability"], "notes/add_note");
    assert_eq!(approved[0]["mode"], "ask");
    let invoked = b.sink.named("capability_invoked");
    assert_eq!(invoked.len(), 1);
    assert_eq!(invoked[0]["outcome"], "cancelled");
    assert_eq!(invoked[0]["arguments"], json!({"text": "hi"}));
    assert_eq!(approved[0]["arguments"], json!({"text": "hi"}));
    assert_eq!(notes.calls().len(), 1, "the call reached the provider");

    // A READ in flight: no approval, the call recorded as cancelled; the
    // provider stays usable.
    let (b, notes) = bench();
    notes.tool_latency("get_note", Duration::from_secs(1));
    let s = b.session(Arc::new(Auto));
    let t = begin(&s).await;
    drop_after(
        &t,
        "spear-capability invoke notes/get_note '{}'",
        Duration::from_millis(10),
    )
    .await;
    assert_eq!(
        b.sink.named("capability_invoked")[0]["outcome"],
        "cancelled"
    );
    assert!(b.sink.named("provider_failed").is_empty());
}

#[tokio::test]
async fn closing_one_clone_closes_the_session_for_every_clone() {
    let (b, notes) = bench();
    let first = b.session(Arc::new(Auto));
    let second = first.clone();
    let t = begin(&first).await;
    assert!(!first.is_closed());
    second.close().await;
    assert!(first.is_closed() && second.is_closed());
    assert_eq!(notes.shutdown_count(), 1);
    // A turn of before the close: refused, the provider untouched.
    let a = ours(&t, "spear-capability invoke notes/get_note '{}'").await;
    assert_eq!(a.status, AnswerStatus::Refused);
    assert_eq!(
        a.text,
        "External capabilities are not available: the session that offered them is closed."
    );
    assert!(notes.calls().is_empty());
    // A turn of after cannot begin: an error SPEAR can match, with the
    // words a turn may be told.
    let later = first.begin_turn(implementation()).await;
    assert_eq!(later.expect_err("closed"), TurnError::SessionClosed);
    assert_eq!(TurnError::SessionClosed.turn_text(), a.text);
    // A stop, never a failure; closing again is harmless.
    first.close().await;
    assert_eq!(b.sink.named("provider_stopped").len(), 1);
    assert!(b.sink.named("provider_failed").is_empty());
    assert_eq!(
        b.sink.named("gateway_absent")[0]["reason"],
        "session closed"
    );
    assert!(matches!(
        first.provider_states()[0].1,
        ProviderState::Stopped
    ));
}

/// A call in flight when another clone closes the session was sent: its
/// answer says its outcome is not known (never "refused"), at once, not
/// after the provider's answer; the audit says `closed`, not failed.
#[tokio::test]
async fn a_call_in_flight_when_the_session_closes_is_sent_with_its_outcome_unknown() {
    let (b, notes) = bench();
    notes.tool_latency("get_note", Duration::from_secs(5));
    let s = b.session(Arc::new(Auto));
    let t = begin(&s).await;
    let began = std::time::Instant::now();
    let (answer, ()) = tokio::join!(
        ours(&t, "spear-capability invoke notes/get_note '{}'"),
        async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            s.clone().close().await;
        }
    );
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(
        answer.status,
        AnswerStatus::OutcomeUnknown,
        "{}",
        answer.text
    );
    assert_eq!(
        answer.text,
        "The call to `notes/get_note` was sent, but the session closed before its answer came: whether it ran is not known."
    );
    assert_eq!(b.sink.named("capability_invoked")[0]["outcome"], "closed");
    assert!(b.sink.named("provider_failed").is_empty());
}

/// A session dropped without `close` (its turns too) records each started
/// provider's stop, so that the trail does not end at the last call.
#[tokio::test]
async fn a_session_dropped_without_close_records_each_providers_stop() {
    let (b, _notes) = bench();
    let s = b.session(Arc::new(Auto));
    let t = begin(&s).await;
    let a = ours(&t, "spear-capability invoke notes/get_note '{}'").await;
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    assert!(b.sink.named("provider_stopped").is_empty());
    drop(t);
    drop(s);
    let stopped = b.sink.named("provider_stopped");
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    assert_eq!(stopped[0]["provider"], "notes");
    assert_eq!(
        stopped[0]["error"],
        "the session was dropped without close: the provider was ended at once, without its grace"
    );
}

#[test]
fn without_a_tokio_runtime_a_turn_cannot_begin_and_nothing_panics() {
    let (b, _) = bench();
    let s = b.session(Arc::new(Auto));
    let e = futures::executor::block_on(s.begin_turn(implementation()))
        .expect_err("no runtime: no turn");
    assert_eq!(e, TurnError::NoRuntime);
    assert_eq!(
        e.turn_text(),
        "External capabilities are not available to this turn: SPEAR's capability gateway runs on a tokio runtime, and none is running here."
    );
    assert!(
        b.sink.named("gateway_absent")[0]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("no tokio runtime"))
    );
    assert!(matches!(
        s.start_providers(&implementation()),
        Err(Error::NoRuntime)
    ));
    assert!(b.connector.connects().is_empty());
    futures::executor::block_on(s.close());
    assert!(s.is_closed());
}

#[tokio::test]
async fn providers_can_be_started_before_the_first_turn() {
    let (b, _) = bench();
    let s = b.session(Arc::new(Auto));
    assert_eq!(s.start_providers(&implementation()).expect("a runtime"), 1);
    assert_eq!(s.start_providers(&implementation()).expect("a runtime"), 0);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(matches!(
        s.provider_states()[0].1,
        ProviderState::Ready { .. }
    ));
    let t = begin(&s).await;
    assert!(t.shown().text.contains("notes/get_note (READ)"));
    assert_eq!(b.connector.connects(), ["notes"], "started once");
}

/// A permission mode holding a closure, with no `Debug`, written with the
/// re-exported `async_trait`.
struct Tally {
    seen: Arc<Mutex<Vec<String>>>,
    decide: Box<dyn Fn(&WriteRequest) -> bool + Send + Sync>,
}

#[async_trait]
impl PermissionMode for Tally {
    fn name(&self) -> &str {
        "tally"
    }
    async fn allow_write(&self, _: WritePolicy, request: &WriteRequest) -> bool {
        self.seen
            .lock()
            .expect("lock")
            .push(request.capability.clone());
        (self.decide)(request)
    }
}

/// An audit sink with no `Debug`: counts records.
struct Counter(Arc<Mutex<usize>>);

impl AuditSink for Counter {
    fn record(&self, _: AuditRecord) -> Result<(), spear_capabilities::audit::AuditError> {
        *self.0.lock().expect("lock") += 1;
        Ok(())
    }
}

#[tokio::test]
async fn an_embedder_writes_its_own_mode_and_sink_with_what_the_crate_exports() {
    let (b, notes) = bench();
    notes.tool_latency("add_note", Duration::ZERO);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let count = Arc::new(Mutex::new(0));
    let mode = Tally {
        seen: Arc::clone(&seen),
        decide: Box::new(|r| r.arguments.contains("hi")),
    };
    let session = spear_capabilities::Session::open(
        Arc::clone(&b.registry),
        spear_capabilities::SessionOptions::new("own", Arc::new(mode))
            .with_audit(spear_capabilities::Audit::new(Arc::new(Counter(
                Arc::clone(&count),
            ))))
            .with_connector(b.connector.clone()),
    );
    let t = begin(&session).await;
    assert_eq!(ours(&t, WRITE).await.status, AnswerStatus::Ok);
    assert_eq!(*seen.lock().expect("lock"), ["notes/add_note"]);
    assert!(
        *count.lock().expect("lock") >= 3,
        "selection, exposure, call"
    );
    session.close().await;
}

/// What an embedder's program names is at the crate root or in its public
/// modules, with the crates its signatures need (`BoxFuture` for
/// `Ask::new`, `serde_json` for settings and results, `kind::inventory` for
/// a kind): nothing from `internals`, no dependency of its own. The
/// provider's raw result is behind an operator-only accessor.
#[tokio::test]
async fn an_embedder_needs_nothing_but_the_crate_and_its_public_modules() {
    use spear_capabilities::serde_json::{Map, Value};
    use spear_capabilities::{
        BoxFuture, TurnKind, exposure::CapabilityClass, registry::RequestClass,
    };
    let _registration =
        spear_capabilities::kind::inventory::iter::<spear_capabilities::kind::ProviderKind>;
    let settings: spear_capabilities::kind::KindSettings =
        Map::from_iter([("k".into(), Value::Null)]);
    assert_eq!(settings.len(), 1);
    let ask = Ask::new(|_: WriteRequest| -> BoxFuture<'static, bool> { Box::pin(async { true }) });
    assert_eq!(ask.name(), "ask");
    assert_eq!(CapabilityClass::Read.as_str(), "READ");
    assert_eq!(RequestClass::General.as_str(), "general");
    assert_eq!(TurnKind::Implementation.as_str(), "implementation");
    let file = spear_capabilities::Registry::locate(
        std::path::Path::new("/etc/spear/projects.json"),
        None,
    );
    assert_eq!(file, std::path::Path::new("/etc/spear/capabilities.json"));

    let (b, _notes) = bench();
    let s = b.session(Arc::new(Auto));
    let t = begin(&s).await;
    let a = ours(&t, "spear-capability invoke notes/get_note '{}'").await;
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    // For the operator: the provider's own result, not the framed text.
    let raw = a.operator_result().expect("the call came back");
    assert!(!a.text.is_empty() && raw.structured.is_none());
    assert!(a.clone().into_operator_result().is_some());
    s.close().await;
}

/// An embedder tells a refused entry's problems apart by their kind, not
/// their words: a misspelt key, a key given twice, a duplicate id, each
/// with where it is in the file.
#[test]
fn an_embedder_tells_what_is_wrong_with_an_entry_by_its_kind() {
    use spear_capabilities::{Audit, Registry, kind::EntryProblemKind};
    let text = br#"{"providers": [
  {"id": "notes", "kind": "mock", "scope": "global", "timout": 5},
  {"id": "notes", "kind": "mock", "write": "allow", "write": "refuse"}
]}"#;
    let registry = Registry::parse(
        text,
        std::path::Path::new("/etc/spear/capabilities.json"),
        &spear_testkit::kinds::mock(),
        &Audit::null(),
    )
    .expect("parses");
    let mut said = Vec::new();
    for refused in registry.refused() {
        for problem in &refused.problems {
            let what = match problem.kind {
                EntryProblemKind::UnknownKey => "a misspelt key",
                EntryProblemKind::DuplicateKey => "a key given twice",
                EntryProblemKind::DuplicateId => "an id taken",
                _ => "something else",
            };
            let at = problem.position.expect("placed");
            said.push(format!(
                "{}:{} {what} ({})",
                at.line, at.column, problem.key
            ));
        }
    }
    assert_eq!(
        said,
        [
            "2:54 a misspelt key (timout)",
            "3:4 an id taken (id)",
            "3:53 a key given twice (write)",
        ]
    );
}

#[tokio::test]
async fn each_refusal_says_its_reason_as_a_value_named_as_its_audit_record_names_it() {
    let (b, _notes) = bench();
    let refusals = |b: &Bench| -> Vec<String> {
        b.sink
            .named("capability_refused")
            .iter()
            .map(|r| r["refusal"].as_str().unwrap_or("(none)").to_owned())
            .collect()
    };
    let cases = [
        ("spear-capability frobnicate", Refusal::BadCommand),
        (
            "spear-capability invoke notes/nothing '{}'",
            Refusal::NotOffered,
        ),
        (
            r#"spear-capability invoke notes/get_note '{"id": 7}'"#,
            Refusal::ArgumentsDoNotFit,
        ),
        (
            "spear-capability describe notes/get_note no_such",
            Refusal::NoSuchProperty,
        ),
        (WRITE, Refusal::WriteDeclined),
    ];
    let s = b.session(Arc::new(person(Duration::ZERO, false)));
    let t = begin(&s).await;
    for (line, want) in cases {
        let answer = ours(&t, line).await;
        assert_eq!(
            answer.status,
            AnswerStatus::Refused,
            "{line}: {}",
            answer.text
        );
        assert_eq!(answer.refusal(), Some(&want), "{line}: {}", answer.text);
    }
    let names: Vec<&str> = cases.iter().map(|(_, r)| r.as_str()).collect();
    assert_eq!(refusals(&b), names);
    // An answer that is not a refusal has none.
    let read = ours(
        &t,
        r#"spear-capability invoke notes/get_note '{"id": "7"}'"#,
    )
    .await;
    assert_eq!((read.status, read.refusal()), (AnswerStatus::Ok, None));
    s.close().await;
    let closed = ours(&t, "spear-capability list").await;
    assert_eq!(closed.refusal(), Some(&Refusal::SessionClosed));

    // A mode of the embedder's own that says no is the mode's refusal, not
    // the person's.
    let (b, _notes) = bench();
    let mode = Tally {
        seen: Arc::default(),
        decide: Box::new(|_| false),
    };
    let s = b.session(Arc::new(mode));
    let t = begin(&s).await;
    assert_eq!(
        ours(&t, WRITE).await.refusal(),
        Some(&Refusal::WriteRefusedByMode)
    );
    assert_eq!(refusals(&b), ["write_refused_by_mode"]);
    s.close().await;

    // A provider whose write policy is `refuse`.
    let b = Bench::new(json!([{"id": "notes", "scope": "global", "read": ["get_note"]}]));
    b.provider("notes")
        .add_simple_tool("add_note", "Create a note.", &["text"]);
    let s = b.session(Arc::new(Auto));
    let t = begin(&s).await;
    assert_eq!(
        ours(&t, WRITE).await.refusal(),
        Some(&Refusal::WriteRefusedByPolicy)
    );
    assert_eq!(refusals(&b), ["write_refused_by_policy"]);
    s.close().await;
}

#[test]
fn a_runtime_shutdown_fails_its_providers_when_it_happens_and_the_next_turn_has_them_again() {
    let (b, _notes) = bench();
    let runtime = |name| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect(name)
    };
    let s = b.session(Arc::new(Auto));
    let a = runtime("runtime A");
    a.block_on(async {
        let t = begin(&s).await;
        assert!(t.shown().text.contains("notes/get_note (READ)"));
    });
    assert!(matches!(
        s.provider_states()[0].1,
        ProviderState::Ready { .. }
    ));
    drop(a);

    // At once: no turn, no call since.
    match &s.provider_states()[0].1 {
        ProviderState::Unavailable { reason, message } => {
            assert_eq!(*reason, spear_capabilities::UnavailableReason::Crashed);
            assert!(
                message.contains("the runtime that ran it has shut down"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    let failed = b.sink.named("provider_failed");
    assert_eq!(failed.len(), 1, "{:?}", b.sink.names());
    assert_eq!(failed[0]["reason"], "crashed");
    assert_eq!(
        b.sink.names().last().map(String::as_str),
        Some("provider_failed")
    );
    let notices = s.take_notices();
    assert!(
        notices.iter().any(|n| n.provider() == Some("notes")),
        "{notices:?}"
    );

    // The next turn, on a live runtime, has it again.
    runtime("runtime B").block_on(async {
        let t = begin(&s).await;
        assert!(
            t.shown().text.contains("notes/get_note (READ)"),
            "{}",
            t.shown().text
        );
        let read = ours(
            &t,
            r#"spear-capability invoke notes/get_note '{"id": "1"}'"#,
        )
        .await;
        assert_eq!(read.status, AnswerStatus::Ok, "{}", read.text);
        let restarted = b.sink.named("provider_restarted");
        assert_eq!(restarted.len(), 1);
        assert_eq!(restarted[0]["attempt"], 1);
        assert_eq!(b.connector.connects(), ["notes", "notes"]);
        s.close().await;
    });
}

#[test]
fn a_start_cut_short_by_its_runtimes_shutdown_fails_then_and_starts_again_next_turn() {
    let (b, _notes) = bench();
    b.connector
        .start_latency("notes", Duration::from_secs(3600));
    let runtime = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    };
    let s = b.session(Arc::new(Auto));
    let a = runtime();
    a.block_on(async { s.start_providers(&implementation()).expect("a runtime") });
    assert!(matches!(
        s.provider_states()[0].1,
        ProviderState::Starting { .. }
    ));
    drop(a);
    match &s.provider_states()[0].1 {
        ProviderState::Unavailable { message, .. } => assert!(
            message.contains("the runtime that ran it has shut down"),
            "{message}"
        ),
        other => panic!("still {other:?}"),
    }
    assert_eq!(b.sink.named("provider_failed").len(), 1);

    b.connector.start_latency("notes", Duration::ZERO);
    runtime().block_on(async {
        let t = begin(&s).await;
        assert!(
            t.shown().text.contains("notes/get_note (READ)"),
            "{}",
            t.shown().text
        );
        s.close().await;
    });
}
