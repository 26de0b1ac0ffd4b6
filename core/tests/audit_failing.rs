//! Issue 32.1: the audit trail cannot fail silently. A sink that cannot
//! write: READs go on, a WRITE is refused before it is asked for or sent,
//! the session is told once, the operator can read how many were lost.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use common::{Bench, begin};
use serde_json::json;
use spear_capabilities::{
    AnswerStatus, Audit, Auto, Notice, Refusal, Session, SessionOptions,
    audit::{AuditError, AuditRecord, AuditSink},
};
use spear_testkit::{MockHandle, ours};

/// A sink that fails while `failing` is set, and keeps what it wrote.
#[derive(Default)]
struct Switch {
    failing: AtomicBool,
    written: Mutex<Vec<AuditRecord>>,
}

impl AuditSink for Switch {
    fn record(&self, record: AuditRecord) -> Result<(), AuditError> {
        if self.failing.load(Ordering::SeqCst) {
            return Err(AuditError::new("No space left on device (os error 28)"));
        }
        self.written.lock().expect("lock").push(record);
        Ok(())
    }
}

/// A session in auto mode over the mock `notes` (`get_note` a READ,
/// `add_note` a WRITE, allowed), recording into a [`Switch`].
fn switched() -> (Bench, MockHandle, Arc<Switch>, Audit, Session) {
    let b = Bench::new(json!([
        {"id": "notes", "scope": "global", "read": ["get_note"], "write": "allow"}
    ]));
    let notes = b.provider("notes");
    notes
        .add_simple_tool("get_note", "Read one note.", &["id"])
        .add_simple_tool("add_note", "Create a note.", &["text"]);
    let sink = Arc::new(Switch::default());
    let audit = Audit::new(sink.clone());
    let session = Session::open(
        Arc::clone(&b.registry),
        SessionOptions::new("s1", Arc::new(Auto))
            .with_audit(audit.clone())
            .with_connector(b.connector.clone()),
    );
    (b, notes, sink, audit, session)
}

#[tokio::test]
async fn a_failing_trail_refuses_writes_lets_reads_on_and_is_said_once() {
    let (_b, notes, sink, audit, session) = switched();
    let turn = begin(&session).await;
    assert!(audit.failure().is_none());

    sink.failing.store(true, Ordering::SeqCst);
    let read = ours(
        &turn,
        r#"spear-capability invoke notes/get_note '{"id": "1"}'"#,
    )
    .await;
    assert_eq!(read.status, AnswerStatus::Ok, "{}", read.text);
    let write = ours(
        &turn,
        r#"spear-capability invoke notes/add_note '{"text": "x"}'"#,
    )
    .await;
    assert_eq!(write.status, AnswerStatus::Refused, "{}", write.text);
    assert_eq!(write.refusal(), Some(&Refusal::AuditFailing));
    assert_eq!(
        write.text,
        "`notes/add_note` was not run: it is a WRITE, and the audit trail is failing, so its approval and invocation could not be recorded before it was sent."
    );
    assert!(
        notes.calls().iter().all(|c| c.tool != "add_note"),
        "the WRITE was sent"
    );
    let failure = audit.failure().expect("counted");
    assert_eq!(
        failure.last_error.reason,
        "No space left on device (os error 28)"
    );
    let notices = session.take_notices();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        matches!(&notices[0], Notice::AuditFailing(f) if f.lost >= 1),
        "{notices:?}"
    );
    assert_eq!(notices[0].provider(), None);
    if let Notice::AuditFailing(failure) = &notices[0] {
        // A std error whose source is the sink's own.
        let e: &dyn std::error::Error = failure;
        assert!(
            e.source()
                .is_some_and(|s| s.to_string().contains("os error 28"))
        );
    }
    let text = notices[0].text();
    assert!(
        text.starts_with("The audit trail is failing (")
            && text.contains("WRITE capabilities are refused"),
        "{text}"
    );
    assert!(session.take_notices().is_empty(), "said once");

    // The trail records again: so may a WRITE.
    sink.failing.store(false, Ordering::SeqCst);
    let read = ours(
        &turn,
        r#"spear-capability invoke notes/get_note '{"id": "2"}'"#,
    )
    .await;
    assert_eq!(read.status, AnswerStatus::Ok, "{}", read.text);
    let write = ours(
        &turn,
        r#"spear-capability invoke notes/add_note '{"text": "y"}'"#,
    )
    .await;
    assert_eq!(write.status, AnswerStatus::Ok, "{}", write.text);
    let events: Vec<String> = sink
        .written
        .lock()
        .expect("lock")
        .iter()
        .map(|r| {
            serde_json::to_value(r).expect("json")["event"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    assert!(events.contains(&"write_approved".to_owned()), "{events:?}");
    session.close().await;
}

#[tokio::test]
async fn the_person_told_the_trail_fails_is_told_when_it_records_again_and_when_it_fails_again() {
    let (_b, _notes, sink, _audit, session) = switched();
    let turn = begin(&session).await;
    let read = r#"spear-capability invoke notes/get_note '{"id": "1"}'"#;
    let write = r#"spear-capability invoke notes/add_note '{"text": "x"}'"#;
    assert!(session.take_notices().is_empty());

    sink.failing.store(true, Ordering::SeqCst);
    assert_eq!(
        ours(&turn, write).await.refusal(),
        Some(&Refusal::AuditFailing)
    );
    let notices = session.take_notices();
    assert!(
        matches!(notices[..], [Notice::AuditFailing(_)]),
        "{notices:?}"
    );

    // Still failing: nothing new to say.
    assert_eq!(ours(&turn, read).await.status, AnswerStatus::Ok);
    assert!(session.take_notices().is_empty());

    // It records again: said once, with what was lost; a WRITE runs.
    sink.failing.store(false, Ordering::SeqCst);
    assert_eq!(ours(&turn, read).await.status, AnswerStatus::Ok);
    let notices = session.take_notices();
    let [Notice::AuditRecovered { lost }] = notices[..] else {
        panic!("{notices:?}")
    };
    assert!(lost >= 2, "{lost}");
    assert_eq!(notices[0].provider(), None);
    let text = notices[0].text();
    assert!(
        text.starts_with("The audit trail records again (")
            && text.ends_with("WRITE capabilities are allowed again."),
        "{text}"
    );
    assert!(session.take_notices().is_empty(), "said once");
    let answer = ours(&turn, write).await;
    assert_eq!(answer.status, AnswerStatus::Ok, "{}", answer.text);
    assert_eq!(answer.refusal(), None);

    // A later failure is news again.
    sink.failing.store(true, Ordering::SeqCst);
    assert_eq!(
        ours(&turn, write).await.refusal(),
        Some(&Refusal::AuditFailing)
    );
    let notices = session.take_notices();
    assert!(
        matches!(&notices[..], [Notice::AuditFailing(f)] if f.lost > lost),
        "{notices:?}"
    );
    sink.failing.store(false, Ordering::SeqCst);
    session.close().await;
}
