//! Issue 35.2's leftover: a server that declares no `tools` capability is
//! a provider with no capabilities, and `list`, `get --start` and the
//! turn's notice say so in those words, never an empty family in silence.
//! Through the built binary and a scripted server.

mod common;

use common::{cli, no_tools_server, on_registry, text};

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// A registry in `dir` with `bare`, a scripted server whose `initialize`
/// declares only `prompts`, and whose `tools/list` (never to be sent)
/// would fail.
fn registry(dir: &Path) -> PathBuf {
    let file = dir.join("capabilities.json");
    let entry = json!({"id": "bare", "scope": "global",
        "command": no_tools_server(dir)});
    std::fs::write(&file, json!({ "providers": [entry] }).to_string()).expect("write");
    file
}

#[test]
fn list_says_a_provider_declares_no_tools() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let out = on_registry(&file, &["list"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(" bare: ready in ")
            && stdout.contains(" ms, declares no tools (a provider with no capabilities)\n"),
        "{stdout}"
    );
    let out = on_registry(&file, &["list", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["providers"][0]["declares_no_tools"], true, "{v}");
    assert_eq!(v["providers"][0]["tools"], 0, "{v}");
}

#[test]
fn get_start_says_the_server_declares_no_tools() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let path = file.to_str().expect("utf-8");
    let out = cli(&["get", "bare", "--start", "--capabilities", path]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(
            "\ntools: none: the server declares no tools (a provider with no capabilities)\n"
        ),
        "{stdout}"
    );
    let out = cli(&["get", "bare", "--start", "--json", "--capabilities", path]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["started"]["declares_no_tools"], true, "{v}");
}

#[test]
fn the_turns_notice_says_the_provider_declares_no_tools() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let out = on_registry(&file, &["turn", "--command", "spear-capability list"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(
            "notice: External capability provider `bare` declares no tools: it has no capabilities to offer.\n"
        ),
        "{stdout}"
    );
}
