//! mcp-stdio: the server's environment, and the end of its whole process
//! group on shutdown and on drop.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{FIXTURE, assert_gone, call, options, start, stop, try_start};
use spear_capabilities::Provider;
use spear_mcp_stdio::{McpProvider, ServerConfig};
use spear_testkit::procfs::group_survivors;

#[tokio::test]
async fn the_server_gets_only_path_home_and_its_configured_variables() {
    let config = common::config(&[]).with_env("SPEAR_FIXTURE_TOKEN", "t0k3n");
    let p = McpProvider::start("env", &config, Path::new("/"), options())
        .await
        .expect("started");
    let r = p.call_tool(call("env")).await.expect("called");
    let env: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&r.joined_text()).expect("an object");
    let names: BTreeSet<&str> = env.keys().map(String::as_str).collect();
    let mut want = BTreeSet::from(["SPEAR_FIXTURE_TOKEN"]);
    for inherited in ["PATH", "HOME"] {
        if let Some(ours) = std::env::var_os(inherited) {
            want.insert(inherited);
            assert_eq!(env[inherited], ours.to_string_lossy().as_ref());
        }
    }
    assert_eq!(names, want);
    assert_eq!(env["SPEAR_FIXTURE_TOKEN"], "t0k3n");
    // Cargo sets these for this test; the server must not inherit them.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    stop(p).await;
}

#[tokio::test]
async fn shutdown_ends_the_server_and_its_grandchild_and_reaps() {
    let p = start(&["--grandchild"]).await;
    let pid = p.pid();
    assert!(group_survivors(pid).len() >= 2, "no grandchild running");
    stop(p).await;
}

#[tokio::test]
async fn an_unreaped_grandchild_does_not_hold_shutdown_for_the_term_grace() {
    // The grandchild ends on SIGTERM as an orphan whose reaping is pid 1's;
    // in containers that is slow or never. A zombie is not a survivor.
    let options = options().with_grace(Duration::from_secs(2), Duration::from_secs(5));
    let p = try_start(&["--grandchild"], options).await.expect("starts");
    let pid = p.pid();
    let began = Instant::now();
    p.shutdown().await.expect("shutdown");
    let took = began.elapsed();
    assert_gone(pid);
    assert!(took < Duration::from_millis(800), "shutdown took {took:?}");
}

#[tokio::test]
async fn dropping_the_provider_without_shutdown_still_ends_the_group() {
    let p = start(&["--grandchild"]).await;
    let pid = p.pid();
    assert!(group_survivors(pid).len() >= 2, "no grandchild running");
    drop(p);
    // Give the reaper task a moment to collect the server.
    for _ in 0..100 {
        if spear_testkit::procfs::stat(pid).is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_gone(pid);
}

#[tokio::test]
async fn a_group_deaf_to_stdin_and_sigterm_is_killed() {
    // `trap '' TERM` makes SIGTERM ignored, and ignored signals stay ignored
    // across exec: the server and its grandchild only die of SIGKILL.
    let config = ServerConfig::new([
        "sh",
        "-c",
        "trap '' TERM; exec \"$0\" --linger --grandchild",
        FIXTURE,
    ]);
    let p = McpProvider::start(
        "deaf",
        &config,
        Path::new("/"),
        options().with_grace(Duration::from_millis(200), Duration::from_millis(200)),
    )
    .await
    .expect("started");
    p.list_tools().await.expect("listed");
    let pid = p.pid();
    assert!(group_survivors(pid).len() >= 2);
    let started = Instant::now();
    stop(p).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_server_started_through_sh_c_is_ended_with_everything_it_started() {
    // Not `exec`: sh stays the leader, the server is its child and the
    // server's own child is two levels down, as under npx or uvx.
    let script = "\"$0\" --grandchild; echo server ended >&2";
    let config = ServerConfig::new(["sh", "-c", script, FIXTURE]);
    let p = McpProvider::start("shc", &config, Path::new("/"), options())
        .await
        .expect("started");
    p.list_tools().await.expect("listed through sh");
    let pid = p.pid();
    assert!(
        group_survivors(pid).len() >= 3,
        "{:?}",
        group_survivors(pid)
    );
    stop(p).await;
}

#[tokio::test]
async fn dropping_an_unfinished_start_leaves_nothing_running() {
    // The core drops a start that outlives its timeout; the server, already
    // spawned and silent, must go with it, grandchild included.
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    let args = [
        "--silent",
        "--grandchild",
        "--pid-file",
        pid_file.to_str().expect("utf-8"),
    ];
    let dropped = tokio::time::timeout(
        Duration::from_millis(300),
        common::try_start(&args, options()),
    )
    .await;
    assert!(dropped.is_err(), "the silent server answered");
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .expect("the server started")
        .parse()
        .expect("a pid");
    for _ in 0..100 {
        if spear_testkit::procfs::stat(pid).is_none() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_gone(pid);
}

/// The OS boundary the README and docs/security.md state: a grandchild that
/// calls setsid() and ignores SIGTERM leaves the server's process group, so
/// ending the group (SIGTERM, then SIGKILL) cannot reach it, and it outlives
/// the provider. What is ours still ends: the server and its group.
#[tokio::test]
async fn a_grandchild_that_calls_setsid_and_ignores_sigterm_outlives_the_provider() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("escaped");
    let p = start(&["--escaping-grandchild", file.to_str().expect("utf8")]).await;
    let escaped: u32 = std::fs::read_to_string(&file)
        .expect("the fixture wrote the pid before answering initialize")
        .trim()
        .parse()
        .expect("a pid");
    let server = p.pid();
    stop(p).await;
    let alive = spear_testkit::procfs::stat(escaped);
    // Clean up before asserting: the test must not leave it behind either.
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &escaped.to_string()])
        .status();
    let alive = alive.expect("the escaped grandchild outlived the provider");
    assert_ne!(alive.state, 'Z', "{alive:?}");
    assert_eq!(alive.pgrp, escaped, "it left the server's group {server}");
}
