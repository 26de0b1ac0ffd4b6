//! Issue 33.2, the registry edited from the CLI, through the built binary:
//! `get` (the entry, `env` values masked; `--start` with the fixture
//! server), `add` (validated as `check` validates, a duplicate refused,
//! every other byte kept, written atomically) and `remove`.

mod common;

use common::{CLI, cli, listing, registry, sibling, text, utf8 as s};

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// A registry laid out by hand, as an operator keeps one: odd
/// indentation, keys in no order, a number written `10.50`, and an entry
/// the registry refuses (the misspelt `timout`).
const KEPT: &str = r#"{"providers": [
  {"id": "notes",   "scope": "corpus demo",
   "command": ["sh", "-c", "exec true"],
   "env": {"NOTES_TOKEN": "s3cr3t-value", "LANG": "C"},
   "timeout": 10.50,
   "read": ["search_notes", "get_note"]},
  {"id": "typo", "command": ["sh"], "timout": 5}
]}
"#;

#[test]
fn get_shows_the_command_the_env_names_and_the_selection_settings_never_an_env_value() {
    let (_dir, file) = registry(KEPT);
    let out = cli(&["get", "notes", "--capabilities", s(&file)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    for line in [
        format!("notes  (in {})\n", file.display()),
        "  kind     mcp-stdio\n".to_owned(),
        "  command  sh -c 'exec true'\n".to_owned(),
        "  env      LANG=<masked> NOTES_TOKEN=<masked>\n".to_owned(),
        "  scope    corpus demo\n".to_owned(),
        "  tasks    implementation, mixed\n".to_owned(),
        "  read     get_note, search_notes\n".to_owned(),
        "  write    refuse\n".to_owned(),
        "  enabled  yes\n".to_owned(),
        "  timeout  10.5s\n".to_owned(),
    ] {
        assert!(stdout.contains(&line), "missing {line:?} in:\n{stdout}");
    }
    assert!(!stdout.contains("s3cr3t"), "{stdout}");

    let out = cli(&["get", "notes", "--capabilities", s(&file), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains("s3cr3t"));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["id"], "notes");
    assert_eq!(v["file"], s(&file));
    assert_eq!(v["command"], json!(["sh", "-c", "exec true"]));
    assert_eq!(v["env"], json!(["LANG", "NOTES_TOKEN"]));
    assert_eq!(v["scope"], "corpus demo");
    assert_eq!(v["tasks"], json!(["implementation", "mixed"]));
    assert_eq!(v["read"], json!(["get_note", "search_notes"]));
    assert_eq!(v["write"], "refuse");
    assert_eq!(v["enabled"], true);
    assert_eq!(v["timeout_secs"], 10.5);
    assert!(v.get("started").is_none(), "{v}");
}

#[test]
fn get_of_a_refused_entry_shows_its_problems_and_of_an_unknown_id_names_the_others() {
    let (_dir, file) = registry(KEPT);
    let out = cli(&["get", "typo", "--capabilities", s(&file)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "  refused  providers[1] (\"typo\")\n           {}:7:37: key \"timout\": unknown key; did you mean \"timeout\"?\n",
            file.display()
        )),
        "{stdout}"
    );
    let out = cli(&["get", "typo", "--capabilities", s(&file), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["refused"]["entry"], "providers[1] (\"typo\")");

    let out = cli(&["get", "nope", "--capabilities", s(&file)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(
        text(&out.stderr),
        format!(
            "spear-capabilities: no provider `nope` in {}; its providers: notes\n",
            file.display()
        )
    );
    let missing = file.with_file_name("typo.json");
    let out = cli(&["get", "notes", "--capabilities", s(&missing)]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn get_start_shows_the_servers_name_version_protocol_and_each_tool_with_its_class_and_full_schema()
{
    let server = sibling("spear-fixture-server");
    let (_dir, file) = registry(
        &json!({"providers": [{
            "id": "fix", "command": [server, "--tools", "2"], "enabled": false,
            "read": ["echo", "nothere"], "timeout": 10,
        }]})
        .to_string(),
    );
    let out = cli(&["get", "fix", "--capabilities", s(&file), "--start"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("  enabled  no\n"), "{stdout}");
    assert!(
        stdout.contains(
            "started: mcp-stdio: server spear-fixture-server 0.1.0, protocol 2025-06-18 (ready in "
        ),
        "{stdout}"
    );
    assert!(stdout.contains("  READ   echo  Echoes its text\n         {\n           \"properties\": {\n             \"text\": {\n               \"type\": \"string\"\n"), "{stdout}");
    assert!(
        stdout.contains("  WRITE  fail  Fails as a tool\n"),
        "{stdout}"
    );
    assert!(stdout.contains("warning: read names `nothere`, which its server does not offer (a tool of another name stays a WRITE)\n"), "{stdout}");

    let out = cli(&[
        "get",
        "fix",
        "--capabilities",
        s(&file),
        "--start",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    let started = &v["started"];
    assert_eq!(started["info"]["server"], "spear-fixture-server");
    assert_eq!(started["info"]["server_version"], "0.1.0");
    assert_eq!(started["info"]["protocol"], "2025-06-18");
    assert!(started["ready_in_ms"].is_u64(), "{started}");
    let echo = started["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "echo")
        .expect("echo");
    assert_eq!(echo["class"], "READ");
    assert_eq!(
        echo["input_schema"],
        json!({"type": "object", "properties": {"text": {"type": "string"}}})
    );
    assert_eq!(echo["left_out"], Value::Null);
    assert_eq!(started["read_not_offered"], json!(["nothere"]));
}

#[test]
fn get_start_of_a_server_that_fails_says_why_and_exits_1() {
    let server = sibling("spear-fixture-server");
    let (_dir, file) = registry(
        &json!({"providers": [{
            "id": "old", "command": [server, "--version", "2024-11-05"], "timeout": 10,
        }]})
        .to_string(),
    );
    let out = cli(&["get", "old", "--capabilities", s(&file), "--start"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("start failed: provider `old` broke the protocol: the server speaks MCP protocol version \"2024-11-05\""),
        "{stdout}"
    );
}

#[test]
fn add_writes_an_entry_the_registry_registers_keeping_every_other_byte() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, file) = registry(KEPT);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let out = cli(&[
        "add",
        "tracker",
        "--capabilities",
        s(&file),
        "--scope",
        "corpus firmware-a",
        "--tasks",
        "implementation,general",
        "--read",
        "search_issues",
        "--read",
        "get_issue",
        "--write",
        "confirm",
        "--env",
        "TRACKER_TOKEN=abc=def",
        "--timeout",
        "10",
        "--",
        "sh",
        "-c",
        "exec tracker --stdio",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert_eq!(
        stdout,
        format!(
            "added `tracker` to {}\n  ok       tracker\n           kind mcp-stdio; scope corpus firmware-a; tasks implementation, general; write confirm; timeout 10s\n           read: get_issue, search_issues\n",
            file.display()
        )
    );
    let after = std::fs::read_to_string(&file).expect("read");
    // Everything before the closing bracket is as it was, byte for byte:
    // layout, key order, `10.50`, the refused entry and its unknown key.
    let kept = &KEPT[..KEPT.rfind("\n]}").expect("end")];
    assert!(after.starts_with(kept), "{after}");
    assert!(after.ends_with("\n]}\n"), "{after}");
    let v: Value = serde_json::from_str(&after).expect("the result parses");
    assert_eq!(
        v["providers"][2],
        json!({
            "id": "tracker", "command": ["sh", "-c", "exec tracker --stdio"],
            "env": {"TRACKER_TOKEN": "abc=def"}, "scope": "corpus firmware-a",
            "tasks": ["implementation", "general"], "read": ["search_issues", "get_issue"],
            "write": "confirm", "timeout": 10,
        })
    );
    assert!(after.contains("\"timeout\": 10\n"), "as written: {after}");
    let mode = std::fs::metadata(&file).expect("meta").permissions().mode();
    assert_eq!(mode & 0o777, 0o640, "the file keeps its permissions");
    assert_eq!(
        listing(dir.path()),
        ["capabilities.json"],
        "no temporary file is left"
    );
    // The core registers it, as `check` and `get` show.
    let check = cli(&["check", s(&file)]);
    assert!(
        text(&check.stdout).contains("  ok       tracker\n"),
        "{}",
        text(&check.stdout)
    );
    let get = cli(&["get", "tracker", "--capabilities", s(&file)]);
    assert_eq!(get.status.code(), Some(0));
    assert!(text(&get.stdout).contains("  env      TRACKER_TOKEN=<masked>\n"));
}

#[test]
fn add_refuses_an_invalid_entry_in_checks_words_and_leaves_the_file_untouched() {
    let (dir, file) = registry(KEPT);
    let out = cli(&[
        "add",
        "Bad-Id",
        "--capabilities",
        s(&file),
        "--scope",
        "corpus",
        "--timeout",
        "0",
        "--",
        "sh",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), KEPT);
    assert_eq!(listing(dir.path()), ["capabilities.json"]);
    // `check` on a file holding the same entry says the same lines, each
    // after the place in its file (which `add`, whose file is not written,
    // leaves out).
    let same = dir.path().join("same.json");
    let mut v: Value = serde_json::from_str(KEPT).expect("json");
    v["providers"].as_array_mut().expect("array").push(json!({
        "id": "Bad-Id", "command": ["sh"], "scope": "corpus", "timeout": 0,
    }));
    std::fs::write(&same, v.to_string()).expect("write");
    let check = text(&cli(&["check", s(&same)]).stdout);
    let refused: Vec<&str> = check
        .lines()
        .skip_while(|l| !l.starts_with("  refused  providers[2]"))
        .take_while(|l| !l.ends_with("refused") && !l.contains(" registered, "))
        .collect();
    assert_eq!(refused.len(), 4, "{check}");
    let place = format!("           {}:1:", same.display());
    for line in refused {
        let line = match line.strip_prefix(&place) {
            Some(rest) => format!("           {}", rest.split_once(": ").expect("place").1),
            None => line.to_owned(),
        };
        assert!(
            stderr.contains(&format!("{line}\n")),
            "missing {line:?} in:\n{stderr}"
        );
    }
    assert!(
        stderr.contains("key \"timeout\": 0 is out of range"),
        "{stderr}"
    );
}

#[test]
fn add_refuses_an_entry_whose_program_cannot_run_as_check_does() {
    let (_dir, file) = registry(KEPT);
    let out = cli(&[
        "add",
        "gone",
        "--capabilities",
        s(&file),
        "--scope",
        "global",
        "--",
        "/nonexistent/spear-test/server",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // `check`'s words for a program that cannot run.
    assert!(
        stderr.contains("  refused  gone\n           cannot "),
        "{stderr}"
    );
    assert!(
        stderr
            .contains("`/nonexistent/spear-test/server`: No such file or directory (os error 2)\n"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&file).expect("read"), KEPT);
    // As `check`: without a scope nothing starts it, and it is a warning.
    let out = cli(&[
        "add",
        "gone",
        "--capabilities",
        s(&file),
        "--",
        "/nonexistent/spear-test/server",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(
            "           warning: no scope, so it applies nowhere (add `scope` to use it)\n"
        ),
        "{stdout}"
    );
}

#[test]
fn add_refuses_an_id_already_in_the_file_even_a_refused_entrys() {
    let (_dir, file) = registry(KEPT);
    for (id, index) in [("notes", 0), ("typo", 1)] {
        let out = cli(&["add", id, "--capabilities", s(&file), "--", "sh"]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert_eq!(
            text(&out.stderr),
            format!(
                "spear-capabilities: not added: providers[{index}] of {} already has the id {id:?}; ids must be unique (`spear-capabilities remove {id}` first to replace it)\n",
                file.display()
            )
        );
        assert_eq!(std::fs::read_to_string(&file).expect("read"), KEPT);
    }
}

#[test]
fn add_creates_a_missing_file_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    // The default location: capabilities.json beside --projects.
    let projects = dir.path().join("projects.json");
    let out = cli(&[
        "add",
        "time",
        "--projects",
        s(&projects),
        "--scope",
        "global",
        "--",
        "sh",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let file = dir.path().join("capabilities.json");
    assert!(text(&out.stdout).starts_with(&format!(
        "added `time` to {} (a new file)\n",
        file.display()
    )));
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        "{\n  \"providers\": [\n    {\n      \"id\": \"time\",\n      \"command\": [\"sh\"],\n      \"scope\": \"global\"\n    }\n  ]\n}\n"
    );
    let mode = std::fs::metadata(&file).expect("meta").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn add_refuses_bad_usage_with_exit_2() {
    let (_dir, file) = registry(KEPT);
    for args in [
        &["--env", "NOEQUALS", "--", "sh"][..],
        &["--env", "A=1", "--env", "A=2", "--", "sh"],
        &["--timeout", "soon", "--", "sh"],
        &["--write", "sometimes", "--", "sh"],
        &["--tasks", "everything", "--", "sh"],
        &["--scope", "global"],
    ] {
        let mut all = vec!["add", "x", "--capabilities", s(&file)];
        all.extend_from_slice(args);
        let out = cli(&all);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert_eq!(std::fs::read_to_string(&file).expect("read"), KEPT);
    }
}

#[test]
fn remove_takes_out_that_entry_only_and_an_absent_id_exits_1() {
    let (dir, file) = registry(KEPT);
    let out = cli(&["remove", "typo", "--capabilities", s(&file)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("removed `typo` from {}\n", file.display())
    );
    let after = std::fs::read_to_string(&file).expect("read");
    let first = &KEPT[..KEPT.find("]},\n").expect("first entry") + 2];
    assert_eq!(after, format!("{first}\n]}}\n"));
    assert_eq!(listing(dir.path()), ["capabilities.json"]);
    let check = cli(&["check", s(&file)]);
    assert!(text(&check.stdout).ends_with("1 registered, 0 refused\n"));

    let out = cli(&["remove", "typo", "--capabilities", s(&file)]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "spear-capabilities: no provider `typo` in {}; its providers: notes\n",
            file.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&file).expect("read"), after);
    let missing = dir.path().join("typo.json");
    let out = cli(&["remove", "notes", "--capabilities", s(&missing)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!missing.exists());
}

#[test]
fn an_edit_through_a_symbolic_link_replaces_the_file_it_names() {
    let (dir, file) = registry(KEPT);
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&file, &link).expect("symlink");
    let out = cli(&["remove", "typo", "--capabilities", s(&link)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("meta")
            .file_type()
            .is_symlink()
    );
    assert!(
        !std::fs::read_to_string(&file)
            .expect("read")
            .contains("typo")
    );
}

/// A write that fails (here: no byte may be written, `ulimit -f 0`, which
/// stops root too; or, for another user, a folder it cannot write) leaves
/// the original whole and no temporary file beside it.
#[test]
fn a_write_that_fails_leaves_the_original_intact_and_nothing_beside_it() {
    let (dir, file) = registry(KEPT);
    for args in [
        vec!["add", "new", "--capabilities", s(&file), "--", "sh"],
        vec!["remove", "typo", "--capabilities", s(&file)],
    ] {
        // SIGXFSZ ignored, so the write fails with EFBIG instead of killing.
        let out = Command::new("sh")
            .arg("-c")
            .arg("trap '' XFSZ; ulimit -f 0; exec \"$@\"")
            .arg("sh")
            .arg(CLI)
            .args(&args)
            .env_remove("SPEAR_CAPABILITIES_FILE")
            .stdin(Stdio::null())
            .output()
            .expect("runs");
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!(
                "spear-capabilities: cannot write {}: ",
                file.display()
            )),
            "{stderr}"
        );
        assert!(stderr.ends_with("; it is left as it was\n"), "{stderr}");
        assert_eq!(std::fs::read_to_string(&file).expect("read"), KEPT);
        assert_eq!(listing(dir.path()), ["capabilities.json"]);
    }
    read_only_folder(dir.path(), &file);
}

/// The same with a folder the user cannot write, when the tests do not run
/// as root (which may write anywhere).
fn read_only_folder(dir: &Path, file: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let writable = std::fs::write(dir.join("probe"), "").is_ok();
    if !writable {
        let out = cli(&["remove", "typo", "--capabilities", s(file)]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert_eq!(std::fs::read_to_string(file).expect("read"), KEPT);
    } else {
        let _ = std::fs::remove_file(dir.join("probe"));
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    assert_eq!(listing(dir), ["capabilities.json"]);
}

/// The README's transcript of `add`, `get --start`, `set`, `disable`,
/// `enable` and `remove`, run in a folder of its own, says what the binary
/// says (`...` stands for lines left out; the time a start takes differs
/// from run to run).
#[test]
fn the_readme_transcript_of_every_edit_is_what_it_prints() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .expect("README.md");
    let block = readme
        .split("```text\n")
        .find(|b| b.starts_with("$ spear-capabilities add "))
        .and_then(|b| b.split("```").next())
        .expect("the add/get/remove block");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("target/debug")).expect("mkdir");
    std::os::unix::fs::symlink(
        sibling("spear-example-server"),
        dir.path().join("target/debug/spear-example-server"),
    )
    .expect("symlink");
    let mut runs = 0;
    for group in block.split("$ spear-capabilities ").skip(1) {
        let mut lines = group.lines();
        let command = lines.next().expect("a command");
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("\"$0\" {command}"))
            .arg(CLI)
            .current_dir(dir.path())
            .env_remove("SPEAR_CAPABILITIES_FILE")
            .stdin(Stdio::null())
            .output()
            .expect("runs");
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{command}: {stdout}{}",
            text(&out.stderr)
        );
        for line in lines.filter(|l| *l != "...") {
            let line = line.split(" (ready in ").next().unwrap_or(line);
            assert!(
                stdout.contains(line),
                "{command}: missing {line:?} in:\n{stdout}"
            );
        }
        runs += 1;
    }
    assert_eq!(runs, 6);
}

#[test]
fn a_file_that_does_not_parse_is_left_as_it_was_with_exit_2() {
    let broken = "{\"providers\": [\n  {\"id\": \"x\" \"command\": []}\n]}";
    let (dir, file) = registry(broken);
    for args in [
        vec!["add", "new", "--capabilities", s(&file), "--", "sh"],
        vec!["remove", "x", "--capabilities", s(&file)],
        vec!["get", "x", "--capabilities", s(&file)],
    ] {
        let out = cli(&args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "capabilities file {}:2:13: expected comma",
                file.display()
            )),
            "{stderr}"
        );
        assert_eq!(std::fs::read_to_string(&file).expect("read"), broken);
        assert_eq!(listing(dir.path()), ["capabilities.json"]);
    }
}
