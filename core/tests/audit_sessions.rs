//! Issue 45.3 and 45.4: sessions begin and end on the trail, however they
//! end; a WRITE's approval is durable before the call is sent, and so is a
//! session's end; a provider still starting when its session closes gets
//! its stop record.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Bench, begin, implementation};
use serde_json::json;
use spear_capabilities::{
    AnswerStatus, Audit, Auto, Session, SessionOptions,
    audit::{AuditError, AuditRecord, AuditSink},
};
use spear_testkit::{MockHandle, ours};

/// Keeps each record's event name, with whether it came durable and how
/// many calls the provider had seen by then.
#[derive(Default)]
struct Durable {
    seen: Mutex<Vec<(String, bool, usize)>>,
    provider: Mutex<Option<MockHandle>>,
}

impl Durable {
    fn keep(&self, record: &AuditRecord, durable: bool) {
        let name = record.event.name().to_owned();
        let calls = self
            .provider
            .lock()
            .expect("lock")
            .as_ref()
            .map_or(0, |p| p.calls().len());
        self.seen.lock().expect("lock").push((name, durable, calls));
    }

    fn seen(&self) -> Vec<(String, bool, usize)> {
        self.seen.lock().expect("lock").clone()
    }
}

impl AuditSink for Durable {
    fn record(&self, record: AuditRecord) -> Result<(), AuditError> {
        self.keep(&record, false);
        Ok(())
    }

    fn record_durable(&self, record: AuditRecord) -> Result<(), AuditError> {
        self.keep(&record, true);
        Ok(())
    }
}

fn notes(b: &Bench) -> MockHandle {
    let notes = b.provider("notes");
    notes
        .add_simple_tool("get_note", "Read one note.", &["id"])
        .add_simple_tool("add_note", "Create a note.", &["text"]);
    notes
}

fn session(b: &Bench, sink: &Arc<Durable>) -> Session {
    Session::open(
        Arc::clone(&b.registry),
        SessionOptions::new("s1", Arc::new(Auto))
            .with_audit(Audit::new(sink.clone()))
            .with_connector(b.connector.clone()),
    )
}

fn entries() -> serde_json::Value {
    json!([{"id": "notes", "scope": "global", "read": ["get_note"], "write": "allow"}])
}

#[tokio::test]
async fn a_writes_approval_is_durable_before_it_is_sent_and_the_end_is_synced() {
    let b = Bench::new(entries());
    let handle = notes(&b);
    let sink = Arc::new(Durable::default());
    *sink.provider.lock().expect("lock") = Some(handle.clone());
    let s = session(&b, &sink);
    let turn = begin(&s).await;
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
    assert_eq!(write.status, AnswerStatus::Ok, "{}", write.text);
    drop(turn);
    s.close().await;
    let seen = sink.seen();
    let names: Vec<&str> = seen.iter().map(|(n, ..)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"session_started"), "{names:?}");
    assert_eq!(names.last(), Some(&"session_ended"), "{names:?}");
    let durable: Vec<(&str, usize)> = seen
        .iter()
        .filter(|(_, durable, _)| *durable)
        .map(|(n, _, calls)| (n.as_str(), *calls))
        .collect();
    // The approval, with only the READ sent by then; the end, after both.
    assert_eq!(durable, [("write_approved", 1), ("session_ended", 2)]);
}

#[tokio::test]
async fn a_session_dropped_without_close_ends_on_the_trail_as_dropped() {
    let b = Bench::new(entries());
    notes(&b);
    let s = b.session(Arc::new(Auto));
    drop(begin(&s).await);
    drop(s);
    let ended = b.sink.named("session_ended");
    assert_eq!(ended.len(), 1, "{:?}", b.sink.names());
    assert_eq!(ended[0]["how"], "dropped");
    assert_eq!(ended[0]["session"], "s1");
    assert_eq!(b.sink.named("session_started")[0]["mode"], "auto");
}

#[test]
fn a_session_closed_where_no_runtime_runs_ends_as_runtime_gone_once() {
    let b = Bench::new(entries());
    let s = b.session(Arc::new(Auto));
    futures::executor::block_on(s.close());
    drop(s);
    let ended = b.sink.named("session_ended");
    assert_eq!(ended.len(), 1, "{:?}", b.sink.names());
    assert_eq!(ended[0]["how"], "runtime_gone");
}

#[tokio::test]
async fn a_provider_still_starting_when_its_session_closes_gets_its_stop_record() {
    let b = Bench::new(entries());
    notes(&b);
    b.connector.start_latency("notes", Duration::from_secs(30));
    let s = b.session(Arc::new(Auto));
    assert_eq!(s.start_providers(&implementation()).expect("a runtime"), 1);
    s.close().await;
    let stopped = b.sink.named("provider_stopped");
    assert_eq!(stopped.len(), 1, "{:?}", b.sink.names());
    assert_eq!(stopped[0]["provider"], "notes");
    assert!(
        stopped[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("while it was starting")),
        "{stopped:?}"
    );
    let names = b.sink.names();
    assert_eq!(
        names.last().map(String::as_str),
        Some("session_ended"),
        "{names:?}"
    );
}
