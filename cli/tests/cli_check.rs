//! `spear-capabilities check`, run as the real binary.

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn check(args: &[&str], env_file: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_spear-capabilities"));
    cmd.arg("check")
        .args(args)
        .env_remove("SPEAR_CAPABILITIES_FILE");
    if let Some(f) = env_file {
        cmd.env("SPEAR_CAPABILITIES_FILE", f);
    }
    cmd.output().expect("runs")
}

fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

fn write(dir: &Path, body: &str) -> std::path::PathBuf {
    let p = dir.join("capabilities.json");
    std::fs::write(&p, body).expect("write");
    p
}

/// The example's second entry names a server that is not installed here:
/// `check` says so (issue 14.2), where it used to say `ok`.
#[test]
fn the_example_registry_prints_each_provider_and_refuses_what_cannot_run() {
    let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/capabilities.json");
    let out = check(&[ex.to_str().expect("utf8")], None);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("  ok       notes\n"), "{stdout}");
    assert!(stdout.contains("kind mcp-stdio; scope corpus demo; tasks implementation, mixed, general; write confirm; timeout 10s"), "{stdout}");
    assert!(stdout.contains("read: get_note, search_notes"), "{stdout}");
    assert!(stdout.contains("  refused  firmware-tracker\n           cannot start `/opt/tracker-mcp/bin/tracker-mcp`: No such file or directory (os error 2)\n"), "{stdout}");
    assert!(stdout.ends_with("1 registered, 1 refused\n"), "{stdout}");
}

#[test]
fn a_program_that_is_missing_not_executable_or_not_on_path_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("server.sh");
    std::fs::write(&script, "#!/bin/sh\n").expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let f = write(
        dir.path(),
        r#"{"providers": [
            {"id": "runs", "command": ["sh", "-c", "true"], "scope": "global"},
            {"id": "plain", "command": ["./server.sh"], "scope": "global"},
            {"id": "gone", "command": ["bin/missing"], "scope": "global"},
            {"id": "typo", "command": ["no-such-server-anywhere"], "scope": "global"}
        ]}"#,
    );
    let out = check(&[f.to_str().expect("utf8")], None);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("  ok       runs\n"), "{stdout}");
    let base = dir.path().display();
    for line in [
        format!(
            "  refused  plain\n           cannot start `{base}/./server.sh`: Permission denied (os error 13)\n"
        ),
        format!(
            "  refused  gone\n           cannot start `{base}/bin/missing`: No such file or directory (os error 2)\n"
        ),
        "  refused  typo\n           cannot start `no-such-server-anywhere`: No such file or directory (os error 2)\n"
            .to_owned(),
    ] {
        assert!(stdout.contains(&line), "missing {line:?} in:\n{stdout}");
    }
    assert!(stdout.ends_with("1 registered, 3 refused\n"), "{stdout}");
}

/// Issue 42.10: `check` asks the kernel whether this user may run the
/// program, as the start's exec does, not its mode bits: a program that
/// only its owner (root) may run is refused to another user, "Permission
/// denied", where the start would fail the same way. Needs root to set the
/// scene (CI runs the tests as root); as another user there is nothing to
/// run.
#[test]
fn as_another_user_a_program_only_its_owner_may_run_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    if !common::is_root() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let script = dir.path().join("server.sh");
    std::fs::write(&script, "#!/bin/sh\n").expect("script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o744)).expect("chmod");
    let f = write(
        dir.path(),
        r#"{"providers": [{"id": "owners", "command": ["./server.sh"], "scope": "global"}]}"#,
    );
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let out = common::as_nobody(&["check", f.to_str().expect("utf8")]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    let refused = format!(
        "  refused  owners\n           cannot start `{}/./server.sh`: Permission denied (os error 13)\n",
        dir.path().display()
    );
    assert!(
        stdout.contains(&refused),
        "missing {refused:?} in:\n{stdout}"
    );
    // Root itself may run it: the same check passes.
    let out = check(&[f.to_str().expect("utf8")], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

/// A path the operator named must exist (exit 2); a missing file found by
/// default still means no providers (next test).
#[test]
fn a_named_file_that_does_not_exist_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let typo = dir.path().join("typo.json");
    let out = check(&[typo.to_str().expect("utf8")], None);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(
        text(&out.stderr),
        format!(
            "spear-capabilities: capabilities file {}: No such file or directory (os error 2)\n",
            typo.display()
        )
    );
}

#[test]
fn refused_entries_are_listed_and_exit_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = write(
        dir.path(),
        r#"{"providers": [
            {"id": "good", "command": ["sh"], "scope": "global"},
            {"id": "Bad", "command": [], "write": "sometimes"}
        ]}"#,
    );
    let out = check(&[f.to_str().expect("utf8")], None);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("  refused  providers[1] (\"Bad\")\n"),
        "{stdout}"
    );
    assert!(stdout.contains(r#"key "write": "sometimes" is not a write policy; allowed: "refuse", "confirm", "allow""#), "{stdout}");
    assert!(stdout.contains(r#"key "command": is empty"#), "{stdout}");
    assert!(stdout.ends_with("1 registered, 1 refused\n"), "{stdout}");
}

#[test]
fn an_unparsable_file_exits_2_with_line_and_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = write(
        dir.path(),
        "{\"providers\": [\n  {\"id\": \"x\" \"command\": []}\n]}",
    );
    let out = check(&[f.to_str().expect("utf8")], None);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "spear-capabilities: capabilities file {}:2:13: expected comma\n",
            f.display()
        )
    );
}

