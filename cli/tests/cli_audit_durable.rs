//! Issue 45.4 and 45.5, and the trail's losses: a WRITE's records are on
//! disk before the WRITE reaches its server (seen under strace); a failed
//! write of one run never removes another's records (the interleaving made
//! deterministic with strace's fault injection); a trail deleted or
//! replaced by a directory mid-session never lets a WRITE through
//! unrecorded; the key never shows in a trace.
//!
//! These tests need strace(1) and fail, saying so, where it is missing.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{CLI, READ_WRITE_READ, audit_verify, audited_turn, fixture_registry, text};

/// strace, or a failure that says it is missing.
fn strace() -> Command {
    let found = Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "strace(1) is not installed (apt-get install strace): this test watches the CLI's system calls with it and cannot check anything without it"
    );
    let mut strace = Command::new("strace");
    strace
        .args(["-f", "-qq", "-e", "signal=none"])
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .env_remove("SPEAR_AUDIT_KEY_FILE")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
    strace
}

/// The index of the first line of `lines` at or after `from` that `is`.
fn find(lines: &[&str], from: usize, is: impl Fn(&str) -> bool) -> Option<usize> {
    lines
        .iter()
        .skip(from)
        .position(|l| is(l))
        .map(|i| i + from)
}

#[test]
fn a_writes_records_are_synced_before_its_call_reaches_the_server() {
    let dir = tempfile::tempdir().expect("dir");
    let registry = fixture_registry(dir.path(), &[]);
    let (trail, log) = (dir.path().join("a.jsonl"), dir.path().join("strace.out"));
    let out = strace()
        .args([
            "-s",
            "256",
            "-e",
            "trace=openat,write,fdatasync,fsync",
            "-o",
        ])
        .arg(&log)
        .arg(CLI)
        .args([
            "invoke",
            "fix/mixed",
            "{}",
            "--project",
            "p",
            "--mode",
            "auto",
        ])
        .arg("--capabilities")
        .arg(&registry)
        .arg("--audit")
        .arg(&trail)
        .output()
        .expect("strace runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let traced = std::fs::read_to_string(&log).expect("the trace");
    let lines: Vec<&str> = traced.lines().collect();
    let name = format!("\"{}\"", trail.display());
    let opened =
        find(&lines, 0, |l| l.contains("openat(") && l.contains(&name)).expect("the trail opened");
    let fd = lines[opened].rsplit("= ").next().expect("an fd").trim();
    let approval = find(&lines, opened, |l| {
        l.contains(&format!("write({fd}, ")) && l.contains("write_approved")
    })
    .expect("the approval written");
    let synced = find(&lines, approval, |l| {
        (l.contains(&format!("fdatasync({fd})")) || l.contains("<... fdatasync resumed>"))
            && l.trim_end().ends_with("= 0")
    })
    .expect("the trail synced after the approval");
    let call = find(&lines, 0, |l| {
        l.contains("write(") && l.contains("tools/call")
    })
    .expect("the call sent");
    assert!(
        approval < synced && synced < call,
        "approval at {approval}, synced at {synced}, call at {call}:\n{traced}"
    );
}

/// Waits up to `within` for `found`.
fn wait_for(within: Duration, mut found: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while !found() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// The records of `trail` that carry `session`.
fn of_session(trail: &Path, session: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(trail)
        .expect("reads")
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a record"))
        .filter(|r| r["session"] == session)
        .collect()
}

#[test]
fn a_failed_write_of_one_run_never_removes_another_runs_records() {
    let dir = tempfile::tempdir().expect("dir");
    let registry = fixture_registry(dir.path(), &[]);
    let trail = dir.path().join("a.jsonl");
    // Run A's second write to the trail waits 2 s inside the system call,
    // then fails as a full disk would; run B goes whole in that time.
    let a = strace()
        .args(["-o", "/dev/null", "-e", "trace=write", "-P"])
        .arg(&trail)
        .args(["-e", "inject=write:error=ENOSPC:delay_enter=2000000:when=2"])
        .arg(CLI)
        .args(audited_turn(&registry, &trail, &READ_WRITE_READ).get_args())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("strace runs");
    let first_line = || std::fs::read(&trail).is_ok_and(|b| b.contains(&b'\n'));
    assert!(
        wait_for(Duration::from_secs(20), first_line),
        "run A wrote nothing"
    );
    let b = audited_turn(&registry, &trail, &READ_WRITE_READ)
        .output()
        .expect("runs");
    let a: Output = a.wait_with_output().expect("waits");
    assert_eq!(b.status.code(), Some(0), "{}", text(&b.stderr));
    assert_ne!(
        a.status.code(),
        Some(0),
        "run A lost a record and must say so"
    );
    assert!(
        text(&a.stderr).contains("the audit trail is failing"),
        "{}",
        text(&a.stderr)
    );
    // Every record of B is there: its three calls beside A's three.
    let trail_text = std::fs::read_to_string(&trail).expect("reads");
    let calls = trail_text
        .matches(r#""event":"capability_invoked""#)
        .count();
    assert_eq!(calls, 6, "records were removed:\n{trail_text}");
    let b_session = trail_text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a record"))
        .filter(|r| r["event"] == "session_started")
        .map(|r| r["session"].as_str().expect("an id").to_owned())
        .next()
        .expect("run B's start: run A's was the record lost");
    let b_records = of_session(&trail, &b_session);
    let events: Vec<&str> = b_records
        .iter()
        .filter_map(|r| r["event"].as_str())
        .collect();
    assert_eq!(events.first(), Some(&"session_started"), "{events:?}");
    assert_eq!(events.last(), Some(&"session_ended"), "{events:?}");
    assert_eq!(
        events
            .iter()
            .filter(|e| **e == "capability_invoked")
            .count(),
        3
    );
    let verified = audit_verify(&[&trail], &[]);
    assert_eq!(
        verified.status.code(),
        Some(0),
        "{}",
        text(&verified.stdout)
    );
}

/// A turn that sleeps in a WRITE for 800 ms, then calls another WRITE; the
/// server logs what it receives to `log`.
fn sleeping_turn(dir: &Path, trail: &Path, log: &Path) -> std::process::Child {
    let registry = fixture_registry(dir, &["--log", log.to_str().expect("utf-8")]);
    audited_turn(
        &registry,
        trail,
        &[
            "spear-capability describe fix/sleep",
            r#"spear-capability invoke fix/sleep '{"ms": 800}'"#,
            "spear-capability describe fix/mixed",
            "spear-capability invoke fix/mixed '{}'",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("runs")
}

/// Starts the sleeping turn and, while it sleeps, does `replace` to its
/// trail: what the CLI said, and whether the second WRITE reached its server.
fn replace_mid_session(replace: impl FnOnce(&Path)) -> (Output, bool, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("dir");
    let (trail, log) = (
        dir.path().join("a.jsonl"),
        dir.path().join("received.jsonl"),
    );
    let turn = sleeping_turn(dir.path(), &trail, &log);
    let sleeping = || std::fs::read_to_string(&log).is_ok_and(|l| l.contains(r#""name":"sleep""#));
    assert!(
        wait_for(Duration::from_secs(20), sleeping),
        "the WRITE never slept"
    );
    replace(&trail);
    let out = turn.wait_with_output().expect("waits");
    let received = std::fs::read_to_string(&log).expect("the log");
    (out, received.contains(r#""name":"mixed""#), trail, dir)
}

#[test]
fn a_trail_deleted_mid_session_is_opened_again_before_a_write_is_sent() {
    let (out, sent, trail, _dir) = replace_mid_session(|trail| {
        std::fs::remove_file(trail).expect("removed");
    });
    assert!(sent, "{}", text(&out.stdout));
    // The WRITE's records are in the file the path names now, which shows
    // the cut (its first record goes on from the lost ones).
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&trail)
        .expect("a new trail")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record"))
        .collect();
    assert!(
        records
            .iter()
            .any(|r| r["event"] == "write_approved" && r["capability"] == "fix/mixed"),
        "{records:?}"
    );
    let verified = audit_verify(&[&trail], &[]);
    assert_eq!(verified.status.code(), Some(2));
    assert!(
        text(&verified.stdout).contains("line 1: its `seq` is"),
        "{}",
        text(&verified.stdout)
    );
}

#[test]
fn a_trail_replaced_by_a_directory_mid_session_stops_the_next_write() {
    let (out, sent, _trail, _dir) = replace_mid_session(|trail| {
        std::fs::remove_file(trail).expect("removed");
        std::fs::create_dir(trail).expect("a directory in its place");
    });
    assert!(!sent, "the WRITE was sent unrecorded");
    assert!(
        text(&out.stdout).contains("it is a WRITE, and the audit trail is failing"),
        "{}",
        text(&out.stdout)
    );
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("no longer a regular file"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_key_is_in_no_system_call_the_cli_makes_but_its_read() {
    let dir = tempfile::tempdir().expect("dir");
    let (trail, key, log) = (
        dir.path().join("a.jsonl"),
        dir.path().join("audit.key"),
        dir.path().join("strace.out"),
    );
    let secret = "KEY-9d2b7c61-not-in-any-trace-0123456789";
    std::fs::write(&key, secret).expect("key");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o600);
    std::fs::set_permissions(&key, mode).expect("chmod");
    let registry = fixture_registry(dir.path(), &[]);
    let out = strace()
        .args(["-s", "65536", "-e", "trace=!read,pread64,readv", "-o"])
        .arg(&log)
        .env("SPEAR_AUDIT_KEY_FILE", &key)
        .arg(CLI)
        .args(audited_turn(&registry, &trail, &READ_WRITE_READ).get_args())
        .output()
        .expect("strace runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let traced = std::fs::read_to_string(&log).expect("the trace");
    assert!(traced.contains("fdatasync("), "not a trace of the run");
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    assert!(!traced.contains(&secret[4..20]), "the key in a system call");
    assert!(
        !traced.contains(&hex[..32]),
        "the key in a system call, as hex"
    );
}
