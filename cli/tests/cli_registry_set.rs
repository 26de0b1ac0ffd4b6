//! Issue 46, operator 3, through the built binary: `set`, `enable` and
//! `disable` change one entry in place, only what they name, through the
//! same locked, atomic writer as `add` and `remove`; the completions and
//! the manual pages know them.

mod common;

use common::{CLI, bash_complete, cli, registry, text, utf8 as s};

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// A registry laid out by hand: odd indentation, keys in no order, a
/// number written `10.50`, an entry the registry refuses.
const KEPT: &str = r#"{"providers": [
  {"id": "notes",   "scope": "corpus demo",
   "command": ["sh", "-c", "exec true"],
   "env": {"NOTES_TOKEN": "s3cr3t-value", "LANG": "C"},
   "timeout": 10.50,
   "read": ["search_notes", "get_note"]},
  {"id": "bad", "command": ["sh"], "write": "sometimes"},
  {"id": "gone", "command": ["/nonexistent/spear-test/server"], "enabled": false, "scope": "global"}
]}
"#;

fn read(file: &Path) -> String {
    std::fs::read_to_string(file).expect("read")
}

fn entry(file: &Path, index: usize) -> Value {
    let v: Value = serde_json::from_str(&read(file)).expect("JSON");
    v["providers"][index].clone()
}

/// Runs the CLI with `args`, then `--capabilities FILE`.
fn on(file: &Path, args: &[&str]) -> std::process::Output {
    let mut all = args.to_vec();
    all.extend(["--capabilities", s(file)]);
    cli(&all)
}

