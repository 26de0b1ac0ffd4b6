//! The spawn as a server sees it: errors as execvp(3) gives them, the
//! child's signals, group and environment, and no zombie on any path.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use super::ServerProcess;
use crate::config::ServerConfig;
use crate::error::Failure;

fn config(command: &[&str], env: &[(&str, &str)]) -> ServerConfig {
    let Some(serde_json::Value::Object(settings)) = Some(serde_json::json!({
        "command": command,
        "env": env.iter().copied().collect::<BTreeMap<_, _>>(),
    })) else {
        unreachable!()
    };
    ServerConfig::from_settings(&settings).expect("valid")
}

/// The reason a start failed.
fn start_error(command: &[&str], env: &[(&str, &str)]) -> String {
    match ServerProcess::spawn("t", &config(command, env), Path::new("/")) {
        Err(Failure::Start(reason)) => reason,
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("{command:?} started"),
    }
}

/// What the server wrote on stdout, to its end.
async fn output(command: &[&str], env: &[(&str, &str)]) -> (u32, String) {
    let (process, mut pipes) =
        ServerProcess::spawn("t", &config(command, env), Path::new("/")).expect("spawned");
    let mut out = String::new();
    pipes.stdout.read_to_string(&mut out).await.expect("stdout");
    process
        .exit_status(Duration::from_secs(5))
        .await
        .expect("exited");
    (process.pid(), out)
}

/// A field of /proc/<pid>/status text.
fn field<'a>(status: &'a str, name: &str) -> &'a str {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("no {name} in {status}"))
        .trim()
}

/// Whether `pid` is gone from the process table (ended and reaped).
fn reaped_within(pid: u32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Path::new(&format!("/proc/{pid}")).exists() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

#[tokio::test]
async fn exec_errors_are_the_os_errors_execvp_gives() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("server.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").expect("script");
    let script = script.to_str().expect("utf-8");
    let folder = dir.path().to_str().expect("utf-8");
    for (command, env, want) in [
        (
            "/nonexistent/server",
            &[][..],
            "cannot start `/nonexistent/server`: No such file or directory (os error 2)",
        ),
        (
            script,
            &[],
            &format!("cannot start `{script}`: Permission denied (os error 13)"),
        ),
        (
            folder,
            &[],
            &format!("cannot start `{folder}`: Permission denied (os error 13)"),
        ),
        (
            "spear-no-such-server",
            &[],
            "cannot start `spear-no-such-server`: No such file or directory (os error 2)",
        ),
        // A bare name is looked up in the PATH the server gets.
        (
            "sh",
            &[("PATH", "/nonexistent")],
            "cannot start `sh`: No such file or directory (os error 2)",
        ),
        // Found, but not executable, in one of PATH's folders.
        (
            "server.sh",
            &[("PATH", &format!("/nonexistent:{folder}"))],
            "cannot start `server.sh`: Permission denied (os error 13)",
        ),
    ] {
        assert_eq!(start_error(&[command], env), want);
    }
}

#[tokio::test]
async fn the_server_starts_unblocked_with_default_sigpipe_in_its_own_group() {
    let ours = std::fs::read_to_string("/proc/self/status").expect("status");
    let (pid, status) = output(&["cat", "/proc/self/status"], &[]).await;
    assert_eq!(field(&status, "Pid"), pid.to_string());
    assert_eq!(field(&status, "NSpgid"), pid.to_string(), "own group");
    assert_eq!(field(&status, "SigBlk"), "0000000000000000");
    // Ignored: what this process ignores (inherited, as exec keeps it), but
    // not SIGPIPE, which the Rust runtime ignores for itself.
    let ignored = |s: &str| u64::from_str_radix(field(s, "SigIgn"), 16).expect("hex");
    let sigpipe = 1 << (libc::SIGPIPE - 1);
    assert_ne!(
        ignored(&ours) & sigpipe,
        0,
        "the test runs with SIGPIPE ignored"
    );
    assert_eq!(ignored(&status), ignored(&ours) & !sigpipe);
}

#[tokio::test]
async fn the_environment_is_path_home_and_the_configured_variables() {
    let (_, environ) = output(
        &["cat", "/proc/self/environ"],
        &[("SPEAR_A", "1"), ("HOME", "/srv/home")],
    )
    .await;
    let mut got: Vec<&str> = environ.split('\0').filter(|v| !v.is_empty()).collect();
    got.sort_unstable();
    let path = std::env::var("PATH").expect("PATH is set");
    let path = format!("PATH={path}");
    assert_eq!(got, ["HOME=/srv/home", path.as_str(), "SPEAR_A=1"]);
}

#[tokio::test]
async fn an_argument_reaches_the_server_as_given() {
    let (_, out) = output(
        &["sh", "-c", "printf '%s|' \"$0\" \"$@\"", "a b", "", "c"],
        &[],
    )
    .await;
    assert_eq!(out, "a b||c|");
}

#[tokio::test]
async fn a_server_dropped_without_stop_is_killed_and_reaped() {
    let (process, pipes) =
        ServerProcess::spawn("t", &config(&["sleep", "30"], &[]), Path::new("/")).expect("spawned");
    let pid = process.pid();
    drop(pipes);
    drop(process);
    // Reaped by the waiting task, which runs while this one sleeps.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!Path::new(&format!("/proc/{pid}")).exists(), "{pid} left");
}

#[test]
fn a_server_whose_runtime_shut_down_is_killed_and_reaped() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (process, pipes) = runtime
        .block_on(async {
            ServerProcess::spawn("t", &config(&["sleep", "30"], &[]), Path::new("/"))
        })
        .expect("spawned");
    let pid = process.pid();
    // The waiting task is dropped with its runtime; the process lives on.
    drop(runtime);
    assert!(reaped_within(pid, Duration::from_secs(5)), "{pid} left");
    drop(pipes);
    drop(process);
}

#[test]
fn a_start_without_a_runtime_is_refused() {
    let reason = match ServerProcess::spawn("t", &config(&["sleep", "30"], &[]), Path::new("/")) {
        Err(Failure::Start(reason)) => reason,
        other => panic!("{other:?}"),
    };
    assert!(reason.starts_with("cannot start `sleep`: "), "{reason}");
}
