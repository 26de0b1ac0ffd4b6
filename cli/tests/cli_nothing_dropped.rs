//! Issue 33.1, nothing is dropped without a word, through the built binary
//! and the example server: a refused registry entry in `list`, `turn` and
//! `invoke` (text and `--json`), and in `list`'s and `turn`'s exit status
//! (`invoke`'s is its call's); a capabilities
//! file named on the command line that does not exist; the flag to pass
//! when no `--project` was given.

mod common;

use common::{CLI, text};

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

/// The refusal `check` prints for the `typo` entry of [`registry`].
const TYPO_PROBLEM: &str = r#"key "timout": unknown key; did you mean "timeout"?"#;

/// Where `needle` first is in the file `file` (with `brace`, the `{`
/// before it): line and column, from 1.
fn place(file: &str, needle: &str, brace: bool) -> (usize, usize) {
    let text = std::fs::read_to_string(file).expect("read");
    let mut offset = text.find(needle).expect("in the file");
    if brace {
        offset = text[..offset].rfind('{').expect("a brace");
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

/// The problem line `check` prints for the `typo` entry of the registry
/// `file`: where its key is, then the problem.
fn typo_line(file: &str) -> String {
    let (line, column) = place(file, "\"timout\"", false);
    format!("{file}:{line}:{column}: {TYPO_PROBLEM}")
}

/// The `typo` entry of the registry `file` as `--json` gives it.
fn typo_json(file: &str) -> Value {
    let (line, column) = place(file, "\"timout\"", false);
    let (entry_line, entry_column) = place(file, "\"timout\"", true);
    json!({
        "entry": "providers[1] (\"typo\")", "id": "typo", "index": 1,
        "line": entry_line, "column": entry_column,
        "problems": [{
            "key": "timout", "kind": "unknown_key",
            "message": "unknown key; did you mean \"timeout\"?",
            "line": line, "column": column, "text": TYPO_PROBLEM,
        }],
    })
}

fn example_server() -> PathBuf {
    let server = Path::new(CLI).with_file_name("spear-example-server");
    assert!(
        server.exists(),
        "{} is missing: build the workspace first (cargo build --workspace)",
        server.display()
    );
    server
}

/// A registry in `dir`: `notes`, the example server with `get_note` READ,
/// for every registered project; and, when `with_typo`, a second entry the
/// registry refuses for its misspelt `timeout`.
fn registry(dir: &Path, with_typo: bool) -> PathBuf {
    let server = example_server();
    let mut providers = vec![json!({
        "id": "notes", "command": [server], "scope": "global",
        "read": ["get_note"], "timeout": 10,
    })];
    if with_typo {
        providers.push(json!({
            "id": "typo", "command": [server], "scope": "global", "timout": 5,
        }));
    }
    let file = dir.join("capabilities.json");
    let text = serde_json::to_string_pretty(&json!({ "providers": providers })).expect("json");
    std::fs::write(&file, text).expect("write");
    file
}

/// Runs the CLI with `args` in `dir`, standard input empty.
fn cli_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(CLI)
        .args(args)
        .current_dir(dir)
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("runs")
}

fn cli(args: &[&str]) -> Output {
    cli_in(Path::new("."), args)
}

/// `list` shows the refused entry in its provider column, with its
/// problem, as `check` does, and exits 1 though every selected provider is
/// ready; `--json` carries it as `refused`. Without the entry it exits 0.
#[test]
fn list_shows_a_refused_entry_with_its_problems_and_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path(), true);
    let file = file.to_str().expect("utf8");
    let out = cli(&["list", "--capabilities", file, "--project", "demo"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.starts_with("providers:\n  ok       notes: ready in "),
        "{stdout}"
    );
    let refusal = format!(
        "\n  refused  providers[1] (\"typo\")\n           {}\n",
        typo_line(file)
    );
    assert!(
        stdout.contains(&refusal),
        "missing {refusal:?} in:\n{stdout}"
    );

    let out = cli(&[
        "list",
        "--json",
        "--capabilities",
        file,
        "--project",
        "demo",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["providers"][0]["status"], "ok", "{v}");
    assert_eq!(v["refused"], json!([typo_json(file)]));

    let clean = registry(dir.path(), false);
    let out = cli(&[
        "list",
        "--json",
        "--capabilities",
        clean.to_str().expect("utf8"),
        "--project",
        "demo",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["refused"], json!([]));
}

/// `turn` says the refused entry on standard error (its standard output is
/// what the turn is shown, and a turn never learns of the registry's
/// refusals) and exits 1; `--json` gives it a `refused` line after `shown`.
#[test]
fn turn_says_a_refused_entry_beside_the_turns_view_and_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path(), true);
    let file = file.to_str().expect("utf8");
    let args = [
        "turn",
        "--capabilities",
        file,
        "--project",
        "demo",
        "--command",
        "spear-capability list",
    ];
    let out = cli(&args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!(
            "spear-capabilities: the registry refused 1 entry, which no turn gets (`spear-capabilities check` says the same):\n  refused  providers[1] (\"typo\")\n           {}\n",
            typo_line(file)
        )),
        "{stderr}"
    );
    assert!(
        stdout.contains("notes/get_note"),
        "the turn goes on: {stdout}"
    );
    assert!(!stdout.contains("typo"), "the turn is never told: {stdout}");

    let mut json_args = args.to_vec();
    json_args.push("--json");
    let out = cli(&json_args);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines[0]["kind"], "shown");
    let mut refused = typo_json(file);
    refused["kind"] = json!("refused");
    assert_eq!(lines[1], refused);
    assert_eq!(lines[2]["kind"], "answer");
}

