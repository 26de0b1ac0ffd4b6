//! Issue 14.3, what the operator sees and a turn never does, through the
//! built binary and the fixture server: the live start display on a
//! terminal, the server's name, version and protocol in `list`, and the raw
//! result in `invoke --json`.

mod common;

use common::{CLI, cli, sibling, text};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// A registry in `dir`: `fix`, the fixture server with `fixture_flags`,
/// its `echo`, `mixed` and `fail` READ; and, when `with_gone`, `gone`,
/// whose program does not exist.
fn registry(dir: &Path, fixture_flags: &[&str], with_gone: bool) -> PathBuf {
    let mut command = vec![json!(sibling("spear-fixture-server"))];
    command.extend(fixture_flags.iter().map(|f| json!(f)));
    let mut providers = vec![json!({
        "id": "fix", "command": command, "scope": "global", "timeout": 10,
        "read": ["echo", "mixed", "fail"],
    })];
    if with_gone {
        providers.push(json!({
            "id": "gone", "command": ["/nonexistent/spear-test/mcp-server"],
            "scope": "global", "timeout": 10,
        }));
    }
    let file = dir.join("capabilities.json");
    std::fs::write(&file, json!({ "providers": providers }).to_string()).expect("write");
    file
}

/// Runs the CLI with `args` under a pseudo-terminal (util-linux `script`
/// gives it one: standard output and error both go to it), and returns
/// what the terminal received.
fn on_a_terminal(args: &[&str], no_color: bool) -> String {
    on_a_terminal_of(args, no_color, "xterm")
}

/// As [`on_a_terminal`], with `TERM` set to `term`.
fn on_a_terminal_of(args: &[&str], no_color: bool, term: &str) -> String {
    let quoted: Vec<String> = std::iter::once(CLI)
        .chain(args.iter().copied())
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &quoted.join(" "), "/dev/null"])
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .env_remove("NO_COLOR")
        .env("TERM", term)
        .stdin(Stdio::null());
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    let out = cmd.output().expect("util-linux `script` runs");
    text(&out.stdout)
}

/// Whether `s` holds an SGR sequence (`ESC [ <digits;…> m`): a colour or
/// a weight.
fn has_sgr(s: &str) -> bool {
    s.match_indices("\x1b[").any(|(at, _)| {
        let rest = &s[at + 2..];
        let params = rest
            .find(|c: char| !(c.is_ascii_digit() || c == ';'))
            .unwrap_or(rest.len());
        rest[params..].starts_with('m')
    })
}

/// On a terminal, each provider's state is shown as it happens: the
/// fixture (slowed to 700 ms) first `starting`, then `ok` with its start
/// time and tools; the missing program `failed` with its reason. In
/// colour, and without colour under `NO_COLOR`.
#[test]
fn a_terminal_sees_each_provider_start_as_it_happens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path(), &["--start-delay", "700"], true);
    let args = [
        "turn",
        "--capabilities",
        file.to_str().expect("utf8"),
        "--project",
        "p",
        "--command",
        "spear-capability list",
    ];
    let tty = on_a_terminal(&args, false);
    let starting = tty
        .find("\x1b[1m\x1b[33mstarting\x1b[0m fix: starting for ")
        .unwrap_or_else(|| panic!("no live `starting` line: {tty:?}"));
    let ready = tty
        .find("\x1b[1m\x1b[32mok      \x1b[0m fix: ready in ")
        .unwrap_or_else(|| panic!("no `ok` line: {tty:?}"));
    assert!(starting < ready, "`starting` comes first: {tty:?}");
    assert!(tty[ready..].contains(" ms, 9 tools"), "{tty:?}");
    assert!(
        tty.contains("\x1b[1m\x1b[31mfailed  \x1b[0m gone: unavailable (did_not_start): provider `gone` did not start: cannot start `/nonexistent/spear-test/mcp-server`: No such file or directory (os error 2)"),
        "{tty:?}"
    );
    // The transcript follows as before.
    assert!(tty.contains("$ spear-capability list"), "{tty:?}");

    let plain = on_a_terminal(&args, true);
    let starting = plain
        .find("  starting fix: starting for ")
        .unwrap_or_else(|| panic!("{plain:?}"));
    let ready = plain
        .find("  ok       fix: ready in ")
        .unwrap_or_else(|| panic!("{plain:?}"));
    assert!(starting < ready, "{plain:?}");
    assert!(
        plain.contains("  failed   gone: unavailable (did_not_start): "),
        "{plain:?}"
    );
    assert!(!has_sgr(&plain), "no colour under NO_COLOR: {plain:?}");
}

