//! Issue 33.5, output an operator can use, through the built binary: what
//! `list --json` says of each capability, `invoke`'s arguments from a file
//! or standard input, `check --capabilities`, each provider once on a
//! terminal, singulars, a refusal's stop, one wording for a program that
//! cannot start, completions and man pages, a WRITE declined at
//! confirmation.

mod common;

use common::{CLI, bash_complete, on_a_terminal, sibling, text};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs the CLI in the workspace's root with `args`, `stdin` as its
/// standard input.
fn cli_with(args: &[&str], stdin: &str) -> Output {
    sibling("spear-example-server");
    let mut child = Command::new(CLI)
        .args(args)
        .current_dir(root())
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.as_bytes()).expect("write stdin");
    drop(input);
    child.wait_with_output().expect("output")
}

fn cli(args: &[&str]) -> Output {
    cli_with(args, "")
}

/// `args` after the example registry's context flags.
fn demo<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut all = args.to_vec();
    all.extend([
        "--capabilities",
        "examples/capabilities.json",
        "--project",
        "demo",
    ]);
    all
}

fn write_registry(dir: &Path, providers: &Value) -> PathBuf {
    let file = dir.join("capabilities.json");
    std::fs::write(&file, json!({ "providers": providers }).to_string()).expect("write");
    file
}

/// Each capability in `list --json` carries its description and its schema
/// as the turn is shown them (the text shown holds both), the schema as a
/// JSON object (issue 46, operator 9), and the exposure its token
/// estimate, the number the text form says; counts and ids are numbers.
#[test]
fn list_json_capabilities_carry_description_schema_object_and_the_token_estimate() {
    let out = cli(&demo(&["list", "--json"]));
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)));
    let shown = v["text"].as_str().expect("text");
    let caps = v["capabilities"].as_array().expect("capabilities");
    assert_eq!(caps.len(), 3, "{v}");
    for c in caps {
        let description = c["description"].as_str().expect("description");
        assert!(c["schema"].is_object(), "a JSON object, not text: {c}");
        let schema = serde_json::to_string(&c["schema"]).expect("json");
        assert!(!description.is_empty(), "{c}");
        assert!(shown.contains(description), "{c} in {shown}");
        assert!(shown.contains(&format!("arguments: {schema}\n")), "{c}");
        assert_eq!(c["schema"]["type"], "object", "{c}");
        assert!(c.get("schema_note").is_none(), "not shortened: {c}");
    }
    assert_eq!(caps[0]["schema"]["required"], json!(["query"]));
    assert_eq!(caps[0]["id"], "notes/search_notes");
    assert_eq!(
        caps[0]["description"],
        "Find notes whose title or text contains a word. Returns matching note ids and titles."
    );
    let tokens = v["tokens"].as_u64().expect("tokens, a number");
    let listed = text(&cli(&demo(&["list"])).stdout);
    assert!(
        listed.contains(&format!(
            "(3 capabilities, about {tokens} tokens of descriptions and schemas)"
        )),
        "{listed}"
    );
    let notes = &v["providers"][0];
    assert!(notes["tools"].is_u64(), "{notes}");
    assert!(notes["started_in_ms"].is_u64(), "{notes}");
    assert!(notes["info"]["details"]["pid"].is_u64(), "{notes}");
}

/// `invoke ID @FILE` reads the arguments from FILE and `invoke ID -` from
/// standard input; a file that cannot be read, or text that is not one
/// object, is bad usage (2) naming where the arguments came from.
#[test]
fn invoke_takes_its_arguments_from_a_file_or_standard_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = dir.path().join("args.json");
    std::fs::write(&args, r#"{"query": "flaky"}"#).expect("write");
    let at = format!("@{}", args.display());

    let from_file = cli(&demo(&["invoke", "notes/search_notes", &at]));
    assert_eq!(
        from_file.status.code(),
        Some(0),
        "{}",
        text(&from_file.stderr)
    );
    assert!(
        text(&from_file.stdout).contains("#2: Flaky test"),
        "{}",
        text(&from_file.stdout)
    );

    let from_stdin = cli_with(
        &demo(&["invoke", "notes/search_notes", "-"]),
        "{\"query\": \"flaky\"}\n",
    );
    assert_eq!(
        from_stdin.status.code(),
        Some(0),
        "{}",
        text(&from_stdin.stderr)
    );
    assert!(text(&from_stdin.stdout).contains("#2: Flaky test"));

    let missing = dir.path().join("missing.json");
    let out = cli(&demo(&[
        "invoke",
        "notes/search_notes",
        &format!("@{}", missing.display()),
    ]));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with(&format!(
            "spear-capabilities: cannot read the arguments from {}: No such file or directory",
            missing.display()
        )),
        "{}",
        text(&out.stderr)
    );
    let out = cli_with(&demo(&["invoke", "notes/search_notes", "-"]), "[1]");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "spear-capabilities: the arguments (from standard input) must be one JSON object\n"
    );
}