/// Issue 46, operator 7: `invoke` makes the call, says the refused entry
/// on standard error (text) or as `refused` (`--json`), and exits with its
/// call's status: 0 for a call that answered ok, 1 for one refused.
#[test]
fn invoke_says_a_refused_entry_and_exits_with_its_calls_status() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path(), true);
    let file = file.to_str().expect("utf8");
    let args = [
        "invoke",
        "notes/get_note",
        r#"{"id": 1}"#,
        "--capabilities",
        file,
        "--project",
        "demo",
    ];
    let out = cli(&args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("# Release checklist"),
        "the call ran: {stdout}"
    );
    assert!(
        stderr.contains(&format!(
            "  refused  providers[1] (\"typo\")\n           {}\n",
            typo_line(file)
        )),
        "{stderr}"
    );

    let mut json_args = args.to_vec();
    json_args.push("--json");
    let out = cli(&json_args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["refused"], json!([typo_json(file)]));

    // A call refused (add_note is a WRITE its `refuse` policy refuses):
    // 1, its own status, whatever the rest of the file.
    let out = cli(&[
        "invoke",
        "notes/add_note",
        r#"{"title": "t", "text": "x"}"#,
        "--capabilities",
        file,
        "--project",
        "demo",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("WRITE"), "{}", text(&out.stdout));

    let clean = registry(dir.path(), false);
    let out = cli(&[
        "invoke",
        "notes/get_note",
        r#"{"id": 1}"#,
        "--capabilities",
        clean.to_str().expect("utf8"),
        "--project",
        "demo",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// A file named with `--capabilities` that does not exist is an error
/// naming it (exit 2) for `list`, `turn` and `invoke`, as for `check`; the
/// default location missing still means no providers (exit 0).
#[test]
fn a_named_capabilities_file_that_does_not_exist_exits_2_for_every_subcommand() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nothere.json");
    let missing = missing.to_str().expect("utf8");
    let expected = format!(
        "spear-capabilities: capabilities file {missing}: No such file or directory (os error 2)\n"
    );
    for args in [
        vec!["list", "--capabilities", missing, "--project", "demo"],
        vec![
            "list",
            "--json",
            "--capabilities",
            missing,
            "--project",
            "demo",
        ],
        vec![
            "turn",
            "--capabilities",
            missing,
            "--project",
            "demo",
            "--command",
            "spear-capability list",
        ],
        vec![
            "invoke",
            "notes/get_note",
            "{}",
            "--capabilities",
            missing,
            "--project",
            "demo",
        ],
        vec!["check", missing],
    ] {
        let out = cli(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(text(&out.stdout), "", "{args:?}");
        assert_eq!(text(&out.stderr), expected, "{args:?}");
    }

    // No --capabilities: capabilities.json beside ./projects.json, absent.
    let out = cli_in(dir.path(), &["list", "--project", "demo"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stderr),
        "spear-capabilities: no capabilities file at capabilities.json: no providers are registered\n"
    );
}

/// Without `--project` every entry is "not selected: the turn's tree is not
/// a registered project"; `list` then says which flag to pass (text and
/// `--json`), `turn` and `invoke` say it on standard error. With the flag
/// there is no hint.
#[test]
fn without_a_project_the_operator_is_told_to_pass_project_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path(), false);
    let file = file.to_str().expect("utf8");
    let hint = "no provider reaches a turn outside a registered project: pass `--project NAME` to act as a turn in one";

    let out = cli(&["list", "--capabilities", file]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "  -        notes: not selected: the turn's tree is not a registered project\nhint: {hint}\n"
        )),
        "{stdout}"
    );
    let out = cli(&["list", "--json", "--capabilities", file]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["hints"], json!([hint]), "{v}");

    for args in [
        vec![
            "turn",
            "--capabilities",
            file,
            "--command",
            "spear-capability list",
        ],
        vec![
            "invoke",
            "notes/get_note",
            r#"{"id": 1}"#,
            "--capabilities",
            file,
        ],
    ] {
        let out = cli(&args);
        assert!(
            text(&out.stderr).contains(&format!("spear-capabilities: hint: {hint}\n")),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }

    let out = cli(&[
        "list",
        "--json",
        "--capabilities",
        file,
        "--project",
        "demo",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["hints"], json!([]), "{v}");
    let out = cli(&[
        "turn",
        "--capabilities",
        file,
        "--project",
        "demo",
        "--command",
        "spear-capability list",
    ]);
    assert!(!text(&out.stderr).contains("hint"), "{}", text(&out.stderr));
}
