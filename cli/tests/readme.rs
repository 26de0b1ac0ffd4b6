//! Every example in the README is run or checked here, so the README cannot
//! drift from what the code does.

use std::path::{Path, PathBuf};
use std::process::Command;

use spear_capabilities::internals::command::{Recognized, recognize};
use spear_capabilities::{
    Audit, Registry,
    audit::{AUDIT_SCHEMA, AuditEvent, AuditRecord},
    kind::EntryProblemKind,
};
use spear_providers as _;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).expect("README.md")
}

/// The bodies of the fenced blocks whose info string is `lang`.
fn blocks(lang: &str) -> Vec<String> {
    let text = readme();
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match &mut current {
            None if line == format!("```{lang}") => current = Some(String::new()),
            Some(body) if line == "```" => {
                out.push(std::mem::take(body));
                current = None;
            }
            Some(body) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    out
}

#[test]
fn the_first_command_runs_a_real_turn() {
    let sh = blocks("sh");
    let first = sh[0].lines().next().expect("the first command");
    let (build, run) = first.split_once(" && ").expect("build && run");
    // Only what the main job runs: the CLI and the example server, not the
    // benches and their rmcp (issue 33.6).
    assert_eq!(
        build,
        "cargo build -q -p spear-cli -p spear-examples --bin spear-capabilities --bin spear-example-server"
    );
    let run = run.replace(
        "./target/debug/spear-capabilities",
        env!("CARGO_BIN_EXE_spear-capabilities"),
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(&run)
        .current_dir(root())
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for what in [
        "== what the turn is shown (exposure: whole) ==",
        "$ spear-capability describe notes/search_notes\nnotes/search_notes (READ)",
        "<<<EXTERNAL-CONTENT ",
        "(not a spear-capability command: the shell runs it)",
        "`notes/add_note` is a WRITE capability, and the session's permission mode (ask) did not allow it.\n[refused: declined at confirmation (--confirm no)]",
        // The gateway's own refusal is said plainly, never framed (issue 33.5).
        "The arguments do not fit the schema of `notes/get_note`:\n  - at /id: \"two\" is not of type \"integer\"\n[refused]",
    ] {
        assert!(stdout.contains(what), "missing {what:?} in:\n{stdout}");
    }
}

#[test]
fn the_second_command_is_what_ci_runs() {
    let sh = blocks("sh");
    let second = sh[0].lines().nth(1).expect("the second command");
    assert_eq!(second, "bash scripts/test");
    let ci = std::fs::read_to_string(root().join(".ci/run")).expect(".ci/run");
    assert!(
        ci.lines().any(|l| l == second),
        ".ci/run must run the README's test command"
    );
}

#[test]
fn the_registry_example_registers() {
    let json = blocks("json");
    assert_eq!(json.len(), 2);
    let r = Registry::parse(
        json[0].as_bytes(),
        Path::new("/etc/spear/capabilities.json"),
        &spear_providers::kinds().expect("built-in kinds"),
        &Audit::null(),
    )
    .expect("parses");
    assert!(r.refused().is_empty(), "{:?}", r.refused());
    assert_eq!(r.entries()[0].id, "tracker");
}

/// The README's `${NAME}` example: where its variable is not set (as in
/// these tests), refused by the name of the variable, as the README says.
#[test]
fn the_secret_example_names_its_unset_variable() {
    let json = blocks("json");
    let r = Registry::parse(
        json[1].as_bytes(),
        Path::new("/etc/spear/capabilities.json"),
        &spear_providers::kinds().expect("built-in kinds"),
        &Audit::null(),
    )
    .expect("parses");
    if std::env::var_os("TRACKER_TOKEN").is_some() {
        assert!(r.refused().is_empty(), "{:?}", r.refused());
        return;
    }
    let problems = &r.refused()[0].problems;
    assert!(
        problems
            .iter()
            .all(|p| p.kind == EntryProblemKind::UnsetVariable),
        "{problems:?}"
    );
    assert_eq!(
        problems[0].to_string(),
        r#"key "env": the value of "AUTH" names ${TRACKER_TOKEN}, which is not set in this environment (set it where the server starts, or write $$ for a literal $)"#
    );
}

/// The README's `check` transcript: the file it shows, checked in a
/// folder of its own, prints each line the README says (`...` stands for
/// lines left out).
#[test]
fn the_check_example_prints_what_the_readme_says() {
    let text = blocks("text")
        .into_iter()
        .find(|b| b.starts_with("$ cat capabilities.json\n"))
        .expect("check block");
    let (file, said) = text["$ cat capabilities.json\n".len()..]
        .split_once("$ spear-capabilities check capabilities.json\n")
        .expect("the file, then check");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("capabilities.json"), file).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_spear-capabilities"))
        .args(["check", "capabilities.json"])
        .current_dir(dir.path())
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in said.lines().filter(|l| *l != "...") {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
}

#[test]
fn the_command_examples_are_recognised_and_parse() {
    let text = blocks("text")
        .into_iter()
        .find(|b| b.starts_with("spear-capability list"))
        .expect("command block");
    for line in text.lines() {
        assert!(matches!(recognize(line), Recognized::Ours(Ok(_))), "{line}");
    }
}

#[test]
fn each_audit_example_is_a_record_of_its_event() {
    let jsonl = blocks("jsonl");
    let mut names = Vec::new();
    for line in jsonl[0].lines() {
        let record: AuditRecord =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        let back = serde_json::to_value(&record).expect("serialises");
        let given: serde_json::Value = serde_json::from_str(line).expect("json");
        assert_eq!(back, given, "the example has fields the event does not");
        // Read as the event it names, with every value known: never kept
        // only as an unknown record.
        assert!(
            !matches!(record.event, AuditEvent::Unknown(_)),
            "not a record of this version: {line}"
        );
        assert_eq!(record.event.name(), given["event"]);
        assert_eq!(record.schema, AUDIT_SCHEMA, "{line}");
        assert_eq!(record.time.to_string(), given["time"], "{line}");
        names.push(given["event"].as_str().expect("event").to_owned());
    }
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "one record of each kind");
    // Every kind of `AuditEvent`, once.
    assert_eq!(names.len(), 19);
    // And a trail as the sink writes it: one whole chain, its session ended.
    let verdict = spear_capabilities::audit::verify(jsonl[0].as_bytes(), None);
    assert_eq!(
        verdict.status(),
        spear_capabilities::audit::TrailStatus::Whole,
        "{verdict:?}"
    );
}

#[test]
fn the_list_transcript_is_what_list_prints() {
    let text = blocks("text")
        .into_iter()
        .find(|b| b.starts_with("$ spear-capabilities list --capabilities capabilities.json"))
        .expect("list block");
    let dir = tempfile::tempdir().expect("tempdir");
    let server =
        Path::new(env!("CARGO_BIN_EXE_spear-capabilities")).with_file_name("spear-example-server");
    let body = serde_json::json!({"providers": [
        {"id": "notes", "command": [server], "scope": "corpus demo",
         "read": ["search_notes", "get_note", "serch_notes"], "timeout": 10},
        {"id": "time", "command": ["/opt/mcp/bin/mcp-server-time"], "scope": "global", "timeout": 10},
        {"id": "tracker", "command": ["tracker-mcp"], "scope": "corpus firmware-a", "timeout": 10}
    ]});
    let file = dir.path().join("capabilities.json");
    std::fs::write(&file, body.to_string()).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_spear-capabilities"))
        .args([
            "list",
            "--capabilities",
            file.to_str().expect("utf8"),
            "--project",
            "demo",
        ])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(text.ends_with("$ echo $?\n1\n"), "{text}");
    for line in text.lines().skip(1) {
        if line.starts_with("$ ") || line == "1" {
            continue;
        }
        // The time a start took differs from run to run.
        let line = line.split(" ready in ").next().unwrap_or(line);
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
}

/// The `--wait` transcript (issue 33.3): each command run against the
/// fixture server that answers its handshake after 2.5 s, with a 1 s
/// timeout, prints the lines the README shows.
#[test]
fn the_wait_transcript_is_what_list_prints() {
    let text = blocks("text")
        .into_iter()
        .find(|b| b.starts_with("$ spear-capabilities list --capabilities cold.json"))
        .expect("--wait block");
    let dir = tempfile::tempdir().expect("tempdir");
    let server =
        Path::new(env!("CARGO_BIN_EXE_spear-capabilities")).with_file_name("spear-fixture-server");
    let body = serde_json::json!({"providers": [
        {"id": "cold", "command": [server, "--start-delay", "2500"], "scope": "global", "timeout": 1}
    ]});
    std::fs::write(dir.path().join("cold.json"), body.to_string()).expect("write");
    let mut runs = 0;
    for part in text.split("$ spear-capabilities ").skip(1) {
        let (command, expected) = part.split_once('\n').expect("a command line");
        let out = Command::new(env!("CARGO_BIN_EXE_spear-capabilities"))
            .args(command.split(' '))
            .current_dir(dir.path())
            .env_remove("SPEAR_CAPABILITIES_FILE")
            .output()
            .expect("runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        for line in expected.lines() {
            // The time a start took, and the server's pid in its stderr,
            // differ from run to run.
            let line = line.split(" ready in ").next().unwrap_or(line);
            let (line, after_pid) = line
                .split_once("; stderr ends with: fixture: pid ")
                .unwrap_or((line, ""));
            let after_pid = after_pid.trim_start_matches(|c: char| c.is_ascii_digit());
            for part in [line, after_pid] {
                assert!(
                    stdout.contains(part),
                    "{command}: missing {part:?} in:\n{stdout}"
                );
            }
        }
        runs += 1;
    }
    assert_eq!(runs, 2);
}

/// The registry-editing transcript (issue 33.2 and its done-when; issue 46
/// added `set`, `disable` and `enable`): `add`, `get --start`, those three
/// and `remove`, run in a fresh folder whose
/// `target/debug/spear-example-server` is the built example server, print
/// the lines the README shows (`...` stands for lines left out).
#[test]
fn the_registry_edit_transcript_is_what_each_edit_prints() {
    let text = blocks("text")
        .into_iter()
        .find(|b| b.starts_with("$ spear-capabilities add notes"))
        .expect("add block");
    let dir = tempfile::tempdir().expect("tempdir");
    let cli = Path::new(env!("CARGO_BIN_EXE_spear-capabilities"));
    let debug = dir.path().join("target/debug");
    std::fs::create_dir_all(&debug).expect("mkdir");
    std::os::unix::fs::symlink(
        cli.with_file_name("spear-example-server"),
        debug.join("spear-example-server"),
    )
    .expect("symlink");
    let mut runs = Vec::new();
    for part in text.split("$ spear-capabilities ").skip(1) {
        let (command, expected) = part.split_once('\n').expect("a command line");
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("'{}' {command}", cli.display()))
            .current_dir(dir.path())
            .env_remove("SPEAR_CAPABILITIES_FILE")
            .env_remove("NO_COLOR")
            .output()
            .expect("runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{command}: {stdout}");
        for line in expected.lines().filter(|l| *l != "...") {
            // The time a start took differs from run to run.
            let line = line.split(" (ready in ").next().unwrap_or(line);
            assert!(
                stdout.contains(line),
                "{command}: missing {line:?} in:\n{stdout}"
            );
        }
        runs.push(command.split(' ').next().unwrap_or_default().to_owned());
    }
    assert_eq!(runs, ["add", "get", "set", "disable", "enable", "remove"]);
}

/// The completion and manual page commands the README names run, and
/// what they print names the program.
#[test]
fn the_completion_and_manual_examples_run() {
    let block = blocks("sh")
        .into_iter()
        .find(|b| b.starts_with("spear-capabilities completions"))
        .expect("completions block");
    let dir = tempfile::tempdir().expect("tempdir");
    let cli = env!("CARGO_BIN_EXE_spear-capabilities");
    let mut lines = block.lines();
    let completions = lines.next().expect("completions");
    let (command, _to) = completions.split_once(" > ").expect("a redirection");
    let args: Vec<&str> = command.split(' ').skip(1).collect();
    assert_eq!(args, ["completions", "bash"]);
    let out = Command::new(cli).args(&args).output().expect("runs");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("spear-capabilities"));
    let man = lines.next().expect("man");
    let args: Vec<&str> = man.split(' ').skip(1).collect();
    assert_eq!(args[..2], ["man", "--dir"]);
    let out = Command::new(cli)
        .args(["man", "--dir"])
        .arg(dir.path())
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(dir.path().join("spear-capabilities.1").exists());
}
