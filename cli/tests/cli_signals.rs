//! No server outlives the CLI (issue 14.1): the built binary is started as
//! a child, signalled or cut off, and no descendant of it may survive.

mod common;

use common::{CLI, sibling};

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use spear_testkit::procfs;

/// A capabilities file in `dir` with one global provider running `command`.
fn registry(dir: &Path, command: &[&str]) -> PathBuf {
    let file = dir.join("capabilities.json");
    let body = serde_json::json!({"providers": [{"id": "srv", "command": command,
        "scope": "global", "read": ["echo"], "timeout": 30}]});
    std::fs::write(&file, body.to_string()).expect("write");
    file
}

/// The CLI with `args`, acting as a turn in registered project `p`.
fn cli(args: &[&str], stdout: Stdio) -> Child {
    Command::new(CLI)
        .args(args)
        .args(["--project", "p"])
        .env_remove("SPEAR_CAPABILITIES_FILE")
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("the CLI runs")
}

/// Waits up to `within` for `found`.
fn wait_for<T>(within: Duration, mut found: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(t) = found() {
            return Some(t);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The live child of `parent` whose command name is `comm`.
fn child_named(parent: u32, comm: &str) -> Option<u32> {
    procfs::processes()
        .into_iter()
        .filter(|p| p.ppid == parent && p.state != 'Z')
        .map(|p| p.pid)
        .find(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == comm)
        })
}

/// Waits up to 10 s for `child` to exit and returns its code (`None`:
/// killed by a signal).
fn exit_code(child: &mut Child) -> Option<i32> {
    let status = wait_for(Duration::from_secs(10), || child.try_wait().ok().flatten())
        .unwrap_or_else(|| {
            let _ = child.kill();
            panic!("the CLI did not exit")
        });
    status.code()
}

fn signal(child: &Child, name: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .expect("kill runs")
        .success();
    assert!(ok, "kill -{name}");
}

/// The server's whole group is gone (zombies left to pid 1 aside).
fn assert_gone(server: u32) {
    let left = procfs::wait_group_gone(server, 5);
    if !left.is_empty() {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{server}")])
            .status();
    }
    assert!(
        left.is_empty(),
        "the server's group outlived the CLI: {left:?}"
    );
}

/// `list` waits for a server that never answers (the issue's `sleep 1000`);
/// the signal ends the CLI with 128 + its number, the server stopped.
fn a_signal_during_a_start_stops_the_server(name: &str, want: i32) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path(), &["sleep", "1000"]);
    let mut child = cli(
        &["list", "--capabilities", file.to_str().expect("utf8")],
        Stdio::piped(),
    );
    let server = wait_for(Duration::from_secs(10), || child_named(child.id(), "sleep"))
        .expect("the CLI started its server");
    signal(&child, name);
    let code = exit_code(&mut child);
    assert_gone(server);
    assert_eq!(code, Some(want), "exit status after SIG{name}");
}

#[test]
fn sigint_stops_every_provider_and_exits_130() {
    a_signal_during_a_start_stops_the_server("INT", 130);
}

#[test]
fn sigterm_stops_every_provider_and_exits_143() {
    a_signal_during_a_start_stops_the_server("TERM", 143);
}

#[test]
fn sighup_stops_every_provider_and_exits_129() {
    a_signal_during_a_start_stops_the_server("HUP", 129);
}

/// A `turn` reading its commands from a terminal that stays open: the
/// started server is stopped through the normal close path (audited as
/// `provider_stopped`), even though it keeps running after its stdin closes.
#[test]
fn a_signal_while_a_turn_reads_stdin_closes_the_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = sibling("spear-fixture-server");
    let file = registry(dir.path(), &[fixture.to_str().expect("utf8"), "--linger"]);
    let audit = dir.path().join("audit.jsonl");
    let mut child = cli(
        &[
            "turn",
            "--capabilities",
            file.to_str().expect("utf8"),
            "--audit",
            audit.to_str().expect("utf8"),
        ],
        Stdio::piped(),
    );
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("the shown text");
    assert!(first.starts_with("== what the turn is shown"), "{first}");
    let server = child_named(child.id(), "spear-fixture-s").expect("the server runs");
    signal(&child, "TERM");
    let code = exit_code(&mut child);
    assert_gone(server);
    let stderr = std::io::read_to_string(child.stderr.take().expect("stderr")).expect("stderr");
    assert_eq!(code, Some(143), "{stderr}");
    let records = std::fs::read_to_string(&audit).expect("audit");
    assert!(
        records.contains(r#""event":"provider_stopped","provider":"srv""#),
        "{stderr}\n{records}"
    );
}

/// SIGKILL gives the CLI no chance to close anything: the kernel kills its
/// server (the parent-death signal).
#[test]
fn sigkill_of_the_cli_takes_its_server_along() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = registry(dir.path(), &["sleep", "1000"]);
    let mut child = cli(
        &["list", "--capabilities", file.to_str().expect("utf8")],
        Stdio::piped(),
    );
    let server = wait_for(Duration::from_secs(10), || child_named(child.id(), "sleep"))
        .expect("the CLI started its server");
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    assert_gone(server);
}

/// `turn ... | head -3` where the reader is gone: no panic, nothing on
/// stderr, the provider stopped through the close path, exit 141 (128 +
/// SIGPIPE, what a shell shows for a writer cut off by its reader).
#[test]
fn a_closed_stdout_ends_quietly_with_141_and_the_providers_stopped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = sibling("spear-fixture-server");
    let pid_file = dir.path().join("server.pid");
    let file = registry(
        dir.path(),
        &[
            fixture.to_str().expect("utf8"),
            "--linger",
            "--pid-file",
            pid_file.to_str().expect("utf8"),
        ],
    );
    let audit = dir.path().join("audit.jsonl");
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut child = cli(
        &[
            "turn",
            "--capabilities",
            file.to_str().expect("utf8"),
            "--audit",
            audit.to_str().expect("utf8"),
            "--command",
            "spear-capability list",
        ],
        Stdio::from(writer),
    );
    let code = exit_code(&mut child);
    let stderr = std::io::read_to_string(child.stderr.take().expect("stderr")).expect("stderr");
    let server: u32 = std::fs::read_to_string(&pid_file)
        .expect("the server started")
        .parse()
        .expect("pid");
    assert_gone(server);
    assert_eq!(code, Some(141), "{stderr}");
    assert_eq!(stderr, "");
    let records = std::fs::read_to_string(&audit).expect("audit");
    assert!(
        records.contains(r#""event":"provider_stopped","provider":"srv""#),
        "{records}"
    );
}
