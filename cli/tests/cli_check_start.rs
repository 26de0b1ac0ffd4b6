//! `check --start`: every enabled entry whose program can run is started,
//! and `check` says what each server offers, that one declares no tools
//! (issue 35.2: "said as such in `list`, `check --start` and the turn's
//! notice"), or why one did not start. Through the built binary.

mod common;

use common::{cli, no_tools_server, sibling, text};

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// A registry in `dir`: `fixture` (the fixture server, 9 tools), `bare` (a
/// scripted server whose `initialize` declares only `prompts`), `gone` (a
/// server that exits at its start) and `off` (disabled, never started).
fn registry(dir: &Path) -> PathBuf {
    let starts = dir.join("off-starts");
    let fixture = sibling("spear-fixture-server");
    let providers = json!([
        {"id": "fixture", "scope": "global", "command": [fixture]},
        {"id": "bare", "scope": "global", "command": no_tools_server(dir)},
        {"id": "gone", "scope": "global", "command": [fixture, "--exit-at-start", "3"]},
        {"id": "off", "scope": "global", "enabled": false,
         "command": [fixture, "--starts", starts]},
    ]);
    let file = dir.join("capabilities.json");
    std::fs::write(&file, json!({ "providers": providers }).to_string()).expect("write");
    file
}

#[test]
fn check_start_says_what_each_server_offers_and_why_one_did_not_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let out = cli(&["check", "--start", file.to_str().expect("utf-8")]);
    let stdout = text(&out.stdout);
    // A start that failed is a failed check.
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    let line_after = |id: &str| {
        let at = stdout
            .find(&format!("  ok       {id}"))
            .unwrap_or_else(|| panic!("{id} in {stdout}"));
        let said: Vec<&str> = stdout[at..].lines().take(4).collect();
        said.join("\n")
    };
    let fixture = line_after("fixture");
    assert!(
        fixture.contains("started: mcp-stdio: server spear-fixture-server ")
            && fixture.contains(" ms), 9 tools"),
        "{fixture}"
    );
    let bare = line_after("bare");
    assert!(
        bare.contains(" ms), declares no tools (a provider with no capabilities)"),
        "{bare}"
    );
    let gone = line_after("gone");
    assert!(gone.contains("start failed: "), "{gone}");
    let off = line_after("off");
    assert!(
        !off.contains("started:") && !off.contains("start failed"),
        "{stdout}"
    );
    assert!(
        !dir.path().join("off-starts").exists(),
        "a disabled entry was started"
    );
    assert!(stdout.ends_with(", 1 failed to start\n"), "{stdout}");
}

#[test]
fn check_start_json_carries_each_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let out = cli(&["check", "--start", "--json", file.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let by_id = |id: &str| {
        v["providers"]
            .as_array()
            .expect("providers")
            .iter()
            .find(|p| p["id"] == id)
            .unwrap_or_else(|| panic!("{id} in {v}"))
            .clone()
    };
    assert_eq!(
        by_id("fixture")["started"]["tools"]
            .as_array()
            .map(Vec::len),
        Some(9)
    );
    assert_eq!(by_id("bare")["started"]["declares_no_tools"], true);
    assert!(by_id("gone")["started"]["error"].is_string(), "{v}");
    assert!(by_id("off").get("started").is_none(), "{v}");
}

#[test]
fn without_start_check_starts_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let out = cli(&["check", file.to_str().expect("utf-8")]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(!stdout.contains("started"), "{stdout}");
    let out = cli(&["check", "--wait", "5", file.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2), "--wait needs --start");
}

#[test]
fn check_start_leaves_an_unscoped_entry_whose_program_is_missing_a_warning() {
    // An entry without a scope applies nowhere, so a missing program is
    // only a warning for `check`; `--start` must not try it and fail.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("capabilities.json");
    let providers = json!([
        {"id": "fixture", "scope": "global", "command": [sibling("spear-fixture-server")]},
        {"id": "nowhere", "command": ["/no/such/server"]},
    ]);
    std::fs::write(&file, json!({ "providers": providers }).to_string()).expect("write");
    let out = cli(&["check", "--start", file.to_str().expect("utf-8")]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains(" ms), 9 tools\n"), "{stdout}");
    assert!(!stdout.contains("start failed"), "{stdout}");
    assert!(
        stdout.contains("a warning only: it has no scope"),
        "{stdout}"
    );
}

/// Issue 46, operator 2: a `read` name the server does not offer (a typo
/// silently makes a READ tool a WRITE) is said by `check --start` in text,
/// as a warning on the entry's own lines, under its start; it counts as a
/// warning and leaves the status 0.
#[test]
fn check_start_warns_on_the_entrys_own_lines_of_a_read_name_its_server_lacks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("capabilities.json");
    let fixture = sibling("spear-fixture-server");
    let providers = json!([
        {"id": "typo", "scope": "global", "read": ["echo", "ehco"], "command": [fixture]},
        {"id": "fine", "scope": "global", "read": ["echo"], "command": [fixture]},
    ]);
    std::fs::write(&file, json!({ "providers": providers }).to_string()).expect("write");
    let out = cli(&["check", "--start", file.to_str().expect("utf-8")]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let typo = &stdout[stdout.find("  ok       typo").expect("typo")..];
    let typo = &typo[..typo.find("  ok       fine").expect("fine after typo")];
    let lines: Vec<&str> = typo.lines().collect();
    assert!(lines[3].starts_with("           started: "), "{typo}");
    assert_eq!(
        lines[4],
        "           warning: read names `ehco`, which its server does not offer (a tool of another name stays a WRITE)",
        "{typo}"
    );
    assert_eq!(lines.len(), 5, "{typo}");
    let fine = &stdout[stdout.find("  ok       fine").expect("fine")..];
    assert!(!fine.contains("warning: "), "{stdout}");
    assert!(
        stdout.ends_with("2 registered, 0 refused, 1 warning\n"),
        "{stdout}"
    );
}
