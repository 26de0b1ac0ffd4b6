//! Issue 33.3, `invoke` starts only what it calls: of the providers a turn
//! selects, `spear-capabilities invoke <provider>/<tool>` starts the one it
//! names, never the others, while the audit's selection record still names
//! every candidate with its decision. Through the built binary, with a
//! second fixture server that records each start in a file.

mod common;

use common::{on_registry, sibling, text};

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// A registry in `dir`: `notes` and `other`, both fixture servers of
/// global scope; `other` counts each of its starts in `starts` and takes
/// 3 s to answer its handshake.
fn registry(dir: &Path, starts: &Path) -> PathBuf {
    let server = sibling("spear-fixture-server");
    let providers = json!([
        {"id": "notes", "command": [server], "scope": "global", "read": ["echo"]},
        {"id": "other", "scope": "global",
         "command": [server, "--starts", starts, "--start-delay", "3000"]},
    ]);
    let file = dir.join("capabilities.json");
    std::fs::write(&file, json!({ "providers": providers }).to_string()).expect("write");
    file
}

/// The records of the audit file at `path`.
fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("audit file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record"))
        .collect()
}

#[test]
fn invoke_starts_only_the_provider_it_calls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let starts = dir.path().join("other-starts");
    let file = registry(dir.path(), &starts);
    let audit = dir.path().join("audit.jsonl");
    let out = on_registry(
        &file,
        &[
            "invoke",
            "notes/echo",
            r#"{"text": "only me"}"#,
            "--audit",
            audit.to_str().expect("utf-8"),
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("only me"), "{stdout}");
    assert!(!starts.exists(), "`other` was started");
    assert!(
        !text(&out.stderr).contains("other"),
        "{}",
        text(&out.stderr)
    );
    let records = records(&audit);
    let named =
        |event: &str| -> Vec<&Value> { records.iter().filter(|r| r["event"] == event).collect() };
    // The selection record stays true: both are selected by the rules.
    let selected = named("capability_family_selected");
    assert_eq!(selected.len(), 1);
    assert_eq!(
        selected[0]["candidates"],
        json!([
            {"provider": "notes", "selected": true, "reason": "selected"},
            {"provider": "other", "selected": true, "reason": "selected"},
        ])
    );
    // Only `notes` started, was offered and was stopped; `other` is not
    // named unavailable, for nothing is known of it.
    let started: Vec<&Value> = named("provider_started")
        .iter()
        .map(|r| &r["provider"])
        .collect();
    assert_eq!(started, [&json!("notes")]);
    let exposed = named("capability_index_exposed");
    assert_eq!(exposed.len(), 1, "{records:?}");
    assert_eq!(exposed[0]["unavailable"], json!([]));
    let shown = exposed[0]["capabilities"].as_array().expect("capabilities");
    assert!(!shown.is_empty());
    assert!(
        shown
            .iter()
            .all(|c| c.as_str().is_some_and(|c| c.starts_with("notes/"))),
        "{shown:?}"
    );
}

#[test]
fn list_still_starts_every_selected_provider() {
    let dir = tempfile::tempdir().expect("tempdir");
    let starts = dir.path().join("other-starts");
    let file = registry(dir.path(), &starts);
    let out = on_registry(&file, &["list", "--wait", "30"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("ok       other: ready in "), "{stdout}");
    assert!(starts.exists(), "`other` was never started");
}

#[test]
fn a_misspelt_provider_starts_nothing_and_gets_the_nearest_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let starts = dir.path().join("other-starts");
    let file = registry(dir.path(), &starts);
    let out = on_registry(&file, &["invoke", "nots/echo"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_eq!(
        stdout,
        "No capability `nots/echo` reaches this turn; did you mean `notes/echo`? `spear-capabilities list` with the same flags shows the ones that do.\n"
    );
    assert!(!starts.exists(), "`other` was started");
}