/// `check --capabilities FILE` is `check FILE`; both at once is bad usage;
/// a named file that does not exist is exit 2 either way.
#[test]
fn check_takes_capabilities_as_the_other_subcommands_do() {
    let positional = cli(&["check", "examples/capabilities.json"]);
    let flag = cli(&["check", "--capabilities", "examples/capabilities.json"]);
    assert_eq!(flag.status.code(), positional.status.code());
    assert_eq!(text(&flag.stdout), text(&positional.stdout));
    assert!(
        text(&flag.stdout).starts_with("examples/capabilities.json\n  ok       notes\n"),
        "{}",
        text(&flag.stdout)
    );
    let both = cli(&[
        "check",
        "examples/capabilities.json",
        "--capabilities",
        "examples/capabilities.json",
    ]);
    assert_eq!(both.status.code(), Some(2));
    assert!(
        text(&both.stderr).contains("cannot be used with"),
        "{}",
        text(&both.stderr)
    );
    let gone = cli(&["check", "--capabilities", "nothere.json"]);
    assert_eq!(gone.status.code(), Some(2));
    assert!(
        text(&gone.stderr).contains("capabilities file nothere.json: No such file"),
        "{}",
        text(&gone.stderr)
    );
}

/// On a terminal, `list` shows each provider's state once: the live
/// display's lines (a slow start is seen `starting`) give way to the list's
/// provider column instead of standing above it in another order.
#[test]
fn on_a_terminal_list_shows_each_provider_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_registry(
        dir.path(),
        &json!([
            {"id": "fix", "command": [sibling("spear-fixture-server"), "--start-delay", "700"],
             "scope": "global", "timeout": 10},
            {"id": "gone", "command": ["/nonexistent/spear-test/mcp-server"],
             "scope": "global", "timeout": 10},
        ]),
    );
    let tty = on_a_terminal(&[
        "list",
        "--capabilities",
        file.to_str().expect("utf8"),
        "--project",
        "p",
    ]);
    assert!(
        tty.contains("starting fix: starting for "),
        "the live display still runs: {tty:?}"
    );
    assert_eq!(tty.matches("fix: ready in ").count(), 1, "{tty:?}");
    assert_eq!(tty.matches("gone: unavailable").count(), 1, "{tty:?}");
    assert!(tty.contains("providers:\r\n"), "{tty:?}");

    // `turn`, which prints no provider column, keeps the display's lines.
    let turn = on_a_terminal(&[
        "turn",
        "--capabilities",
        file.to_str().expect("utf8"),
        "--project",
        "p",
        "--command",
        "ls",
    ]);
    assert_eq!(turn.matches("fix: ready in ").count(), 1, "{turn:?}");
}

/// One capability is "1 capability", one tool "1 tool".
#[test]
fn one_capability_and_one_tool_are_singular() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("one.json");
    std::fs::write(
        &script,
        json!({"tools/list": {"": [{"result": {"tools": [
            {"name": "only", "description": "The only tool", "inputSchema": {"type": "object"}}
        ]}}]}})
        .to_string(),
    )
    .expect("script");
    let file = write_registry(
        dir.path(),
        &json!([{"id": "one", "command": [sibling("spear-script-server"), script],
                 "scope": "global", "read": ["only"], "timeout": 10}]),
    );
    let out = cli(&[
        "list",
        "--capabilities",
        file.to_str().expect("utf8"),
        "--project",
        "p",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains(" ms, 1 tool\n"), "{stdout}");
    assert!(
        stdout.contains("exposure: whole (1 capability, about "),
        "{stdout}"
    );
}

