//! Issue 43, defect 1: nothing a server wrote reaches the operator's
//! terminal raw. A server's name and a tool's description that hide bidi
//! overrides, zero-width and tag characters, and a server whose
//! `initialize` error and stderr carry escape sequences (a window title, a
//! screen clear) and a forged `ok` status line for another provider: `get
//! --start`, `list` and `check --start` say them through the core's
//! sanitiser (text), or as JSON escapes (`--json`, which still gives a
//! script the server's own text). Through the built binary and scripted
//! servers.

mod common;

use common::{cli, on_registry, script_server, text};

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

/// What a server of the `bidi` entry hides: right-to-left override, pop
/// directional formatting, zero-width space, first-strong and pop
/// isolates, and the tag letter A.
const HIDDEN: [char; 6] = [
    '\u{202e}',
    '\u{202c}',
    '\u{200b}',
    '\u{2068}',
    '\u{2069}',
    '\u{e0041}',
];

/// A registry in `dir` with two scripted servers: `bidi`, whose
/// `serverInfo.name` is `b\u{202e}b` and whose tool's title and
/// description hide [`HIDDEN`] and U+2066; `esc`, whose `initialize` is
/// answered with an error, after a stderr line, each carrying a window
/// title, a screen clear, a cursor move and a forged `ok` line.
fn registry(dir: &Path) -> PathBuf {
    let bidi = json!({
        "initialize": [{"result": {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "b\u{202e}b", "version": "1\u{200b}"}
        }}],
        "tools/list": {"": [{"result": {"tools": [{
            "name": "look",
            "title": "Lo\u{2066}ok\u{2069}",
            "description": "a\u{202e}b\u{202c}c\u{200b}d\u{2066}e\u{2069}f\u{e0041}g \u{2068}h",
            "inputSchema": {"type": "object", "properties": {
                "q": {"type": "string", "description": "x\u{202e}y\u{200b}z"}
            }}
        }]}}]}
    });
    let forged = |other: &str| {
        format!(
            "\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[H\n  ok       {other}: ready in 1 ms, 3 tools\n"
        )
    };
    let esc = json!({"initialize": [
        {"stderr": forged("tracker")},
        {"sleep_ms": 100},
        {"line": {"jsonrpc": "2.0", "id": "$ID",
                  "error": {"code": -32000, "message": forged("notes")}}}
    ]});
    let providers = json!([
        {"id": "bidi", "scope": "global", "command": script_server(dir, "bidi", &bidi)},
        {"id": "esc", "scope": "global", "command": script_server(dir, "esc", &esc)},
    ]);
    let file = dir.join("capabilities.json");
    std::fs::write(&file, json!({ "providers": providers }).to_string()).expect("write");
    file
}

/// Whether a terminal would hide `c` or act on it: a control other than a
/// line break or tab (escape, BEL, C1), a bidi, zero-width or tag
/// character, or a byte-order mark.
fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}' | '\u{feff}' | '\u{e0000}'..='\u{e0fff}')
}

/// Asserts that neither stream of `out` carries a character a terminal
/// would hide or act on, nor a line that stands as a provider's status
/// that no entry has (`tracker`, `notes`); returns standard output.
fn clean(out: &Output, what: &str) -> String {
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let said = text(bytes);
        let raw: Vec<String> = said
            .chars()
            .filter(|c| hidden(*c))
            .map(|c| format!("U+{:04X}", u32::from(c)))
            .collect();
        assert!(raw.is_empty(), "{what} {stream} carries {raw:?}:\n{said}");
        for line in said.lines() {
            assert!(
                !line.starts_with("  ok       tracker") && !line.starts_with("  ok       notes"),
                "{what} {stream} has a forged status line {line:?}:\n{said}"
            );
        }
    }
    text(&out.stdout)
}

#[test]
fn get_start_says_a_servers_name_and_tools_without_their_hidden_characters() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let path = file.to_str().expect("utf-8");
    let out = cli(&["get", "bidi", "--start", "--capabilities", path]);
    let stdout = clean(&out, "get --start");
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("server bb 1, protocol 2025-06-18"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  WRITE  look  Look: abcdefg h\n"),
        "{stdout}"
    );
    // The schema's text keeps what was hidden in it, as JSON escapes.
    assert!(
        stdout.contains(r#""description": "x\u202ey\u200bz""#),
        "{stdout}"
    );

    let out = cli(&["get", "bidi", "--start", "--json", "--capabilities", path]);
    clean(&out, "get --start --json");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let tool = &v["started"]["tools"][0];
    assert_eq!(
        tool["description"], "a\u{202e}b\u{202c}c\u{200b}d\u{2066}e\u{2069}f\u{e0041}g \u{2068}h",
        "a script still reads the server's own text"
    );
    assert_eq!(v["started"]["info"]["server"], "bb");
}

#[test]
fn get_start_says_a_failed_start_without_the_servers_escape_sequences() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let path = file.to_str().expect("utf-8");
    let out = cli(&["get", "esc", "--start", "--capabilities", path]);
    let stdout = clean(&out, "get --start");
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(
            "\nstart failed: provider `esc` did not start: the server refused to initialize: error -32000: ok notes: ready in 1 ms, 3 tools"
        ),
        "the failure is still said, on one line: {stdout}"
    );
    let out = cli(&["get", "esc", "--start", "--json", "--capabilities", path]);
    clean(&out, "get --start --json");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let error = v["started"]["error"].as_str().expect("error");
    assert!(error.contains("\u{1b}]0;owned\u{7}"), "{error}");
}

#[test]
fn list_says_each_provider_without_what_its_server_hides_or_forges() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let out = on_registry(&file, &["list"]);
    let stdout = clean(&out, "list");
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("\n           mcp-stdio: server bb 1, protocol 2025-06-18\n"),
        "{stdout}"
    );
    let failed = stdout
        .lines()
        .find(|l| l.starts_with("  failed   esc: unavailable ("))
        .unwrap_or_else(|| panic!("esc's line in {stdout}"));
    assert!(
        failed.contains(" ok notes: ready in 1 ms, 3 tools"),
        "the forged line is part of esc's: {failed}"
    );

    let out = on_registry(&file, &["list", "--json"]);
    clean(&out, "list --json");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let esc = v["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .find(|p| p["id"] == "esc")
        .expect("esc");
    let message = esc["message"].as_str().expect("message");
    assert!(message.contains("\u{1b}[2J"), "{message}");
}

#[test]
fn check_start_says_each_start_without_what_its_server_hides_or_forges() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path());
    let path = file.to_str().expect("utf-8");
    let out = cli(&["check", "--start", path]);
    let stdout = clean(&out, "check --start");
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(
            "\n           started: mcp-stdio: server bb 1, protocol 2025-06-18 (ready in "
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("\n           start failed: provider `esc` "),
        "{stdout}"
    );
    let out = cli(&["check", "--start", "--json", path]);
    clean(&out, "check --start --json");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["providers"][0]["started"]["info"]["server"], "bb", "{v}");
    let tool = &v["providers"][0]["started"]["tools"][0];
    assert!(
        tool["title"]
            .as_str()
            .is_some_and(|t| t.chars().any(|c| HIDDEN.contains(&c) || c == '\u{2066}')),
        "{tool}"
    );
}
