//! `spear-capabilities turn`, `list` and `invoke`, run as the real binary
//! against the example MCP server: the README's first command, end to end.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The example server must have been built beside this binary (`cargo test
/// --workspace` builds every binary of the workspace).
fn require_example_server() {
    let exe = Path::new(env!("CARGO_BIN_EXE_spear-capabilities"));
    let server = exe.with_file_name("spear-example-server");
    assert!(
        server.exists(),
        "{} is missing: build the workspace first (cargo build --workspace)",
        server.display()
    );
}

fn cli(args: &[&str], stdin: Option<&str>) -> Output {
    require_example_server();
    let mut child = Command::new(env!("CARGO_BIN_EXE_spear-capabilities"))
        .args(args)
        .current_dir(root())
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let mut input = child.stdin.take().expect("stdin");
    input
        .write_all(stdin.unwrap_or("").as_bytes())
        .expect("write stdin");
    drop(input);
    child.wait_with_output().expect("output")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const CONTEXT: [&str; 4] = [
    "--capabilities",
    "examples/capabilities.json",
    "--project",
    "demo",
];

#[test]
fn the_readme_turn_shows_describes_invokes_and_refuses_a_write() {
    let turn_txt = std::fs::read_to_string(root().join("examples/turn.txt")).expect("turn.txt");
    let mut args = vec!["turn"];
    args.extend(CONTEXT);
    args.extend(["--confirm", "no"]);
    let out = cli(&args, Some(&turn_txt));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.starts_with(
            "== what the turn is shown (exposure: whole) ==\nExternal capabilities (3 offered)."
        ),
        "{stdout}"
    );
    assert!(stdout.contains("notes/add_note (WRITE): Add a note"));
    assert!(stdout.contains(
        "$ spear-capability describe notes/search_notes\nnotes/search_notes (READ): Search notes\n"
    ));
    assert!(stdout.contains("<<<EXTERNAL-CONTENT "), "{stdout}");
    assert!(
        stdout.contains("\n#2: Flaky test\n<<<END-EXTERNAL-CONTENT "),
        "{stdout}"
    );
    assert!(stdout.contains(
        "$ grep -r spear-capability docs\n(not a spear-capability command: the shell runs it)\n"
    ));
    // The turn's text is the core's; the status says the operator's answer (issue 33.5).
    assert!(stdout.contains("`notes/add_note` is a WRITE capability, and the session's permission mode (ask) did not allow it.\n[refused: declined at confirmation (--confirm no)]\n"), "{stdout}");
    assert!(stdout.contains("at /id: \"two\" is not of type \"integer\""));
    // Nothing of the deployment's own file reaches the turn.
    assert!(!stdout.contains("target/debug"), "{stdout}");
    assert!(
        !stdout.contains("firmware-tracker"),
        "a provider for another project never shows: {stdout}"
    );
}

#[test]
fn json_lines_have_the_fixed_shapes() {
    let mut args = vec!["turn", "--json", "--mode", "auto"];
    args.extend(CONTEXT);
    args.extend([
        "--command",
        "spear-capability invoke notes/add_note '{\"title\": \"t\", \"text\": \"x\"}'",
        "--command",
        "ls",
    ]);
    let out = cli(&args, None);
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["kind"], "shown");
    assert_eq!(lines[0]["exposure"], "whole");
    assert_eq!(lines[0]["capabilities"][2]["id"], "notes/add_note");
    assert_eq!(lines[0]["capabilities"][2]["class"], "WRITE");
    assert_eq!(lines[0]["unavailable"], serde_json::json!([]));
    assert_eq!(lines[1]["kind"], "answer");
    assert_eq!(lines[1]["handled"], true);
    assert_eq!(lines[1]["status"], "ok");
    assert!(
        lines[1]["text"]
            .as_str()
            .expect("text")
            .contains("added note #4")
    );
    assert_eq!(
        lines[2],
        serde_json::json!({"kind": "answer", "command": "ls", "handled": false})
    );
}

#[test]
fn list_shows_provider_states_and_capabilities() {
    let mut args = vec!["list"];
    args.extend(CONTEXT);
    let out = cli(&args, None);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.starts_with("providers:\n  ok       notes: ready in "),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "\n  -        firmware-tracker: not selected: its scope does not cover the turn\n"
        ),
        "{stdout}"
    );
    assert!(stdout.contains(" ms, 3 tools\n"), "{stdout}");
    assert!(
        stdout.contains("\nexposure: whole (3 capabilities, about "),
        "{stdout}"
    );
    assert!(
        stdout.contains("\n  notes/search_notes  READ   Search notes\n"),
        "{stdout}"
    );
}

