//! What the mcp-stdio tests share: starting the fixture server, reading what
//! it received, proving its processes are gone.
#![allow(dead_code, unreachable_pub)] // each test file uses a different part

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use spear_capabilities::{CallRequest, Error, Provider};
use spear_mcp_stdio::{McpProvider, Options, ServerConfig};
use spear_testkit::procfs;

/// The fixture server, built by cargo for this package's tests.
pub const FIXTURE: &str = env!("CARGO_BIN_EXE_spear-fixture-server");

/// A config starting the fixture with `args`.
pub fn config(args: &[&str]) -> ServerConfig {
    ServerConfig::new(std::iter::once(FIXTURE).chain(args.iter().copied()))
}

/// Options for tests: a generous timeout, a quick shutdown.
pub fn options() -> Options {
    Options::default()
        .with_timeout(Duration::from_secs(20))
        .with_grace(Duration::from_millis(500), Duration::from_millis(500))
}

/// Starts the fixture with `args` and `options`.
pub async fn try_start(args: &[&str], options: Options) -> Result<McpProvider, Error> {
    McpProvider::start("fx", &config(args), Path::new("/"), options).await
}

/// Starts the fixture with `args`, which must succeed.
pub async fn start(args: &[&str]) -> McpProvider {
    try_start(args, options())
        .await
        .expect("the fixture starts")
}

/// Shuts `p` down and checks its whole group is gone and reaped.
pub async fn stop(p: McpProvider) {
    let pid = p.pid();
    p.shutdown().await.expect("shutdown");
    assert_gone(pid);
}

/// The group of `pid` has no survivor and `pid` is no zombie of ours.
pub fn assert_gone(pid: u32) {
    let left = procfs::wait_group_gone(pid, 5);
    assert!(left.is_empty(), "survivors of group {pid}: {left:?}");
    let zombies = procfs::zombie_children();
    assert!(
        zombies.iter().all(|z| z.pid != pid),
        "the server {pid} was not reaped"
    );
}

/// As [`assert_gone`], for a server whose stop goes on in a task of its own
/// (after a start that timed out): waits on the runtime, so that the task
/// can run, up to 10 s.
pub async fn assert_gone_soon(pid: u32) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !procfs::group_survivors(pid).is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_gone(pid);
}

/// The pid the fixture printed on stderr, as an error's stderr shows it.
pub fn pid_in(stderr: &str) -> u32 {
    stderr
        .lines()
        .find_map(|l| l.strip_prefix("fixture: pid "))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid in {stderr:?}"))
}

/// The stderr an error carries.
pub fn stderr_of(e: &Error) -> &str {
    match e {
        Error::Start { stderr, .. }
        | Error::Timeout { stderr, .. }
        | Error::Protocol { stderr, .. }
        | Error::Crashed { stderr, .. } => stderr,
        _ => "",
    }
}

/// Every line the fixture received, as JSON (`--log`).
pub fn received(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .expect("log")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or(Value::String(l.to_owned())))
        .collect()
}

/// Arguments `{"text": text}`.
pub fn text_args(text: &str) -> serde_json::Map<String, Value> {
    let Value::Object(map) = serde_json::json!({ "text": text }) else {
        unreachable!()
    };
    map
}

/// A call of `tool` with no arguments.
pub fn call(tool: &str) -> CallRequest {
    CallRequest::new(tool, serde_json::Map::new())
}

/// A detail of `Provider::info`.
pub fn detail(p: &dyn Provider, name: &str) -> String {
    p.info()
        .details
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v)
        .unwrap_or_default()
}
