//! Issue 45: the JSON Lines sink chains every record to the line before it
//! in the file, whoever wrote it, never tears or cuts a record, creates
//! its files 0600, and puts a durable record where the path points.

use std::io::{BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use spear_capabilities::audit::{BreakReason, JsonLinesOptions, TrailStatus, Verdict, verify};
use spear_capabilities::{
    Audit,
    audit::{AuditEvent, JsonLinesSink},
};

fn refused(entry: &str) -> AuditEvent {
    AuditEvent::ProviderRefused {
        file: None,
        entry: entry.to_owned(),
        problems: vec!["bad".into()],
    }
}

fn audit(path: &Path) -> Audit {
    Audit::new(Arc::new(JsonLinesSink::append(path).expect("opens")))
}

fn verdict(path: &Path) -> Verdict {
    let file = std::fs::File::open(path).expect("opens");
    verify(BufReader::new(file), None)
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("reads")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn one_file_is_one_chain_across_sinks_and_runs_and_is_created_for_its_owner_only() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("a.jsonl");
    let first = audit(&path);
    first.emit(refused("one"));
    first.emit(refused("two"));
    drop(first);
    let second = audit(&path);
    second.emit(refused("three"));
    second.try_emit_durable(refused("four")).expect("synced");
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let seqs: Vec<u64> = records(&path)
        .iter()
        .map(|r| r["seq"].as_u64().expect("seq"))
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
    let v = verdict(&path);
    assert_eq!(v.status(), TrailStatus::Whole, "{v:?}");
    assert_eq!((v.records, v.unchained), (4, 0));
    // The tail anchor is the link of the last line: what the next record
    // carries as its `prev`.
    let anchor = v.last_hash.expect("an anchor");
    assert_ne!(anchor, "0".repeat(64));
    audit(&path).emit(refused("five"));
    assert_eq!(records(&path)[4]["prev"], anchor);
}

#[test]
fn two_writers_on_one_file_keep_one_chain() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("a.jsonl");
    // Two sinks, two open files: each re-reads the tail the other grew.
    let (a, b) = (audit(&path), audit(&path));
    let threads: Vec<_> = [a, b]
        .into_iter()
        .enumerate()
        .map(|(i, audit)| {
            std::thread::spawn(move || {
                for n in 0..300 {
                    audit.emit(refused(&format!("{i}-{n}-{}", "x".repeat(n * 7 % 900))));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("joins");
    }
    let v = verdict(&path);
    assert_eq!(v.status(), TrailStatus::Whole, "{v:?}");
    assert_eq!(v.records, 600);
}

#[test]
fn a_record_never_straddles_a_page_and_a_long_one_is_whole_pages() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("a.jsonl");
    let audit = audit(&path);
    for n in 0..200 {
        // Mostly short records, and now and then one of several pages.
        let size = if n % 17 == 0 {
            9000 + n * 31
        } else {
            n * 37 % 1500
        };
        audit.emit(refused(&"y".repeat(size)));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&path)
        .expect("opens")
        .read_to_end(&mut bytes)
        .expect("reads");
    let mut at = 0usize;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let json = line.iter().position(|&b| b != b' ').expect("a record");
        let (begins, ends) = (at + json, at + line.len());
        if line.len() - json <= 4096 {
            assert_eq!(
                begins / 4096,
                (ends - 1) / 4096,
                "a record across a page at {begins}"
            );
        } else {
            assert_eq!(begins % 4096, 0, "a long record not at a page at {begins}");
            assert_eq!(ends % 4096, 0, "a long record not whole pages at {begins}");
        }
        at = ends;
    }
    let v = verdict(&path);
    assert_eq!((v.status(), v.records), (TrailStatus::Whole, 200), "{v:?}");
}

#[test]
fn a_record_goes_on_from_spaces_left_at_the_end_of_the_file() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("a.jsonl");
    audit(&path).emit(refused("one"));
    // A writer killed after its padding, before its record.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("opens")
        .write_all(b"      ")
        .expect("spaces");
    assert_eq!(verdict(&path).status(), TrailStatus::Whole);
    audit(&path).emit(refused("two"));
    let text = std::fs::read_to_string(&path).expect("reads");
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.lines().nth(1).expect("line 2").starts_with("      {"));
    let v = verdict(&path);
    assert_eq!((v.status(), v.records), (TrailStatus::Whole, 2), "{v:?}");
}

#[test]
fn a_durable_record_goes_where_the_path_points_and_the_lost_part_shows() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("a.jsonl");
    let audit = audit(&path);
    audit.emit(refused("one"));
    audit.emit(refused("two"));
    std::fs::remove_file(&path).expect("removed");
    audit.emit(refused("lost with the old file"));
    audit
        .try_emit_durable(refused("approval"))
        .expect("written where the path points");
    let r = records(&path);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["entry"], "approval");
    // The new file goes on from the lost one's chain: the cut shows.
    assert_eq!(r[0]["seq"], 4);
    let v = verdict(&path);
    assert_eq!(v.status(), TrailStatus::Broken);
    let broken = v.broken.expect("broken");
    assert_eq!(
        (broken.line, &broken.reason),
        (1, &BreakReason::Seq { found: 4 })
    );
    assert!(
        broken
            .to_string()
            .contains("3 record(s) before it were removed"),
        "{broken}"
    );
    let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn a_durable_record_fails_when_the_path_is_no_longer_a_file() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("a.jsonl");
    let audit = audit(&path);
    audit.emit(refused("one"));
    std::fs::remove_file(&path).expect("removed");
    std::fs::create_dir(&path).expect("a directory in its place");
    let err = audit
        .try_emit_durable(refused("approval"))
        .expect_err("nowhere verify can read it");
    assert!(err.reason.contains("no longer a regular file"), "{err}");
    assert!(audit.is_failing());
}

#[test]
fn a_fifo_is_written_as_a_stream_with_its_own_chain() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let reader = {
        let path = path.clone();
        std::thread::spawn(move || std::fs::read(path).expect("reads the fifo"))
    };
    let audit = audit(&path);
    audit.emit(refused("one"));
    audit.try_emit_durable(refused("two")).expect("written");
    drop(audit);
    let bytes = reader.join().expect("joins");
    let v = verify(&bytes[..], None);
    assert_eq!((v.status(), v.records), (TrailStatus::Whole, 2), "{v:?}");
}

#[test]
fn a_keyed_chain_needs_its_key() {
    let dir = tempfile::tempdir().expect("dir");
    let (path, key) = (dir.path().join("a.jsonl"), dir.path().join("key"));
    std::fs::write(&key, b"an audit key of thirty-two bytes, at least").expect("key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let options = JsonLinesOptions::new().with_key_file(&key);
    let sink = JsonLinesSink::append_with(&path, &options).expect("opens");
    let audit = Audit::new(Arc::new(sink));
    for n in 0..3 {
        audit.emit(refused(&n.to_string()));
    }
    let text = std::fs::read_to_string(&path).expect("reads");
    assert!(!text.contains("thirty-two"), "{text}");
    let key = spear_capabilities::audit::AuditKey::from_file(&key).expect("a key");
    let v = verify(text.as_bytes(), Some(&key));
    assert_eq!((v.status(), v.keyed), (TrailStatus::Whole, true), "{v:?}");
    let without = verify(text.as_bytes(), None);
    let broken = without.broken.expect("no key, no match");
    assert_eq!(broken.line, 1);
    assert!(
        broken.to_string().contains("verify it with its key"),
        "{broken}"
    );
}