#[test]
fn invoke_makes_one_checked_call_with_exit_codes() {
    let run = |id: &str, json: &str, extra: &[&str]| {
        let mut args = vec!["invoke", id, json];
        args.extend(CONTEXT);
        args.extend(extra);
        cli(&args, None)
    };
    let ok = run("notes/get_note", r#"{"id": 1}"#, &[]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    assert!(text(&ok.stdout).contains("# Release checklist"));
    let refused = run(
        "notes/add_note",
        r#"{"title": "a", "text": "b"}"#,
        &["--mode", "read-only"],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(text(&refused.stdout).contains("permission mode (read-only) did not allow it"));
    let usage = run("notes", "{}", &[]);
    assert_eq!(usage.status.code(), Some(2));
    let bad_json = run("notes/get_note", "{", &[]);
    assert_eq!(bad_json.status.code(), Some(2));
    let json = run("notes/get_note", r#"{"id": 9}"#, &["--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(v["status"], "failed", "the tool's isError is a failure");
    assert_eq!(json.status.code(), Some(1));
}

#[test]
fn an_unreadable_registry_exits_2() {
    let out = cli(
        &["turn", "--capabilities", "examples", "--project", "demo"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr)
            .starts_with("spear-capabilities: cannot read capabilities file examples: ")
    );
}

#[test]
fn earlier_runtime_and_unregistered_trees() {
    let out = cli(
        &[
            "turn",
            "--capabilities",
            "examples/capabilities.json",
            "--project",
            "demo",
            "--runtime",
            "earlier",
            "--command",
            "spear-capability list",
        ],
        None,
    );
    let stdout = text(&out.stdout);
    assert!(stdout.contains("it runs on SPEAR's earlier runtime, which has no capability gateway.\n\n$ spear-capability list\nExternal capabilities are not available"), "{stdout}");
    let out = cli(
        &[
            "turn",
            "--capabilities",
            "examples/capabilities.json",
            "--command",
            "spear-capability list",
        ],
        None,
    );
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("== what the turn is shown (exposure: none) ==\n(nothing)\n"),
        "{stdout}"
    );
}

#[test]
fn task_flags_use_the_cores_names() {
    let out = cli(
        &[
            "list",
            "--capabilities",
            "examples/capabilities.json",
            "--project",
            "demo",
            "--task",
            "general",
        ],
        None,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("exposure: whole (2 capabilities"),
        "a general turn gets READ only: {stdout}"
    );
    let out = cli(
        &[
            "list",
            "--task",
            "compliance-check",
            "--capabilities",
            "examples/capabilities.json",
            "--project",
            "demo",
        ],
        None,
    );
    assert!(text(&out.stdout).contains("exposure: none (0 capabilities"));
    let bad = cli(&["list", "--task", "chat"], None);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("[possible values: implementation, mixed, general, standard-question, normative-prepass, compliance-check]"));
}

/// A registry beside the example server: `notes` with a misspelt `read`
/// name, `time` whose server is not installed, `tracker` for another corpus.
fn registry_with_one_failing(dir: &Path) -> PathBuf {
    let server =
        Path::new(env!("CARGO_BIN_EXE_spear-capabilities")).with_file_name("spear-example-server");
    let body = serde_json::json!({"providers": [
        {"id": "notes", "command": [server], "scope": "corpus demo",
         "read": ["search_notes", "get_note", "serch_notes"], "timeout": 10},
        {"id": "time", "command": ["/opt/mcp/bin/mcp-server-time"], "scope": "global", "timeout": 10},
        {"id": "tracker", "command": ["tracker-mcp"], "scope": "corpus firmware-a", "timeout": 10}
    ]});
    let file = dir.join("capabilities.json");
    std::fs::write(&file, body.to_string()).expect("write");
    file
}

/// Issue 14.2: one provider failing makes `list` exit 1 with a status
/// column; a misspelt `read` name is warned about; a provider left out
/// says why. (The README's transcript.)
#[test]
fn list_with_one_provider_failing_exits_1_and_says_why_for_each() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry_with_one_failing(dir.path());
    let out = cli(
        &[
            "list",
            "--capabilities",
            file.to_str().expect("utf8"),
            "--project",
            "demo",
        ],
        None,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    for line in [
        "providers:\n  ok       notes: ready in ",
        "\n  failed   time: unavailable (did_not_start): provider `time` did not start: cannot start `/opt/mcp/bin/mcp-server-time`: No such file or directory (os error 2)\n",
        "\n  -        tracker: not selected: its scope does not cover the turn\n",
        "\nwarning: `notes`: read names `serch_notes`, which its server does not offer (a tool of another name stays a WRITE)\n",
        "\n  notes/add_note      WRITE  Add a note\n",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
    let json = cli(
        &[
            "list",
            "--json",
            "--capabilities",
            file.to_str().expect("utf8"),
            "--project",
            "demo",
        ],
        None,
    );
    assert_eq!(json.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("one JSON object");
    assert_eq!(v["providers"][0]["status"], "ok");
    assert_eq!(v["providers"][0]["tools"], 3);
    assert!(v["providers"][0]["started_in_ms"].is_u64(), "{v}");
    assert_eq!(v["providers"][1]["status"], "failed");
    assert_eq!(v["providers"][1]["reason"], "did_not_start");
    assert_eq!(v["not_selected"][0]["provider"], "tracker");
    assert!(
        v["warnings"][0]
            .as_str()
            .is_some_and(|w| w.contains("serch_notes")),
        "{v}"
    );
}

/// "(none reaches this turn)" says why for each registered provider.
#[test]
fn list_says_why_no_provider_reaches_the_turn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry_with_one_failing(dir.path());
    let out = cli(
        &["list", "--capabilities", file.to_str().expect("utf8")],
        None,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.starts_with("providers:\n  (none reaches this turn)\n  -        notes: not selected: the turn's tree is not a registered project\n"),
        "{stdout}"
    );
}

/// Issue 14.3: each subcommand's help ends with examples; a misspelt
/// subcommand or capability gets "did you mean", and the operator is sent
/// to the operator's command, not the turn's.
#[test]
fn help_has_examples_and_near_misses_get_did_you_mean() {
    for sub in ["check", "list", "turn", "invoke"] {
        let help = cli(&[sub, "--help"], None);
        let stdout = text(&help.stdout);
        assert!(
            stdout.contains(&format!("Examples:\n  spear-capabilities {sub}")),
            "{stdout}"
        );
    }
    let typo = cli(&["lisst"], None);
    assert_eq!(typo.status.code(), Some(2));
    assert!(
        text(&typo.stderr).contains("tip: a similar subcommand exists: 'list'"),
        "{}",
        text(&typo.stderr)
    );
    let mut args = vec!["invoke", "notes/serch_notes", "{}"];
    args.extend(CONTEXT);
    let out = cli(&args, None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stdout),
        "No capability `notes/serch_notes` reaches this turn; did you mean `notes/search_notes`? `spear-capabilities list` with the same flags shows the ones that do.\n"
    );
}

/// `list` under a terminal (util-linux `script` gives it one), as a person
/// would run it: the status word in colour; with `NO_COLOR` or piped, none.
fn list_on_a_terminal(no_color: bool) -> String {
    let exe = env!("CARGO_BIN_EXE_spear-capabilities");
    let line = format!("{exe} list --capabilities examples/capabilities.json --project demo");
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .current_dir(root())
        .env_remove("NO_COLOR")
        .stdin(Stdio::null());
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    let out = cmd.output().expect("util-linux `script` runs");
    text(&out.stdout)
}

#[test]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    require_example_server();
    let tty = list_on_a_terminal(false);
    assert!(
        tty.contains("\x1b[1m\x1b[32mok      \x1b[0m notes: ready in "),
        "{tty:?}"
    );
    let plain = list_on_a_terminal(true);
    assert!(plain.contains("  ok       notes: ready in "), "{plain:?}");
    assert!(!plain.contains("\x1b[32m"), "{plain:?}");
    let mut args = vec!["list"];
    args.extend(CONTEXT);
    let piped = text(&cli(&args, None).stdout);
    assert!(!piped.contains('\x1b'), "{piped:?}");
}