/// Piped, with `--json`, or on a terminal that cannot move its cursor
/// (`TERM=dumb`), nothing of the display is written: the transcript and
/// standard error are as they were.
#[test]
fn piped_or_json_there_is_no_start_display() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path(), &[], true);
    let file = file.to_str().expect("utf8");
    let piped = cli(&["list", "--capabilities", file, "--project", "p"]);
    assert_eq!(piped.status.code(), Some(1));
    let (stdout, stderr) = (text(&piped.stdout), text(&piped.stderr));
    assert!(
        !stdout.contains('\x1b') && !stderr.contains('\x1b'),
        "{stdout}{stderr}"
    );
    assert!(!stderr.contains("fix: ready in"), "{stderr}");
    assert!(!stderr.contains("starting"), "{stderr}");

    let json = on_a_terminal(
        &["list", "--json", "--capabilities", file, "--project", "p"],
        false,
    );
    assert!(!json.contains("fix: ready in"), "{json:?}");
    assert!(!json.contains('\x1b'), "{json:?}");
    let v: Value = serde_json::from_str(json.trim()).expect("only the JSON object");
    assert_eq!(v["providers"][0]["status"], "ok");

    let dumb = on_a_terminal_of(
        &["list", "--capabilities", file, "--project", "p"],
        true,
        "dumb",
    );
    assert!(
        dumb.contains("providers:\r\n  ok       fix: ready in "),
        "{dumb:?}"
    );
    assert!(!dumb.contains("starting"), "{dumb:?}");
    assert!(!dumb.contains('\x1b'), "{dumb:?}");
}

/// `list` names each ready provider's server, version and protocol (text
/// and JSON); a turn's view (what it is shown, its list, describe and
/// invoke answers) never holds the server's name.
#[test]
fn list_shows_the_servers_name_version_and_protocol_and_a_turn_never_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path(), &[], false);
    let file = file.to_str().expect("utf8");
    let version = env!("CARGO_PKG_VERSION");
    let out = cli(&["list", "--capabilities", file, "--project", "p"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!(
            " ms, 9 tools\n           mcp-stdio: server spear-fixture-server {version}, protocol 2025-06-18\n"
        )),
        "{stdout}"
    );

    let out = cli(&["list", "--json", "--capabilities", file, "--project", "p"]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let info = &v["providers"][0]["info"];
    assert_eq!(info["kind"], "mcp-stdio", "{v}");
    assert_eq!(info["server"], "spear-fixture-server");
    assert_eq!(info["server_version"], version);
    assert_eq!(info["protocol"], "2025-06-18");
    // Issue 33.5: numbers as numbers.
    assert!(
        info["details"]["pid"]
            .as_u64()
            .is_some_and(|p| p > 0 && p <= u64::from(u32::MAX)),
        "{v}"
    );
    assert!(info["details"]["junk_lines"].is_u64(), "{v}");
    // What list shows of the turn has none of it.
    assert!(
        !v["text"]
            .as_str()
            .expect("text")
            .contains("spear-fixture-server")
    );

    let out = cli(&[
        "turn",
        "--capabilities",
        file,
        "--project",
        "p",
        "--command",
        "spear-capability list",
        "--command",
        "spear-capability describe fix/echo",
        "--command",
        "spear-capability invoke fix/echo '{\"text\": \"hi\"}'",
    ]);
    let turn = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{turn}");
    assert!(
        turn.contains("\nhi\n<<<END-EXTERNAL-CONTENT "),
        "the call went through: {turn}"
    );
    assert!(!turn.contains("spear-fixture-server"), "{turn}");
    assert!(!turn.contains("mcp-stdio"), "{turn}");
    assert!(!turn.contains("2025-06-18"), "{turn}");
}

/// `invoke --json` carries the provider's result in MCP's shape beside the
/// framed text: every content type and the structured content as the
/// fixture sent them, and `isError` of a tool that failed. A refusal, which
/// reached no provider, has none.
#[test]
fn invoke_json_carries_the_raw_result_beside_the_framed_text() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path(), &[], false);
    let file = file.to_str().expect("utf8");
    let invoke = |id: &str, arguments: &str| {
        let out = cli(&[
            "invoke",
            id,
            arguments,
            "--json",
            "--capabilities",
            file,
            "--project",
            "p",
        ]);
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)));
        (out.status.code(), v)
    };

    let (code, mixed) = invoke("fix/mixed", "{}");
    assert_eq!(code, Some(0), "{mixed}");
    assert_eq!(mixed["status"], "ok");
    assert!(
        mixed["text"]
            .as_str()
            .is_some_and(|t| t.contains("<<<EXTERNAL-CONTENT ")),
        "{mixed}"
    );
    assert_eq!(
        mixed["result"],
        json!({
            "content": [
                {"type": "text", "text": "all kinds"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "fixture://doc", "name": "doc", "mimeType": "text/plain"},
                {"type": "resource", "resource": {"uri": "fixture://inline", "text": "inline", "mimeType": "text/plain"}}
            ],
            "structuredContent": {"kinds": 5},
            "isError": false
        })
    );

    let (code, fail) = invoke("fix/fail", "{}");
    assert_eq!(code, Some(1), "{fail}");
    assert_eq!(fail["status"], "failed");
    assert_eq!(
        fail["result"],
        json!({"content": [{"type": "text", "text": "the tool failed"}], "isError": true})
    );
    assert!(
        fail["text"]
            .as_str()
            .is_some_and(|t| t.contains("reported an error")),
        "{fail}"
    );

    let (code, refused) = invoke("fix/echo", r#"{"text": 5}"#);
    assert_eq!(code, Some(1), "{refused}");
    assert_eq!(
        refused["status"], "refused",
        "the text must be a string: {refused}"
    );
    assert!(refused.get("result").is_none(), "{refused}");
}
