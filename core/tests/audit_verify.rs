//! Issue 45.6: `audit::verify` tells a whole trail from one cut short and
//! from one broken, names the first bad line and why, and never calls a
//! version-1 trail broken.

use std::sync::Arc;

use serde_json::{Value, json};
use spear_capabilities::audit::{AuditKey, BreakReason, JsonLinesOptions, TrailStatus, verify};
use spear_capabilities::{
    Audit,
    audit::{AuditEvent, JsonLinesSink, ModeName},
};

/// The sink's output, shared with the test.
#[derive(Clone, Default)]
struct Shared(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("lock").extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A session with a READ, a WRITE and a READ, written by the sink: its
/// lines as text.
fn trail(key: Option<&std::path::Path>) -> Vec<String> {
    let out = Shared::default();
    let options = key.map_or_else(JsonLinesOptions::new, |k| {
        JsonLinesOptions::new().with_key_file(k)
    });
    let sink = JsonLinesSink::new_with(out.clone(), &options).expect("a sink");
    let audit = Audit::new(Arc::new(sink)).for_session("s1");
    audit.emit(AuditEvent::SessionStarted {
        mode: ModeName::Auto,
    });
    for (capability, class) in [("n/get", "READ"), ("n/add", "WRITE"), ("n/get", "READ")] {
        let event: AuditEvent = serde_json::from_value(json!({
            "event": "capability_invoked", "capability": capability, "class": class,
            "arguments": {"id": 1}, "outcome": "ok", "duration_ms": 3
        }))
        .expect("an event");
        audit.emit(event);
    }
    let ended: AuditEvent =
        serde_json::from_value(json!({"event": "session_ended", "how": "closed"})).expect("event");
    audit.try_emit_durable(ended).expect("written");
    let text = String::from_utf8(out.0.lock().expect("lock").clone()).expect("utf-8");
    text.lines().map(str::to_owned).collect()
}

fn check(lines: &[String]) -> spear_capabilities::audit::Verdict {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    verify(text.as_bytes(), None)
}

#[test]
fn a_whole_trail_counts_its_records_sessions_and_writes() {
    let v = check(&trail(None));
    assert_eq!(v.status(), TrailStatus::Whole, "{v:?}");
    assert_eq!((v.records, v.sessions, v.writes, v.unchained), (5, 1, 1, 0));
    assert!(v.last_hash.is_some_and(|h| h.len() == 64));
}

#[test]
fn a_changed_record_is_named_by_its_line() {
    let mut lines = trail(None);
    let mut record: Value = serde_json::from_str(&lines[2]).expect("json");
    record["arguments"]["id"] = json!(2);
    lines[2] = record.to_string();
    let broken = check(&lines).broken.expect("broken");
    assert_eq!(broken.line, 3);
    assert!(
        matches!(broken.reason, BreakReason::Changed { .. }),
        "{broken:?}"
    );
    assert!(
        broken
            .to_string()
            .starts_with("line 3: this line does not match line 4's `prev`"),
        "{broken}"
    );
}

#[test]
fn a_removed_or_reordered_record_breaks_the_trail() {
    let mut removed = trail(None);
    removed.remove(2);
    let broken = check(&removed).broken.expect("broken");
    assert_eq!(
        (broken.line, broken.reason),
        (3, BreakReason::Seq { found: 4 })
    );
    let mut swapped = trail(None);
    swapped.swap(1, 2);
    assert_eq!(check(&swapped).status(), TrailStatus::Broken);
}

#[test]
fn a_trail_without_its_end_names_the_session_left_open() {
    let mut lines = trail(None);
    lines.pop();
    let v = check(&lines);
    assert_eq!(v.status(), TrailStatus::Unended);
    let open: Vec<(&str, u64)> = v
        .unended
        .iter()
        .map(|u| (u.session.as_str(), u.line))
        .collect();
    assert_eq!(open, [("s1", 1)]);
}

#[test]
fn a_torn_last_line_or_a_line_that_is_no_record_breaks_it() {
    let mut text: String = trail(None).iter().map(|l| format!("{l}\n")).collect();
    text.push_str("{\"time\":\"2026");
    let broken = verify(text.as_bytes(), None).broken.expect("torn");
    assert_eq!((broken.line, broken.reason), (6, BreakReason::Torn));
    // Spaces at the end are a record's padding whose record was not written.
    let mut padded: String = trail(None).iter().map(|l| format!("{l}\n")).collect();
    padded.push_str("     ");
    assert_eq!(verify(padded.as_bytes(), None).status(), TrailStatus::Whole);
    for bad in [
        "",
        "[1,2]",
        "{\"no\":\"event\"}",
        "not json",
        "{\"event\":\"x\",\"seq\":2}",
    ] {
        let mut lines = trail(None);
        lines.insert(5, bad.to_owned());
        let broken = verify(
            lines
                .iter()
                .map(|l| format!("{l}\n"))
                .collect::<String>()
                .as_bytes(),
            None,
        )
        .broken
        .expect("not a record");
        assert_eq!(broken.line, 6, "{bad:?}");
        assert!(
            matches!(broken.reason, BreakReason::NotARecord { .. }),
            "{bad:?}: {broken:?}"
        );
    }
}

#[test]
fn version_one_records_are_unchained_never_broken() {
    let v1 = [
        json!({"time": "2026-11-30T09:52:41.669Z", "schema": 1, "event": "provider_refused", "file": null, "entry": "a", "problems": []}),
        json!({"time": "2026-11-30T09:52:41.669Z", "event": "provider_refused", "file": null, "entry": "b", "problems": []}),
    ];
    let mut lines: Vec<String> = v1.iter().map(Value::to_string).collect();
    let v = check(&lines);
    assert_eq!(
        (v.status(), v.records, v.unchained),
        (TrailStatus::Whole, 2, 2)
    );
    // A version-2 record without its chain is a chain removed.
    let mut stripped: Value = serde_json::from_str(&trail(None)[1]).expect("json");
    let fields = stripped.as_object_mut().expect("object");
    fields.remove("seq");
    fields.remove("prev");
    lines.push(stripped.to_string());
    let broken = check(&lines).broken.expect("broken");
    assert_eq!((broken.line, broken.reason), (3, BreakReason::NotChained));
}

#[test]
fn a_keyed_trail_rewritten_with_the_plain_hash_or_read_with_another_key_fails() {
    let dir = tempfile::tempdir().expect("dir");
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, [0x5a; 32]).expect("key");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o600);
    std::fs::set_permissions(&key_file, mode).expect("chmod");
    let key = AuditKey::from_file(&key_file).expect("a key");
    let keyed: String = trail(Some(&key_file))
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        verify(keyed.as_bytes(), Some(&key)).status(),
        TrailStatus::Whole
    );
    let other = AuditKey::from_bytes(&[0x5b; 32]).expect("a key");
    let broken = verify(keyed.as_bytes(), Some(&other))
        .broken
        .expect("another key");
    assert_eq!(broken.line, 1);
    assert_eq!(
        broken.reason,
        BreakReason::Changed {
            keyed: true,
            plain: false
        }
    );
    // The same records, chained again with the plain hash by someone
    // without the key.
    let plain: String = trail(None).iter().map(|l| format!("{l}\n")).collect();
    let broken = verify(plain.as_bytes(), Some(&key)).broken.expect("plain");
    assert_eq!(
        broken.reason,
        BreakReason::Changed {
            keyed: true,
            plain: true
        }
    );
    assert!(
        broken.to_string().contains("rewritten without the key"),
        "{broken}"
    );
}

#[test]
fn a_key_file_others_can_read_or_too_short_is_refused_without_its_bytes() {
    let dir = tempfile::tempdir().expect("dir");
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, "secret-secret-secret-secret-secret").expect("key");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o640);
    std::fs::set_permissions(&key_file, mode).expect("chmod");
    let err = AuditKey::from_file(&key_file).expect_err("exposed");
    assert!(err.to_string().contains("make it 600"), "{err}");
    std::fs::write(&key_file, "short").expect("key");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o600);
    std::fs::set_permissions(&key_file, mode).expect("chmod");
    let err = AuditKey::from_file(&key_file).expect_err("too short");
    assert!(err.to_string().contains("holds 5 bytes"), "{err}");
    assert!(!format!("{err} {err:?}").contains("short"), "{err:?}");
}
