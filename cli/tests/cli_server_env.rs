//! Where a server runs and what its environment holds (issue 46, operator
//! items 5 and 6): its working folder is the capabilities file's, wherever
//! the CLI runs; `${NAME}` in an `env` value is the host's variable, and
//! its value is shown nowhere.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{CLI, sibling, text, utf8};

/// A server that writes its working folder to `cwd_file`, then is the
/// fixture server.
fn pwd_server(cwd_file: &Path) -> serde_json::Value {
    serde_json::json!([
        "/bin/sh",
        "-c",
        r#"pwd -P > "$0"; exec "$1""#,
        utf8(cwd_file),
        utf8(&sibling("spear-fixture-server")),
    ])
}

/// The CLI with `args`, run in `dir`.
fn cli_in(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(CLI)
        .args(args)
        .current_dir(dir)
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("runs")
}

#[test]
fn a_server_runs_in_the_capabilities_files_folder_wherever_the_cli_runs() {
    let home = tempfile::tempdir().expect("tempdir");
    let conf = home.path().join("conf");
    std::fs::create_dir(&conf).expect("conf");
    let elsewhere = home.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("elsewhere");
    let cwd_file = home.path().join("cwd.txt");
    let file = conf.join("capabilities.json");
    let body = serde_json::json!({"providers": [
        {"id": "fix", "command": pwd_server(&cwd_file), "scope": "global", "timeout": 10}
    ]});
    std::fs::write(&file, body.to_string()).expect("write");
    let conf = conf.canonicalize().expect("canonical");

    // Named absolutely, from another folder; then by a relative name, from
    // its own folder; then by a relative path with a folder in it.
    for (dir, name) in [
        (elsewhere.as_path(), utf8(&file).to_owned()),
        (conf.as_path(), "capabilities.json".to_owned()),
        (home.path(), "conf/capabilities.json".to_owned()),
    ] {
        let _ = std::fs::remove_file(&cwd_file);
        let out = cli_in(dir, &["check", "--start", &name]);
        assert!(
            out.status.success(),
            "{name} from {}: {}{}",
            dir.display(),
            text(&out.stdout),
            text(&out.stderr)
        );
        let ran_in = std::fs::read_to_string(&cwd_file).expect("the server wrote its folder");
        assert_eq!(
            Path::new(ran_in.trim()),
            conf,
            "{name} from {}",
            dir.display()
        );
    }
}

/// A capabilities file in `dir` whose one provider `fix` gets `env`; its
/// server writes `$TOKEN|$LIT` to `dir/seen.txt`, then is the fixture
/// server.
fn env_registry(dir: &Path, env: serde_json::Value) -> std::path::PathBuf {
    let command = serde_json::json!([
        "/bin/sh",
        "-c",
        r#"printf '%s|%s' "$TOKEN" "$LIT" > seen.txt; exec "$0""#,
        utf8(&sibling("spear-fixture-server")),
    ]);
    let file = dir.join("capabilities.json");
    let body = serde_json::json!({"providers": [{"id": "fix", "command": command,
        "env": env, "scope": "global", "read": ["echo"], "timeout": 10}]});
    std::fs::write(&file, body.to_string()).expect("write");
    file
}

/// The CLI with `args`, `vars` set in its environment (and every log on).
fn cli_with(vars: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let mut command = Command::new(CLI);
    command
        .args(args)
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .env_remove("SPEAR_46_SECRET")
        .env("RUST_LOG", "trace")
        .stdin(Stdio::null());
    for (k, v) in vars {
        command.env(k, v);
    }
    command.output().expect("runs")
}