/// The operator's refusal of a capability that reaches no turn is two
/// sentences, each ended.
#[test]
fn the_refusal_of_a_capability_that_reaches_no_turn_ends_with_its_stop() {
    let out = cli(&demo(&["invoke", "time/nope", "{}"]));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stdout),
        "No capability `time/nope` reaches this turn. `spear-capabilities list` with the same flags shows the ones that do.\n"
    );
}

/// `check` says of a program that cannot start what `list` says when the
/// start fails, word for word: for a bare name not on `PATH`, and for a
/// file on `PATH` that may not be executed.
#[test]
fn check_and_list_say_a_program_that_cannot_start_in_the_same_words() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin");
    std::fs::write(bin.join("plain-server"), "#!/bin/sh\n").expect("script");
    std::fs::set_permissions(
        bin.join("plain-server"),
        std::fs::Permissions::from_mode(0o644),
    )
    .expect("chmod");
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let file = write_registry(
        dir.path(),
        &json!([
            {"id": "missing", "command": ["spear-no-such-server"], "scope": "global",
             "env": {"PATH": path}},
            {"id": "plain", "command": ["plain-server"], "scope": "global",
             "env": {"PATH": path}},
        ]),
    );
    let file = file.to_str().expect("utf8");
    let check = text(&cli(&["check", file]).stdout);
    let list = text(&cli(&["list", "--capabilities", file, "--project", "p"]).stdout);
    for words in [
        "cannot start `spear-no-such-server`: No such file or directory (os error 2)",
        "cannot start `plain-server`: Permission denied (os error 13)",
    ] {
        assert!(
            check.contains(&format!("           {words}\n")),
            "{words:?} in {check}"
        );
        assert!(
            list.contains(&format!("did not start: {words}\n")),
            "{words:?} in {list}"
        );
    }
    assert!(!check.contains("not found on PATH"), "{check}");
}

/// Issue 42.10: one resolver for `check` and the start. With no `PATH` of
/// ours (so the server gets none), a bare name is looked up where execvp(3)
/// looks, `/bin:/usr/bin`, by both: `check` passes what `list` starts, and
/// refuses, in the same words, what `list` cannot start.
#[test]
fn with_path_unset_check_and_the_start_agree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = sibling("spear-fixture-server");
    let file = write_registry(
        dir.path(),
        &json!([
            {"id": "viash", "command": ["sh", "-c", "exec \"$0\"", fixture], "scope": "global"},
            {"id": "missing", "command": ["spear-no-such-server"], "scope": "global"},
        ]),
    );
    let file = file.to_str().expect("utf8");
    let without_path = |args: &[&str]| {
        common::command(args)
            .env_remove("PATH")
            .output()
            .expect("runs")
    };
    let check = text(&without_path(&["check", file]).stdout);
    let list = text(&without_path(&["list", "--capabilities", file, "--project", "p"]).stdout);
    assert!(!check.contains("cannot start `sh`"), "{check}");
    assert!(list.contains("  ok       viash: ready in "), "{list}");
    let words = "cannot start `spear-no-such-server`: No such file or directory (os error 2)";
    assert!(check.contains(&format!("           {words}\n")), "{check}");
    assert!(
        list.contains(&format!("did not start: {words}\n")),
        "{list}"
    );
}

