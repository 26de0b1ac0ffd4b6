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