#[test]
fn set_changes_only_the_keys_it_names_in_their_places() {
    let (_dir, file) = registry(KEPT);
    let out = on(
        &file,
        &[
            "set",
            "notes",
            "--timeout",
            "5",
            "--write",
            "confirm",
            "--env",
            "LANG=en",
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert_eq!(
        stdout,
        format!(
            "changed `notes` in {}\n  ok       notes\n           kind mcp-stdio; scope corpus demo; tasks implementation, mixed; write confirm; timeout 5s\n           read: get_note, search_notes\n",
            file.display()
        )
    );
    // Byte for byte: the timeout and LANG in their places, `write` added
    // last, every other entry and byte as it was.
    let want = KEPT
        .replace("\"LANG\": \"C\"", "\"LANG\": \"en\"")
        .replace("\"timeout\": 10.50,", "\"timeout\": 5,")
        .replace(
            "\"read\": [\"search_notes\", \"get_note\"]}",
            "\"read\": [\"search_notes\", \"get_note\"],\n   \"write\": \"confirm\"}",
        );
    assert_eq!(read(&file), want);

    // The command last, after `--`, so the file is named before it.
    let out = cli(&[
        "set",
        "notes",
        "--capabilities",
        s(&file),
        "--unset-env",
        "NOTES_TOKEN",
        "--read",
        "get_note",
        "--",
        "sh",
        "-c",
        "exec false",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let notes = entry(&file, 0);
    assert_eq!(notes["env"], json!({"LANG": "en"}));
    assert_eq!(notes["read"], json!(["get_note"]));
    assert_eq!(notes["command"], json!(["sh", "-c", "exec false"]));
    assert_eq!(notes["scope"], "corpus demo");
    assert_eq!(
        entry(&file, 1),
        json!({"id": "bad", "command": ["sh"], "write": "sometimes"})
    );
}

#[test]
fn set_with_what_the_entry_already_has_writes_nothing() {
    use std::os::unix::fs::MetadataExt;
    let (_dir, file) = registry(KEPT);
    let before = std::fs::metadata(&file).expect("meta").ino();
    let out = on(&file, &["set", "notes", "--scope", "corpus demo"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with(&format!(
            "`notes` in {} already has these settings; nothing written\n",
            file.display()
        )),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(read(&file), KEPT);
    assert_eq!(std::fs::metadata(&file).expect("meta").ino(), before);
}

#[test]
fn set_fixes_a_refused_entry_and_refuses_what_would_not_register() {
    let (dir, file) = registry(KEPT);
    // Still refused: nothing written, the problems said in check's words.
    let out = on(&file, &["set", "notes", "--scope", "corpus"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "spear-capabilities: not changed: the entry would be refused, as `check` would refuse it; {} is left as it was:\n  refused  providers[0] (\"notes\")\n           key \"scope\": \"corpus\": ",
            file.display()
        )),
        "{stderr}"
    );
    assert_eq!(read(&file), KEPT);
    // The refused entry, fixed, registers.
    let out = on(&file, &["set", "bad", "--write", "confirm"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(entry(&file, 1)["write"], "confirm");
    let check = cli(&["check", s(&file)]);
    assert!(
        text(&check.stdout).contains("  ok       bad\n"),
        "{}",
        text(&check.stdout)
    );
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("ls")
        .map(|e| e.expect("e").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["capabilities.json"]);
}

#[test]
fn set_refuses_what_it_cannot_do_and_leaves_the_file_as_it_was() {
    let two = KEPT.replace("{\"id\": \"bad\"", "{\"id\": \"notes\"");
    for (body, args, code, said) in [
        (
            KEPT,
            &["set", "nope", "--scope", "global"][..],
            1,
            "no provider `nope` in FILE; its providers: notes, bad, gone\n",
        ),
        (
            KEPT,
            &["set", "notes", "--unset-env", "NOPE"],
            1,
            "not changed: `notes` has no variable NOPE in its env; FILE is left as it was\n",
        ),
        (
            &two,
            &["set", "notes", "--scope", "global"],
            1,
            "not changed: providers[0], providers[1] all have the id \"notes\", so which one to change is not clear (`spear-capabilities remove notes` removes every one); FILE is left as it was\n",
        ),
        (
            KEPT,
            &["set", "notes", "--env", "A=1", "--unset-env", "A"],
            2,
            "--env A=... and --unset-env A are both given\n",
        ),
        (
            KEPT,
            &["enable", "gone"],
            1,
            "not enabled: a turn would start it and its program cannot run, as `check` says; FILE is left as it was:\n  refused  gone\n",
        ),
    ] {
        let (_dir, file) = registry(body);
        let out = on(&file, args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        let said = said.replace("FILE", &file.display().to_string());
        assert!(
            stderr.starts_with(&format!("spear-capabilities: {said}")),
            "{args:?}: {stderr}"
        );
        assert_eq!(read(&file), body, "{args:?}");
    }
    // Nothing to change is bad usage, said by clap.
    let (_dir, file) = registry(KEPT);
    let out = on(&file, &["set", "notes"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("the following required arguments were not provided"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn enable_and_disable_change_enabled_only_and_say_when_it_already_was() {
    let (_dir, file) = registry(KEPT);
    let out = on(&file, &["disable", "notes"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.starts_with(&format!(
            "disabled `notes` in {}\n  ok       notes (disabled)\n",
            file.display()
        )),
        "{stdout}"
    );
    assert_eq!(
        read(&file),
        KEPT.replace(
            "\"read\": [\"search_notes\", \"get_note\"]}",
            "\"read\": [\"search_notes\", \"get_note\"],\n   \"enabled\": false}"
        )
    );
    let out = on(&file, &["disable", "notes"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stdout).starts_with(&format!(
            "`notes` in {} is already disabled; nothing written\n",
            file.display()
        )),
        "{}",
        text(&out.stdout)
    );
    let out = on(&file, &["enable", "notes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(entry(&file, 0)["enabled"], true);
    let out = on(&file, &["enable", "notes"]);
    assert!(
        text(&out.stdout).contains("is already enabled; nothing written\n"),
        "{}",
        text(&out.stdout)
    );
    // An entry nothing starts may be disabled whatever its program.
    let out = on(&file, &["disable", "gone"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // One already enabled is said to be so, whatever its program: enable
    // changes nothing, so it refuses nothing.
    let enabled = read(&file).replace(
        "\"enabled\": false, \"scope\"",
        "\"enabled\": true, \"scope\"",
    );
    std::fs::write(&file, &enabled).expect("write");
    let out = on(&file, &["enable", "gone"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("is already enabled; nothing written\n  refused  gone\n"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(read(&file), enabled);
}

/// `set` takes the lock as `add` does: of twenty edits at once, ten
/// `set`s of one entry's variables and ten `add`s, none is lost.
#[test]
fn twenty_concurrent_sets_and_adds_keep_every_change() {
    let (_dir, file) = registry(KEPT);
    let children: Vec<_> = (0..20)
        .map(|i| {
            let (sub, id, rest) = if i % 2 == 0 {
                (
                    "set",
                    "notes".to_owned(),
                    vec!["--env".to_owned(), format!("V{i}=x")],
                )
            } else {
                (
                    "add",
                    format!("n{i}"),
                    vec!["--".to_owned(), "sh".to_owned()],
                )
            };
            Command::new(CLI)
                .args([sub, &id, "--capabilities", s(&file)])
                .args(rest)
                .env_remove("SPEAR_CAPABILITIES_FILE")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("starts")
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().expect("waits");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let v: Value = serde_json::from_str(&read(&file)).expect("JSON");
    let env = &v["providers"][0]["env"];
    let ids: Vec<&str> = v["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .filter_map(|e| e["id"].as_str())
        .collect();
    for i in 0..20 {
        if i % 2 == 0 {
            assert_eq!(env[format!("V{i}")], "x", "V{i} lost: {env}");
        } else {
            assert!(
                ids.contains(&format!("n{i}").as_str()),
                "n{i} lost: {ids:?}"
            );
        }
    }
}

/// The completions and the manual pages are generated from the same clap
/// definitions, so they know the three subcommands and their flags.
#[test]
fn completions_and_manual_pages_know_set_enable_and_disable() {
    let subcommands = bash_complete("spear-capabilities ''", 1, &[]);
    for word in ["set", "enable", "disable"] {
        assert!(
            subcommands.lines().any(|l| l == word),
            "bash completion lacks {word}: {subcommands}"
        );
    }
    let flag = bash_complete("spear-capabilities set notes --unset", 3, &[]);
    assert_eq!(flag.trim(), "--unset-env", "{flag}");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = cli(&["man", "--dir", s(dir.path())]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for sub in ["set", "enable", "disable"] {
        let page = std::fs::read_to_string(dir.path().join(format!("spear-capabilities-{sub}.1")))
            .unwrap_or_else(|e| panic!("{sub}'s page: {e}"));
        assert!(page.contains("\\-\\-capabilities"), "{sub}: {page}");
    }
    let set = std::fs::read_to_string(dir.path().join("spear-capabilities-set.1")).expect("page");
    for flag in [
        "scope",
        "tasks",
        "read",
        "write",
        "timeout",
        "env",
        "unset\\-env",
    ] {
        assert!(
            set.contains(&format!("\\-\\-{flag}")),
            "set's page lacks --{flag}"
        );
    }
}
