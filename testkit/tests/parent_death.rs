//! When the embedding process dies without a word (SIGKILL), its servers
//! die too (Linux: the parent-death signal, set in the child before exec);
//! their own children are orphaned and live on, which is what remains at
//! the OS boundary. And a server started from a thread that then ends is
//! not killed with that thread.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{call, options, start};
use spear_capabilities::Provider;
use spear_mcp_stdio::McpProvider;
use spear_testkit::procfs;

/// Set in the child run of this binary: the embedder that gets killed.
const EMBEDDER: &str = "SPEAR_PARENT_DEATH_EMBEDDER";

/// Whether `pid` is a process that has not ended.
fn alive(pid: u32) -> bool {
    procfs::stat(pid).is_some_and(|p| p.state != 'Z')
}

/// Waits up to `within` for `done`.
fn wait_until(within: Duration, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// The kernel sends the parent-death signal when the *thread* that forked
/// the child ends. The runtime's threads come and go (here: a thread that
/// starts the server and ends at once), and the server must live on.
#[test]
fn a_server_outlives_the_thread_that_started_it() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_keep_alive(Duration::from_millis(10))
        .enable_all()
        .build()
        .expect("runtime");
    let handle = rt.handle().clone();
    let provider = std::thread::spawn(move || handle.block_on(start(&[])))
        .join()
        .expect("the starting thread");
    let pid = provider.pid();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        alive(pid),
        "the server died with the thread that started it"
    );
    let answer = rt.block_on(provider.call_tool(call("echo")));
    assert!(answer.is_ok(), "{answer:?}");
    rt.block_on(common::stop(provider));
}

/// The embedder's side: start a server with a grandchild, say both pids,
/// and wait to be killed. Does nothing unless run by the test below.
#[tokio::test]
#[ignore = "the child process of the_servers_die_with_an_embedder_killed_by_sigkill"]
async fn embedder_waiting_to_be_killed() {
    let Some(out) = std::env::var_os(EMBEDDER) else {
        return;
    };
    let provider = McpProvider::start(
        "fx",
        &common::config(&["--grandchild", "--linger"]),
        std::path::Path::new("/"),
        options(),
    )
    .await
    .expect("started");
    std::fs::write(&out, provider.pid().to_string()).expect("pid file");
    tokio::time::sleep(Duration::from_secs(60)).await;
}

/// SIGKILL leaves the embedder no word to say: the server (its child, which
/// keeps running after its stdin closes: `--linger`) is killed by the kernel; the server's own child (`sleep 3600` in its group)
/// is orphaned and lives on, which no signal of ours can prevent: the
/// group is not signalled when its leader dies.
#[test]
fn the_servers_die_with_an_embedder_killed_by_sigkill() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("server.pid");
    let mut embedder = Command::new(std::env::current_exe().expect("this test"))
        .args(["--exact", "embedder_waiting_to_be_killed", "--ignored"])
        .env(EMBEDDER, &pid_file)
        .stdout(Stdio::null())
        .spawn()
        .expect("the embedder");
    let read = || std::fs::read_to_string(&pid_file).ok()?.parse::<u32>().ok();
    assert!(
        wait_until(Duration::from_secs(30), || read().is_some()),
        "the embedder did not start its server"
    );
    let server = read().expect("pid");
    let grandchild = || {
        procfs::processes()
            .into_iter()
            .find(|p| p.pgrp == server && p.pid != server && p.state != 'Z')
    };
    assert!(wait_until(Duration::from_secs(10), || grandchild().is_some()));
    assert!(alive(server));
    embedder.kill().expect("SIGKILL");
    embedder.wait().expect("reaped");
    let gone = wait_until(Duration::from_secs(5), || !alive(server));
    let orphan = grandchild();
    // Ours to clean up: the orphaned grandchild.
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{server}")])
        .status();
    assert!(gone, "the server {server} outlived its embedder");
    assert!(
        orphan.as_ref().is_some_and(|o| o.ppid != server),
        "the grandchild is expected to outlive a SIGKILLed embedder (orphaned): {orphan:?}"
    );
}
