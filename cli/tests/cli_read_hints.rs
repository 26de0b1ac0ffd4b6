//! Issue 46, operator 4: a server's read-only hints shown as a suggestion.
//! `get --start` shows each tool's `readOnlyHint` and prints the `set ID
//! --read ...` line that would adopt them; nothing is adopted by itself (a
//! tool is READ only when the entry's `read` names it), and the line, run,
//! adopts them. Through the built binary and a scripted server.

mod common;

use common::{cli, script_server, text};

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// A registry in `dir` with `hints`, a scripted server offering `look`
/// (marked read-only, not in `read`), `peek` (marked read-only, in
/// `read`), `poke` (marked not read-only), `plain` (no hint) and `bad
/// name` (marked read-only, but left out by the gateway).
fn registry(dir: &Path) -> PathBuf {
    let object = json!({"type": "object"});
    let reads = json!({"readOnlyHint": true, "destructiveHint": false});
    let tools = json!([
        {"name": "look", "inputSchema": object, "annotations": reads},
        {"name": "peek", "inputSchema": object, "annotations": reads},
        {"name": "poke", "inputSchema": object, "annotations": {"readOnlyHint": false}},
        {"name": "plain", "inputSchema": object},
        {"name": "bad name", "inputSchema": object, "annotations": reads},
    ]);
    let script = json!({"tools/list": {"": [{"result": {"tools": tools}}]}});
    let entry = json!({"id": "hints", "scope": "global", "read": ["peek"],
        "command": script_server(dir, "hints", &script)});
    let file = dir.join("capabilities.json");
    std::fs::write(&file, json!({ "providers": [entry] }).to_string()).expect("write");
    file
}

/// The line of `stdout` that starts with `start`, whole.
fn line<'a>(stdout: &'a str, start: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line {start:?} in {stdout}"))
}

/// The hint lines under the tool line that starts with `start`.
fn hint_under(stdout: &str, start: &str) -> Option<String> {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with(start))
        .skip(1)
        .take_while(|l| l.starts_with("         ") && !l.starts_with("         {"))
        .find(|l| l.contains("server's hint"))
        .map(|l| l.trim().to_owned())
}

#[test]
fn get_start_shows_each_hint_and_the_set_line_that_adopts_them_and_adopts_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let path = file.to_str().expect("utf-8");
    let before = std::fs::read(&file).expect("read");
    let out = cli(&["get", "hints", "--start", "--capabilities", path]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));

    // Each tool keeps the class `read` gives it, whatever its hint.
    assert!(line(&stdout, "  WRITE  look").ends_with("look"), "{stdout}");
    assert!(line(&stdout, "  READ   peek").ends_with("peek"), "{stdout}");
    let said = |tool| hint_under(&stdout, tool);
    assert_eq!(
        said("  WRITE  look").as_deref(),
        Some("server's hint: read-only")
    );
    assert_eq!(
        said("  READ   peek").as_deref(),
        Some("server's hint: read-only")
    );
    assert_eq!(
        said("  WRITE  poke").as_deref(),
        Some("server's hint: not read-only")
    );
    assert_eq!(said("  WRITE  plain"), None, "{stdout}");

    // The line that would adopt them: `read` and every admitted tool marked
    // read-only (`bad name` is left out), in the file named.
    let command = format!("spear-capabilities set hints --capabilities {path} --read look,peek");
    assert!(
        stdout.ends_with(&format!(
            "read-only hints: the server marks 1 tool read-only that `read` does not name (a tool is READ only when `read` names it); to adopt the hints:\n  {command}\n"
        )),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read(&file).expect("read"),
        before,
        "nothing adopted"
    );

    let out = cli(&["get", "hints", "--start", "--json", "--capabilities", path]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let tools = v["started"]["tools"].as_array().expect("tools");
    let hint_of = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| (t["class"].clone(), t["read_only_hint"].clone()))
    };
    assert_eq!(hint_of("look"), Some((json!("WRITE"), json!(true))));
    assert_eq!(hint_of("poke"), Some((json!("WRITE"), json!(false))));
    assert_eq!(hint_of("plain"), Some((json!("WRITE"), Value::Null)));
    assert_eq!(v["started"]["hinted_read_only"], json!(["look"]));
    assert_eq!(v["adopt_hints"], json!(command));

    // Run as printed, the line adopts them: `look` is READ, and there is
    // nothing left to adopt.
    let args: Vec<&str> = command.split(' ').skip(1).collect();
    let out = cli(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = cli(&["get", "hints", "--start", "--capabilities", path]);
    let stdout = text(&out.stdout);
    assert!(line(&stdout, "  READ   look").ends_with("look"), "{stdout}");
    assert!(!stdout.contains("read-only hints"), "{stdout}");
    assert!(!stdout.contains("spear-capabilities set"), "{stdout}");
}