#[test]
fn a_host_variable_reaches_the_server_and_its_value_is_shown_nowhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = env_registry(
        dir.path(),
        serde_json::json!({"TOKEN": "Bearer ${SPEAR_46_SECRET}", "LIT": "cost $$5"}),
    );
    let file = utf8(&file);
    let secret = format!("s3cr3t-{}", std::process::id());
    let vars = [("SPEAR_46_SECRET", secret.as_str())];
    let (trail, trace) = (
        dir.path().join("trail.jsonl"),
        dir.path().join("trace.jsonl"),
    );
    let (trail_s, trace_s) = (utf8(&trail), utf8(&trace));
    let echo = r#"spear-capability invoke fix/echo '{"text": "hi"}'"#;
    let runs = [
        vec!["check", "--start", file],
        vec!["check", "--json", "--start", file],
        vec!["list", "--capabilities", file],
        vec!["list", "--json", "--capabilities", file],
        vec!["get", "fix", "--start", "--capabilities", file],
        vec!["get", "fix", "--json", "--start", "--capabilities", file],
        vec![
            "turn",
            "--project",
            "p",
            "--mode",
            "auto",
            "--capabilities",
            file,
            "--audit",
            trail_s,
            "--trace",
            trace_s,
            "--command",
            echo,
        ],
        vec![
            "invoke",
            "fix/echo",
            r#"{"text": "hi"}"#,
            "--project",
            "p",
            "--capabilities",
            file,
            "--audit",
            trail_s,
            "--trace",
            trace_s,
        ],
    ];
    for args in &runs {
        let _ = std::fs::remove_file(dir.path().join("seen.txt"));
        let out = cli_with(&vars, args);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(out.status.success(), "{args:?}: {stdout}{stderr}");
        assert!(
            !stdout.contains(&secret) && !stderr.contains(&secret),
            "{args:?}: {stdout}{stderr}"
        );
        if args.contains(&"--start") || args[0] == "turn" || args[0] == "invoke" {
            let seen = std::fs::read_to_string(dir.path().join("seen.txt")).expect("started");
            assert_eq!(seen, format!("Bearer {secret}|cost $5"), "{args:?}");
        }
    }
    for written in [&trail, &trace] {
        let all = std::fs::read_to_string(written).expect("written");
        assert!(all.contains("fix"), "{}: {all}", written.display());
        assert!(!all.contains(&secret), "{}: {all}", written.display());
    }
}

#[test]
fn an_unset_variable_refuses_the_entry_by_name_in_check_and_list() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = env_registry(
        dir.path(),
        serde_json::json!({"TOKEN": "${SPEAR_46_SECRET}"}),
    );
    let file = utf8(&file);
    let out = cli_with(&[], &["check", file]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(r#"capabilities.json:1:"#)
            && stdout.contains(r#"key "env": the value of "TOKEN" names ${SPEAR_46_SECRET}, which is not set in this environment"#),
        "{stdout}"
    );
    let out = cli_with(&[], &["check", "--json", file]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let problem = &json["refused"][0]["problems"][0];
    assert_eq!(problem["kind"], "unset_variable", "{json}");
    assert_eq!(problem["key"], "env", "{json}");
    let out = cli_with(&[], &["list", "--capabilities", file]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("${SPEAR_46_SECRET}"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_dollar_that_is_not_a_variable_or_doubled_refuses_the_entry_and_says_the_syntax() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (value, says) in [
        ("$HOME", r#"a '$' is followed by "HOME""#),
        ("${HOME", r#""${" is not closed by "}""#),
        ("${}", r#""${}" names no variable"#),
        (
            "${HOME:-/root}",
            r#""${HOME:-/root}" is not a variable name"#,
        ),
    ] {
        let file = env_registry(dir.path(), serde_json::json!({"TOKEN": value}));
        let out = cli_with(&[], &["check", utf8(&file)]);
        assert_eq!(out.status.code(), Some(1), "{value}");
        let stdout = text(&out.stdout);
        assert!(
            stdout.contains(&format!(r#"key "env": the value of "TOKEN": {says}"#))
                && stdout
                    .contains("write ${NAME} for the host's variable NAME, $$ for a literal $"),
            "{value}: {stdout}"
        );
    }
}