/// The completion scripts and the manual pages come from the clap
/// definitions: bash completes a subcommand and `check`'s flags; zsh and
/// fish scripts name the program; `man` is a roff page listing every
/// subcommand, and `man --dir` writes a page for each with its flags.
#[test]
fn completions_and_man_pages_are_generated_from_the_clap_definitions() {
    let complete = |words: &str, current: usize| bash_complete(words, current, &[]);
    let subcommands = complete("spear-capabilities li", 1);
    assert_eq!(subcommands.trim(), "list", "{subcommands}");
    let flags = complete("spear-capabilities check --cap", 2);
    assert_eq!(flags.trim(), "--capabilities", "{flags}");
    let every = complete("spear-capabilities ''", 1);
    for sub in ["check", "list", "turn", "invoke", "completions", "man"] {
        assert!(every.lines().any(|l| l == sub), "{sub} in {every}");
    }

    let zsh = text(&cli(&["completions", "zsh"]).stdout);
    assert!(zsh.starts_with("#compdef spear-capabilities\n"), "{zsh}");
    let fish = text(&cli(&["completions", "fish"]).stdout);
    assert!(
        fish.contains("complete --keep-order --exclusive --command spear-capabilities "),
        "{fish}"
    );
    let bad = cli(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));

    let page = text(&cli(&["man"]).stdout);
    assert!(
        page.contains(&format!(
            ".TH spear-capabilities 1  \"spear-capabilities {}\"",
            env!("CARGO_PKG_VERSION")
        )),
        "{page}"
    );
    for sub in ["check", "list", "turn", "invoke", "completions", "man"] {
        assert!(
            page.contains(&format!("spear\\-capabilities\\-{sub}(1)")),
            "{sub} in {page}"
        );
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = cli(&["man", "--dir", dir.path().to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let written: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
    assert_eq!(
        written[0],
        dir.path()
            .join("spear-capabilities.1")
            .display()
            .to_string()
    );
    let check = std::fs::read_to_string(dir.path().join("spear-capabilities-check.1"))
        .expect("the check page");
    assert!(check.starts_with(".ie") || check.contains(".TH spear-capabilities-check 1"));
    assert!(check.contains("\\-\\-capabilities"), "{check}");
    assert!(written.iter().all(|p| Path::new(p).exists()), "{written:?}");
}

/// A WRITE declined at confirmation says so, beside the turn's own text
/// (the permission mode's refusal, as SPEAR tells the turn): by
/// `--confirm no`, or for want of a terminal to ask on; `--json` gives the
/// answer as `confirmation`. One confirmed says `accepted`.
#[test]
fn a_write_declined_at_confirmation_says_so() {
    let add = "spear-capability invoke notes/add_note '{\"title\": \"t\", \"text\": \"x\"}'";
    let turn = cli(&demo(&["turn", "--confirm", "no", "--command", add]));
    let stdout = text(&turn.stdout);
    assert!(
        stdout.ends_with(&format!(
            "$ {add}\n`notes/add_note` is a WRITE capability, and the session's permission mode (ask) did not allow it.\n[refused: declined at confirmation (--confirm no)]\n"
        )),
        "{stdout}"
    );

    let json_turn = cli(&demo(&[
        "turn",
        "--json",
        "--confirm",
        "no",
        "--command",
        add,
    ]));
    let last: Value =
        serde_json::from_str(text(&json_turn.stdout).lines().last().expect("the answer"))
            .expect("JSON");
    assert_eq!(last["status"], "refused");
    assert_eq!(last["confirmation"], "declined");

    let args = r#"{"title": "t", "text": "x"}"#;
    let invoke = cli(&demo(&[
        "invoke",
        "notes/add_note",
        args,
        "--confirm",
        "no",
    ]));
    assert_eq!(invoke.status.code(), Some(1));
    assert!(
        text(&invoke.stderr).contains(
            "spear-capabilities: `notes/add_note` was declined at confirmation (--confirm no), so it was not sent\n"
        ),
        "{}",
        text(&invoke.stderr)
    );
    let json_invoke = cli(&demo(&[
        "invoke",
        "notes/add_note",
        args,
        "--confirm",
        "no",
        "--json",
    ]));
    let v: Value = serde_json::from_slice(&json_invoke.stdout).expect("JSON");
    assert_eq!(v["confirmation"], "declined", "{v}");
    let yes = cli(&demo(&[
        "invoke",
        "notes/add_note",
        args,
        "--confirm",
        "yes",
        "--json",
    ]));
    let v: Value = serde_json::from_slice(&yes.stdout).expect("JSON");
    assert_eq!(
        (v["status"].as_str(), v["confirmation"].as_str()),
        (Some("ok"), Some("accepted")),
        "{v}"
    );

    // In a session of its own (setsid) the CLI has no terminal to ask on.
    let mut args = vec!["-w", CLI];
    args.extend(demo(&["turn", "--command", add]));
    let alone = Command::new("setsid")
        .args(&args)
        .current_dir(root())
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .stdin(Stdio::null())
        .output()
        .expect("util-linux setsid runs");
    let stdout = text(&alone.stdout);
    assert!(
        stdout.ends_with("[refused: declined at confirmation (no terminal to ask on)]\n"),
        "{stdout}{}",
        text(&alone.stderr)
    );
}
