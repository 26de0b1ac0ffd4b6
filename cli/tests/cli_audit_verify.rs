//! Issue 45.6 and 45.2: `audit verify` on the trail of a real turn: 0 when
//! whole, 2 naming the line when a record was changed or removed, 1 naming
//! the session when its end was cut off; `--json` for machines; a keyed
//! trail needs its key, and the key is nowhere in what the CLI writes.

mod common;

use std::path::Path;
use std::process::Command;

use common::{READ_WRITE_READ, audit_verify, audited_turn, fixture_registry, text};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Runs a turn with a READ, a WRITE and a READ into `trail`.
fn run_turn(dir: &Path, trail: &Path, env: &[(&str, &Path)]) -> std::process::Output {
    let registry = fixture_registry(dir, &[]);
    let mut turn = audited_turn(&registry, trail, &READ_WRITE_READ);
    for (k, v) in env {
        turn.env(k, v);
    }
    let out = turn.output().expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

fn lines(trail: &Path) -> Vec<String> {
    std::fs::read_to_string(trail)
        .expect("reads")
        .lines()
        .map(str::to_owned)
        .collect()
}

fn write_lines(trail: &Path, lines: &[String]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(trail, text).expect("writes");
}

#[test]
fn a_turns_trail_verifies_and_a_changed_removed_or_cut_record_is_named() {
    let dir = tempfile::tempdir().expect("dir");
    let trail = dir.path().join("a.jsonl");
    run_turn(dir.path(), &trail, &[]);
    let out = audit_verify(&[&trail], &[]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{}", text(&out.stderr));
    assert!(
        said.contains(": whole: ") && said.contains("1 session, 1 WRITE"),
        "{said}"
    );
    assert!(said.contains("  last hash "), "{said}");
    let whole = lines(&trail);
    let invoked = whole
        .iter()
        .position(|l| l.contains(r#""event":"capability_invoked""#))
        .expect("a call's record");
    assert!(invoked + 1 < whole.len() - 1, "a middle record");

    // One value of a middle record changed, and written as valid JSON.
    let mut changed = whole.clone();
    let mut record: Value = serde_json::from_str(&changed[invoked]).expect("json");
    record["arguments"]["text"] = "three".into();
    changed[invoked] = record.to_string();
    write_lines(&trail, &changed);
    let out = audit_verify(&[&trail], &[]);
    assert_eq!(out.status.code(), Some(2));
    let said = text(&out.stdout);
    assert!(
        said.contains(&format!("  line {}: this line does not match", invoked + 1)),
        "{said}"
    );

    // A middle record removed.
    let mut removed = whole.clone();
    removed.remove(invoked);
    write_lines(&trail, &removed);
    let out = audit_verify(&[&trail], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains(": broken: "));

    // Without its last line, the session's end.
    let cut = &whole[..whole.len() - 1];
    assert!(whole[whole.len() - 1].contains(r#""event":"session_ended""#));
    write_lines(&trail, cut);
    let out = audit_verify(&[&trail], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let said = text(&out.stdout);
    assert!(
        said.contains(": unended: ") && said.contains("  session cli-"),
        "{said}"
    );
    assert!(
        said.contains("(begun at line 2) has no end record"),
        "{said}"
    );
}

#[test]
fn verify_json_gives_each_files_verdict_and_the_worst_status() {
    let dir = tempfile::tempdir().expect("dir");
    let (whole, broken) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    run_turn(dir.path(), &whole, &[]);
    let mut lines = lines(&whole);
    lines.swap(2, 3);
    write_lines(&broken, &lines);
    let missing = dir.path().join("missing.jsonl");
    let out = audit_verify(&[&whole, &broken, &missing], &["--json"]);
    assert_eq!(out.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["status"], "broken");
    let files = v["files"].as_array().expect("files");
    assert_eq!(files[0]["status"], "whole");
    assert_eq!(files[0]["writes"], 1);
    assert_eq!(files[0]["last_hash"].as_str().map(str::len), Some(64));
    assert_eq!(files[1]["status"], "broken");
    assert_eq!(files[1]["broken"]["line"], 3);
    assert_eq!(files[1]["broken"]["reason"]["kind"], "seq");
    assert!(
        files[1]["broken"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("line 3: "))
    );
    assert_eq!(files[2]["status"], "unreadable");
}

/// The chain of `lines` written again with the plain SHA-256: what someone
/// who can rewrite the file, but has no key, can do.
fn rechain_plain(lines: &[String]) -> Vec<String> {
    let mut prev = "0".repeat(64);
    lines
        .iter()
        .map(|line| {
            let mut record: Value = serde_json::from_str(line).expect("json");
            record["prev"] = prev.clone().into();
            let line = record.to_string();
            prev = Sha256::digest(line.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            line
        })
        .collect()
}

#[test]
fn a_keyed_trail_needs_its_key_and_never_shows_it() {
    let dir = tempfile::tempdir().expect("dir");
    let (trail, key, trace) = (
        dir.path().join("a.jsonl"),
        dir.path().join("audit.key"),
        dir.path().join("trace.jsonl"),
    );
    let secret = "KEY-4f1c9e7a-never-printed-anywhere-0123456789";
    std::fs::write(&key, secret).expect("key");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o600);
    std::fs::set_permissions(&key, mode).expect("chmod");
    let registry = fixture_registry(dir.path(), &[]);
    let mut turn = audited_turn(&registry, &trail, &READ_WRITE_READ);
    turn.env("SPEAR_AUDIT_KEY_FILE", &key)
        .arg("--trace")
        .arg(&trace);
    let out = turn.output().expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let verified = audit_verify(&[&trail], &["--key-file", key.to_str().expect("utf-8")]);
    assert_eq!(
        verified.status.code(),
        Some(0),
        "{}",
        text(&verified.stdout)
    );
    assert!(text(&verified.stdout).contains(", keyed"));
    let by_env = Command::new(common::CLI)
        .args(["audit", "verify"])
        .arg(&trail)
        .env("SPEAR_AUDIT_KEY_FILE", &key)
        .output()
        .expect("runs");
    assert_eq!(by_env.status.code(), Some(0), "{}", text(&by_env.stdout));
    // Without the key, or rewritten with the plain hash: broken.
    assert_eq!(audit_verify(&[&trail], &[]).status.code(), Some(2));
    let rewritten = dir.path().join("rewritten.jsonl");
    write_lines(&rewritten, &rechain_plain(&lines(&trail)));
    assert_eq!(audit_verify(&[&rewritten], &[]).status.code(), Some(0));
    let forged = audit_verify(&[&rewritten], &["--key-file", key.to_str().expect("utf-8")]);
    assert_eq!(forged.status.code(), Some(2));
    assert!(
        text(&forged.stdout).contains("rewritten without the key"),
        "{}",
        text(&forged.stdout)
    );

    // The key's bytes: not in the output, the trail or the trace.
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    for (what, bytes) in [
        ("stdout", out.stdout.clone()),
        ("stderr", out.stderr.clone()),
        ("trail", std::fs::read(&trail).expect("trail")),
        ("trace", std::fs::read(&trace).expect("trace")),
        ("verify", verified.stdout.clone()),
    ] {
        let seen = String::from_utf8_lossy(&bytes);
        assert!(
            !seen.contains(&secret[4..20]) && !seen.contains(&hex[..32]),
            "the key in the {what}"
        );
    }
}

#[test]
fn a_key_file_others_can_read_is_refused_and_nothing_runs() {
    let dir = tempfile::tempdir().expect("dir");
    let (trail, key) = (dir.path().join("a.jsonl"), dir.path().join("audit.key"));
    std::fs::write(&key, "KEY-0123456789-0123456789-0123456789").expect("key");
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o644);
    std::fs::set_permissions(&key, mode).expect("chmod");
    let registry = fixture_registry(dir.path(), &[]);
    let out = audited_turn(&registry, &trail, &READ_WRITE_READ)
        .env("SPEAR_AUDIT_KEY_FILE", &key)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let said = text(&out.stderr);
    assert!(
        said.contains("cannot open audit file") && said.contains("make it 600"),
        "{said}"
    );
    assert!(!said.contains("0123456789"), "{said}");
    let verify = audit_verify(&[&trail], &["--key-file", key.to_str().expect("utf-8")]);
    assert_eq!(verify.status.code(), Some(2));
}