#[test]
fn the_variable_names_the_file_and_a_missing_one_means_no_providers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nope.json");
    let out = check(&[], Some(&missing));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stdout),
        format!(
            "no capabilities file at {}: no providers are registered\n",
            missing.display()
        )
    );
}

#[test]
fn json_output_is_one_object_for_scripts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = write(
        dir.path(),
        r#"{"providers": [{"id": "a", "command": ["s"]}, {"id": 1}]}"#,
    );
    let out = check(&["--json", f.to_str().expect("utf8")], None);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["providers"][0]["id"], "a");
    assert_eq!(v["providers"][0]["scope"], serde_json::Value::Null);
    assert_eq!(v["refused"][0]["entry"], "providers[1]");
    // Without a scope nothing starts it: its program is a warning.
    assert_eq!(v["providers"][0]["cannot_run"], serde_json::Value::Null);
    assert!(
        v["providers"][0]["warnings"][1].as_str().is_some_and(
            |w| w.starts_with("cannot start `s`: No such file or directory (os error 2)")
        ),
        "{v}"
    );
}

/// Issue 33.1: a program that cannot run refuses only an entry a turn
/// would start. For a disabled entry, or one without a scope (which the
/// spec says applies nowhere), it is a warning, and so is the missing
/// scope: the entries stay `ok` and the exit status 0.
#[test]
fn a_disabled_or_unscoped_entrys_missing_program_is_a_warning_not_a_refusal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = write(
        dir.path(),
        r#"{"providers": [
            {"id": "off", "command": ["/nonexistent/off-server"], "scope": "global", "enabled": false},
            {"id": "nowhere", "command": ["/nonexistent/nowhere-server"]}
        ]}"#,
    );
    let out = check(&[f.to_str().expect("utf8")], None);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    for line in [
        "  ok       off (disabled)\n",
        "           warning: cannot start `/nonexistent/off-server`: No such file or directory (os error 2); a warning only: it is disabled, so nothing starts it\n",
        "  ok       nowhere\n",
        "           warning: no scope, so it applies nowhere (add `scope` to use it)\n",
        "           warning: cannot start `/nonexistent/nowhere-server`: No such file or directory (os error 2); a warning only: it has no scope, so nothing starts it\n",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
    assert!(!stdout.contains("refused  "), "{stdout}");
    assert!(
        stdout.ends_with("2 registered, 0 refused, 3 warnings\n"),
        "{stdout}"
    );

    let out = check(&["--json", f.to_str().expect("utf8")], None);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["providers"][0]["cannot_run"], serde_json::Value::Null);
    assert_eq!(
        v["providers"][0]["warnings"].as_array().map(Vec::len),
        Some(1),
        "{v}"
    );
    assert_eq!(
        v["providers"][1]["warnings"].as_array().map(Vec::len),
        Some(2),
        "{v}"
    );

    // Enabled and scoped, the same program still refuses the entry.
    let f = write(
        dir.path(),
        r#"{"providers": [{"id": "on", "command": ["/nonexistent/off-server"], "scope": "global"}]}"#,
    );
    let out = check(&[f.to_str().expect("utf8")], None);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("  refused  on\n"));
}
