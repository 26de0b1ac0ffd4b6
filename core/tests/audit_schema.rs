//! The audit schema is a contract: every record says its version, a reader
//! keeps what a later version writes, the time is typed, and each event
//! says its name.

use std::sync::{Arc, Mutex};

use serde_json::json;
use spear_capabilities::{
    Audit,
    audit::{
        AUDIT_SCHEMA, AuditError, AuditEvent, AuditRecord, AuditSink, AuditTime, ModeName, Outcome,
    },
};

/// A sink that keeps the typed records.
#[derive(Default)]
struct Typed(Mutex<Vec<AuditRecord>>);

impl AuditSink for Typed {
    fn record(&self, record: AuditRecord) -> Result<(), AuditError> {
        self.0.lock().expect("lock").push(record);
        Ok(())
    }
}

#[test]
fn every_record_carries_the_schema_version_and_a_typed_time() {
    let sink = Arc::new(Typed::default());
    let audit = Audit::new(sink.clone()).for_session("s");
    let before = std::time::SystemTime::now();
    audit.emit(AuditEvent::GatewayAbsent {
        reason: "earlier runtime".into(),
    });
    let records = sink.0.lock().expect("lock");
    let record = &records[0];
    assert_eq!(record.schema, AUDIT_SCHEMA);
    assert_eq!(AUDIT_SCHEMA, 2);
    // Milliseconds: the time written is at most a millisecond before now.
    let at = record.time.system_time();
    assert!(at + std::time::Duration::from_millis(1) >= before);
    let value = serde_json::to_value(record).expect("serialises");
    assert_eq!(value["schema"], 2);
    let text = value["time"].as_str().expect("a string");
    assert_eq!(text.len(), "2026-11-30T09:52:41.669Z".len(), "{text}");
    assert_eq!(text.parse::<AuditTime>().expect("RFC 3339"), record.time);
    assert_eq!(record.event.name(), "gateway_absent");
}

#[test]
fn an_event_this_version_does_not_know_is_kept_whole() {
    let line = json!({
        "time": "2026-11-30T09:52:41.669Z", "schema": 2, "session": "s",
        "event": "capability_teleported", "capability": "notes/x", "distance": 3
    });
    let record: AuditRecord = serde_json::from_value(line.clone()).expect("kept, not an error");
    assert_eq!(record.schema, 2);
    assert_eq!(record.event.name(), "capability_teleported");
    let AuditEvent::Unknown(fields) = &record.event else {
        panic!("{:?}", record.event);
    };
    assert_eq!(fields["distance"], 3);
    // Written back as it was read.
    assert_eq!(serde_json::to_value(&record).expect("serialises"), line);
}

#[test]
fn a_value_this_version_does_not_know_is_kept_too() {
    let line = json!({
        "time": "2026-11-30T09:52:41.684Z", "schema": 1, "session": "s", "turn": "1",
        "event": "capability_invoked", "capability": "notes/get_note", "class": "READ",
        "arguments": {"id": "7"}, "outcome": "partially_done", "duration_ms": 4
    });
    let record: AuditRecord = serde_json::from_value(line.clone()).expect("kept, not an error");
    assert!(
        matches!(record.event, AuditEvent::Unknown(_)),
        "{:?}",
        record.event
    );
    assert_eq!(record.event.name(), "capability_invoked");
    assert_eq!(serde_json::to_value(&record).expect("serialises"), line);
    // The same record with a known outcome reads as the event.
    let mut known = line;
    known["outcome"] = json!("ok");
    let record: AuditRecord = serde_json::from_value(known).expect("reads");
    let AuditEvent::CapabilityInvoked {
        outcome, arguments, ..
    } = &record.event
    else {
        panic!("{:?}", record.event);
    };
    assert_eq!(*outcome, Outcome::Ok);
    assert_eq!(arguments, &json!({"id": "7"}));
}

#[test]
fn a_record_from_before_the_schema_version_reads_as_version_0() {
    let record: AuditRecord = serde_json::from_value(json!({
        "time": "2026-11-30T09:52:41.669Z", "event": "gateway_absent", "reason": "x"
    }))
    .expect("reads");
    assert_eq!(record.schema, 0);
    assert_eq!(record.event.name(), "gateway_absent");
}

#[test]
fn the_mode_of_an_approval_is_typed_and_an_embedders_own_is_kept_by_name() {
    for (name, mode) in [
        ("ask", ModeName::Ask),
        ("auto", ModeName::Auto),
        ("read-only", ModeName::ReadOnly),
        ("the-teams-own", ModeName::Other("the-teams-own".into())),
    ] {
        let line = json!({
            "time": "2026-11-30T09:52:41.683Z", "schema": 1, "event": "write_approved",
            "capability": "notes/add_note", "arguments": {"text": "hi"}, "mode": name
        });
        let record: AuditRecord = serde_json::from_value(line.clone()).expect("reads");
        let AuditEvent::WriteApproved { mode: read, .. } = &record.event else {
            panic!("{:?}", record.event);
        };
        assert_eq!(read, &mode);
        assert_eq!(read.as_str(), name);
        assert_eq!(serde_json::to_value(&record).expect("serialises"), line);
    }
}

#[test]
fn both_versions_read_and_a_chained_record_keeps_its_chain() {
    // Version 1: no chain.
    let v1 = json!({
        "time": "2026-11-30T09:52:41.669Z", "schema": 1, "session": "s",
        "event": "provider_stopped", "provider": "notes", "error": null
    });
    let record: AuditRecord = serde_json::from_value(v1.clone()).expect("reads");
    assert_eq!(
        (record.schema, record.seq, record.prev.as_deref()),
        (1, None, None)
    );
    assert_eq!(serde_json::to_value(&record).expect("serialises"), v1);
    // Version 2: the chain, and the session's start and end.
    let prev = "ab".repeat(32);
    for line in [
        json!({"time": "2026-11-30T09:52:41.669Z", "schema": 2, "seq": 7, "prev": prev,
               "session": "s", "event": "session_started", "mode": "ask"}),
        json!({"time": "2026-11-30T09:52:41.669Z", "schema": 2, "seq": 8, "prev": prev,
               "session": "s", "event": "session_ended", "how": "runtime_gone"}),
    ] {
        let record: AuditRecord = serde_json::from_value(line.clone()).expect("reads");
        assert!(!matches!(record.event, AuditEvent::Unknown(_)), "{line}");
        assert_eq!(record.event.name(), line["event"]);
        assert_eq!(record.prev.as_deref(), Some(prev.as_str()));
        assert_eq!(serde_json::to_value(&record).expect("serialises"), line);
    }
}
