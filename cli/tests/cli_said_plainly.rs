//! Issue 33.5's leftovers, through the built binary and the fixture
//! server: a call that times out is named with its limit, and the
//! gateway's own refusal of arguments is said plainly, never framed as a
//! provider's words.

mod common;

use common::{on_registry, sibling, text};

use std::path::{Path, PathBuf};

use serde_json::json;

/// A registry in `dir` with `fix`, the fixture server, whose request
/// timeout is `timeout` seconds and whose tools are all READ.
fn registry(dir: &Path, timeout: f64) -> PathBuf {
    let file = dir.join("capabilities.json");
    let entry = json!({
        "id": "fix", "command": [sibling("spear-fixture-server")], "scope": "global",
        "timeout": timeout, "read": ["echo", "sleep"],
    });
    std::fs::write(&file, json!({ "providers": [entry] }).to_string()).expect("write");
    file
}

#[test]
fn a_call_that_times_out_names_the_call_and_its_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path(), 1.0);
    let out = on_registry(&file, &["invoke", "fix/sleep", r#"{"ms": 4000}"#]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.starts_with(
            "`fix/sleep` took longer than its 1 s timeout; provider `fix` is unavailable (timed out)"
        ),
        "{stdout}"
    );
}

#[test]
fn a_refusal_of_arguments_by_the_schema_is_said_plainly_not_framed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path(), 10.0);
    let out = on_registry(
        &file,
        &[
            "turn",
            "--command",
            "spear-capability describe fix/sleep",
            "--command",
            r#"spear-capability invoke fix/sleep '{"ms": "long"}'"#,
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let answer = stdout
        .split("$ spear-capability invoke fix/sleep")
        .nth(1)
        .expect("the answer");
    assert!(
        answer.contains(
            "\nThe arguments do not fit the schema of `fix/sleep`:\n  - at /ms: \"long\" is not of type \"integer\"\n[refused]"
        ),
        "{stdout}"
    );
    assert!(!answer.contains("External content"), "{stdout}");
}
