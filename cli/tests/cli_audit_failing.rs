//! Issue 32.1: `--audit /dev/full` with a WRITE: the WRITE is not sent, the
//! CLI says the trail is failing on stderr and exits non-zero.

mod common;

use common::{CLI, sibling};

use std::process::{Command, Stdio};

use serde_json::json;

#[test]
fn a_write_is_not_sent_while_the_audit_trail_cannot_record_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = sibling("spear-fixture-server");
    let log = dir.path().join("received.jsonl");
    let file = dir.path().join("capabilities.json");
    // `echo` is not in `read`: a WRITE.
    let registry = json!({"providers": [{
        "id": "fix", "command": [server, "--log", log], "scope": "global",
        "timeout": 10, "write": "allow",
    }]});
    std::fs::write(&file, registry.to_string()).expect("write");
    let out = Command::new(CLI)
        .args([
            "invoke",
            "fix/echo",
            r#"{"text": "hi"}"#,
            "--project",
            "p",
            "--mode",
            "auto",
        ])
        .args(["--audit", "/dev/full", "--capabilities"])
        .arg(&file)
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_ne!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("it is a WRITE, and the audit trail is failing"),
        "{stdout}"
    );
    assert!(
        stderr.contains("spear-capabilities: the audit trail is failing: ")
            && stderr.contains("No space left on device"),
        "{stderr}"
    );
    let received = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !received.contains("tools/call"),
        "the WRITE was sent: {received}"
    );
}
