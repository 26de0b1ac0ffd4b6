//! A server started from the embedder's *main* thread, which starts it
//! without the hop to the spawner thread, dies with an embedder killed
//! without a word (SIGKILL): the parent-death signal holds on that path
//! too. Its own `main` (harness = false), since libtest runs every test on
//! a thread of its own.

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use spear_mcp_stdio::{McpProvider, Options, ServerConfig};
// Links the kind registry, as every test target of the workspace does.
use spear_providers as _;

/// Set in the child run of this binary: the embedder that gets killed.
const EMBEDDER: &str = "SPEAR_MAIN_THREAD_EMBEDDER";

fn main() -> ExitCode {
    if let Some(pid_file) = std::env::var_os(EMBEDDER) {
        embedder(Path::new(&pid_file));
        return ExitCode::SUCCESS;
    }
    // libtest-style arguments (`--list`, filters) come from `cargo test`.
    if std::env::args().any(|a| a == "--list") {
        println!("the_server_dies_with_an_embedder_killed_on_its_main_thread: test");
        return ExitCode::SUCCESS;
    }
    match the_server_dies_with_an_embedder_killed_on_its_main_thread() {
        Ok(()) => {
            println!("test the_server_dies_with_an_embedder_killed_on_its_main_thread ... ok");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("the_server_dies_with_an_embedder_killed_on_its_main_thread: {why}");
            ExitCode::FAILURE
        }
    }
}

/// The embedder's side, on its main thread: a server that writes its pid
/// and never answers, so the start is still waiting when SIGKILL comes.
fn embedder(pid_file: &Path) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let script = format!("echo $$ > '{}'; exec sleep 60", pid_file.display());
    let config = ServerConfig::new(["sh", "-c", &script]);
    let options = Options::default().with_timeout(Duration::from_secs(60));
    let _ = runtime.block_on(McpProvider::start("main", &config, Path::new("/"), options));
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| Some(stat.rsplit_once(')')?.1.split_whitespace().next()? != "Z"))
        .unwrap_or(false)
}

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

fn the_server_dies_with_an_embedder_killed_on_its_main_thread() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let pid_file = dir.path().join("server.pid");
    let mut embedder = Command::new(std::env::current_exe().map_err(|e| e.to_string())?)
        .env(EMBEDDER, &pid_file)
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| format!("the embedder: {e}"))?;
    let read = || {
        std::fs::read_to_string(&pid_file)
            .ok()?
            .trim()
            .parse::<u32>()
            .ok()
    };
    let started = wait_until(Duration::from_secs(30), || read().is_some_and(alive));
    let server = read();
    // The path under test: no spawner thread was started for it.
    let threads = std::fs::read_dir(format!("/proc/{}/task", embedder.id()))
        .map(|tasks| {
            tasks
                .flatten()
                .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    let _ = embedder.kill();
    let _ = embedder.wait();
    let Some(server) = server.filter(|_| started) else {
        return Err("the embedder did not start its server".into());
    };
    if threads.iter().any(|name| name.trim() == "spear-spawner") {
        let _ = Command::new("kill")
            .args(["-KILL", &server.to_string()])
            .status();
        return Err(format!("started from the spawner thread: {threads:?}"));
    }
    if wait_until(Duration::from_secs(5), || !alive(server)) {
        Ok(())
    } else {
        let _ = Command::new("kill")
            .args(["-KILL", &server.to_string()])
            .status();
        Err(format!("the server {server} outlived its embedder"))
    }
}