/// Issue 14.3: `--trace FILE` records every JSON-RPC line both ways, with
/// the provider and a time stamp; the turn works the same through it.
#[test]
fn trace_records_every_json_rpc_line_with_provider_and_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("trace.jsonl");
    let mut args = vec!["invoke", "notes/get_note", r#"{"id": 1}"#];
    args.extend(CONTEXT);
    args.extend(["--trace", trace.to_str().expect("utf8")]);
    let out = cli(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("# Release checklist"));
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&trace)
        .expect("the trace")
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object a line"))
        .collect();
    let said = |direction: &str, what: &str| {
        records.iter().any(|r| {
            r["direction"] == direction && r["line"].as_str().is_some_and(|l| l.contains(what))
        })
    };
    assert!(said("sent", r#""method":"initialize""#), "{records:?}");
    assert!(
        said("received", r#""protocolVersion":"2025-06-18""#),
        "{records:?}"
    );
    assert!(said("sent", r#""method":"tools/call""#), "{records:?}");
    assert!(said("received", "Release checklist"), "{records:?}");
    assert!(
        records
            .iter()
            .all(|r| r["provider"] == "notes" && r["time"].as_u64().is_some_and(|t| t > 0))
    );
}

/// Issue 42.13: the trace holds what the servers are sent and say, so it is
/// created readable by its owner only (0600, as the registry is), whatever
/// the umask; a file that was there is narrowed and emptied.
#[test]
fn the_trace_file_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let fresh = dir.path().join("fresh.jsonl");
    let old = dir.path().join("old.jsonl");
    std::fs::write(&old, "an earlier trace\n").expect("write");
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    for trace in [&fresh, &old] {
        let mut args = vec!["list"];
        args.extend(CONTEXT);
        args.extend(["--trace", trace.to_str().expect("utf8")]);
        require_example_server();
        let out = Command::new("sh")
            .args(["-c", "umask 022; exec \"$0\" \"$@\""])
            .arg(env!("CARGO_BIN_EXE_spear-capabilities"))
            .args(&args)
            .current_dir(root())
            .env_remove("SPEAR_CAPABILITIES_FILE")
            .stdin(Stdio::null())
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let mode = std::fs::metadata(trace)
            .expect("the trace")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{}: {mode:o}", trace.display());
        let written = std::fs::read_to_string(trace).expect("read");
        assert!(written.starts_with("{\"direction\":\"sent\""), "{written}");
    }
}
