//! `spear-capabilities check`, run as the real binary.

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

#[test]
fn a_valid_registry_prints_each_provider_and_exits_0() {
    let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/capabilities.json");
    let out = check(&[ex.to_str().expect("utf8")], None);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("  ok       notes\n"), "{stdout}");
    assert!(stdout.contains("kind mcp-stdio; scope corpus demo; tasks implementation, mixed, general; write confirm; timeout 10s"), "{stdout}");
    assert!(stdout.contains("read: get_note, search_notes"), "{stdout}");
    assert!(stdout.ends_with("2 registered, 0 refused\n"), "{stdout}");
}

#[test]
fn refused_entries_are_listed_and_exit_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = write(
        dir.path(),
        r#"{"providers": [
            {"id": "good", "command": ["srv"], "scope": "global"},
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
            "spear-capabilities: capabilities file {}:2:14: expected `,` or `}}`\n",
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
}
