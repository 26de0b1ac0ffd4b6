//! The example programs run and do what their docs say.

use std::path::Path;
use std::process::Command;

fn run(exe: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(exe)
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn embed_shows_the_turn_and_answers_its_commands() {
    let (code, out) = run(
        env!("CARGO_BIN_EXE_embed"),
        &[
            r#"spear-capability invoke notes/get_note '{"id": 1}'"#,
            "ls",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("External capabilities (3 offered)."),
        "{out}"
    );
    assert!(out.contains("\n# Release checklist\n"), "{out}");
    assert!(out.ends_with("$ ls\n(the shell would run this)\n"), "{out}");
}

#[test]
fn select_providers_explains_every_decision() {
    let (code, out) = run(
        env!("CARGO_BIN_EXE_select-providers"),
        &["examples/capabilities.json", "demo", "general"],
    );
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "notes        selected\nfirmware-tracker its scope does not cover the turn\n"
    );
}

#[test]
fn the_example_server_answers_mcp_over_stdio() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_spear-example-server"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{}}}}"#
    )
    .expect("write");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .expect("write");
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"}}"#).expect("write");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":3,"method":"resources/list"}}"#
    )
    .expect("write");
    drop(stdin);
    let out = child.wait_with_output().expect("output");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(
        lines.len(),
        3,
        "one answer per request, none for the notification"
    );
    assert_eq!(lines[0]["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(
        lines[1]["result"]["tools"].as_array().map(Vec::len),
        Some(3)
    );
    assert_eq!(lines[2]["error"]["code"], -32601);
}
