//! MCP lifecycle, stdio: after a call times out, `invoke` lets the server
//! finish its stop sequence (the cancellation, stdin closed, a grace) before
//! the CLI exits, instead of killing it as the process ends.

mod common;

use common::{CLI, sibling};

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

#[test]
fn invoke_lets_a_server_that_timed_out_stop_cleanly_before_it_exits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("stopped");
    let server = sibling("spear-fixture-server");
    let file = dir.path().join("capabilities.json");
    let registry = json!({"providers": [{
        "id": "fix", "command": [server, "--on-eof", marker], "scope": "global",
        "timeout": 1, "read": ["hang"],
    }]});
    std::fs::write(&file, registry.to_string()).expect("write");
    let out = Command::new(CLI)
        .args([
            "invoke",
            "fix/hang",
            "{}",
            "--project",
            "p",
            "--capabilities",
        ])
        .arg(&file)
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // The server's 300 ms to leave came before the CLI's exit: the marker
    // is there the moment the CLI is gone (allowing the file system a beat).
    let written = (0..20).any(|_| {
        marker.exists() || {
            std::thread::sleep(Duration::from_millis(5));
            false
        }
    });
    assert!(
        written,
        "the server was killed before it could stop: {stderr}"
    );
}

/// A signal starts the stop of every server, which a server that ignores
/// its closed stdin makes take its grace; a second signal ends them at once
/// (SIGKILL to each group) and the CLI exits with the first signal's status.
#[test]
fn a_second_signal_ends_the_stops_at_once() {
    use std::io::{BufRead, BufReader};
    use std::time::Instant;

    let dir = tempfile::tempdir().expect("tempdir");
    let server = sibling("spear-fixture-server");
    let pid_file = dir.path().join("pid");
    let file = dir.path().join("capabilities.json");
    let registry = json!({"providers": [{
        "id": "fix", "command": [server, "--linger", "--pid-file", pid_file],
        "scope": "global", "timeout": 10, "read": ["echo"],
    }]});
    std::fs::write(&file, registry.to_string()).expect("write");
    let mut child = Command::new(CLI)
        .args(["turn", "--project", "p", "--capabilities"])
        .arg(&file)
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("the shown text");
    assert!(first.starts_with("== what the turn is shown"), "{first}");
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .expect("pid file")
        .trim()
        .parse()
        .expect("a pid");
    let kill = |name: &str| {
        let ok = Command::new("kill")
            .args([&format!("-{name}"), &child.id().to_string()])
            .status()
            .expect("kill runs")
            .success();
        assert!(ok, "kill -{name}");
    };
    let began = Instant::now();
    kill("INT");
    std::thread::sleep(Duration::from_millis(100));
    kill("INT");
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "the CLI did not exit"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    // The first signal alone would wait the 2 s grace for the lingering server.
    assert!(
        began.elapsed() < Duration::from_millis(1500),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(status.code(), Some(130));
    let left = spear_testkit::procfs::wait_group_gone(pid, 5);
    assert!(
        left.is_empty(),
        "the server's group outlived the CLI: {left:?}"
    );
}
