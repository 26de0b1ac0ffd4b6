//! The spawn as a server sees it: errors as execvp(3) gives them, the
//! child's signals, group and environment, and no zombie on any path.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use std::future::Future;

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
async fn start_error(command: &[&str], env: &[(&str, &str)]) -> String {
    match ServerProcess::spawn(&config(command, env), Path::new("/")).await {
        Err(Failure::Start(reason)) => reason,
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("{command:?} started"),
    }
}

/// What the server wrote on stdout, to its end.
async fn output(command: &[&str], env: &[(&str, &str)]) -> (u32, String) {
    let (process, _stdin, mut stdout) = ServerProcess::spawn(&config(command, env), Path::new("/"))
        .await
        .expect("spawned");
    let mut out = String::new();
    stdout.read_to_string(&mut out).await.expect("stdout");
    let exited = tokio::time::timeout(Duration::from_secs(5), process.leader.exited()).await;
    exited.expect("exited");
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
        assert_eq!(start_error(&[command], env).await, want);
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
    let (process, pipes, _stdout) =
        ServerProcess::spawn(&config(&["sleep", "30"], &[]), Path::new("/"))
            .await
            .expect("spawned");
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

/// `sleep 30` started on a current-thread runtime of its own, with the
/// runtime (to drop) and the server's stdin and stdout.
fn sleeping_on_a_runtime_of_its_own() -> (
    tokio::runtime::Runtime,
    ServerProcess,
    (
        tokio::net::unix::pipe::Sender,
        tokio::net::unix::pipe::Receiver,
    ),
) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let config = config(&["sleep", "30"], &[]);
    let spawned = runtime.block_on(ServerProcess::spawn(&config, Path::new("/")));
    let (process, stdin, stdout) = spawned.expect("spawned");
    (runtime, process, (stdin, stdout))
}

#[test]
fn a_server_whose_runtime_shut_down_is_killed_and_reaped() {
    let (runtime, process, pipes) = sleeping_on_a_runtime_of_its_own();
    let pid = process.pid();
    // The waiting task is dropped with its runtime; the process lives on.
    drop(runtime);
    assert!(reaped_within(pid, Duration::from_secs(5)), "{pid} left");
    drop(pipes);
    drop(process);
}

/// A server that does not end within a second of SIGKILL when its runtime
/// shuts down (stuck in the kernel; here frozen by the cgroup v1 freezer,
/// which holds even SIGKILL) is reaped by a thread once it ends, not left
/// a zombie for the life of the embedder.
#[test]
fn a_server_stuck_past_sigkill_as_its_runtime_shuts_down_is_reaped_once_it_ends() {
    let freezer = Path::new("/sys/fs/cgroup/freezer");
    assert!(
        freezer.join("freezer.state").exists() || freezer.join("tasks").exists(),
        "this test needs the cgroup v1 freezer at {} (and root)",
        freezer.display()
    );
    /// Thaws and removes the group however the test ends.
    struct Thawed(std::path::PathBuf);
    impl Drop for Thawed {
        fn drop(&mut self) {
            let _ = std::fs::write(self.0.join("freezer.state"), "THAWED");
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    let group = freezer.join(format!("spear-test-{}", std::process::id()));
    std::fs::create_dir_all(&group).expect("a freezer cgroup");
    let group = Thawed(group);
    let group = &group.0;
    let (runtime, process, pipes) = sleeping_on_a_runtime_of_its_own();
    let pid = process.pid();
    std::fs::write(group.join("tasks"), pid.to_string()).expect("moved to the group");
    std::fs::write(group.join("freezer.state"), "FROZEN").expect("frozen");
    let began = Instant::now();
    drop(runtime);
    let took = began.elapsed();
    assert!(
        Path::new(&format!("/proc/{pid}")).exists(),
        "{pid} ended frozen"
    );
    std::fs::write(group.join("freezer.state"), "THAWED").expect("thawed");
    assert!(
        reaped_within(pid, Duration::from_secs(10)),
        "{pid} is left a zombie"
    );
    assert!(
        took < Duration::from_secs(5),
        "the runtime's drop took {took:?}"
    );
    drop(pipes);
    drop(process);
}

#[test]
fn a_start_without_a_runtime_is_refused() {
    let config = config(&["sleep", "30"], &[]);
    let start = std::pin::pin!(ServerProcess::spawn(&config, Path::new("/")));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let reason = match start.poll(&mut cx) {
        std::task::Poll::Ready(Err(Failure::Start(reason))) => reason,
        other => panic!("{other:?}"),
    };
    assert!(reason.starts_with("cannot start `sleep`: "), "{reason}");
}

/// A descriptor the embedder holds without close-on-exec (from a
/// supervisor, `exec 7>file`) is not open in the server.
#[tokio::test]
async fn a_descriptor_inherited_without_cloexec_is_not_open_in_the_server() {
    let file = tempfile::tempfile().expect("a file");
    // dup(2): the copy has no close-on-exec.
    let copy = rustix::io::dup(&file).expect("dup");
    let leaked = std::os::fd::AsRawFd::as_raw_fd(&copy);
    assert!(leaked > 2);
    let probe = format!("test -e /proc/$$/fd/{leaked} && echo open || echo closed");
    let (_, out) = output(&["sh", "-c", &probe], &[]).await;
    drop(copy);
    assert_eq!(out.trim(), "closed");
    // The server's own three are there.
    let (_, out) = output(
        &[
            "sh",
            "-c",
            "ls /proc/$$/fd | sort -n | head -3 | tr '\\n' ' '",
        ],
        &[],
    )
    .await;
    assert_eq!(out, "0 1 2 ");
}

/// A job that panics on the spawner thread ends itself only: the servers
/// that thread started keep running (their parent-death signal is tied to
/// it) and later starts still work.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_panicking_spawn_job_takes_no_server_down() {
    let (process, _pipes, _stdout) =
        ServerProcess::spawn(&config(&["sleep", "30"], &[]), Path::new("/"))
            .await
            .expect("spawned");
    super::spawner(Box::new(|| panic!("a spawn job that panics (on purpose)"))).expect("queued");
    let (second, _more, _stdout2) =
        ServerProcess::spawn(&config(&["sleep", "30"], &[]), Path::new("/"))
            .await
            .expect("a later start works");
    // Give a SIGKILL from a dead spawner thread time to land.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(process.status().is_none(), "the first server was killed");
    assert!(second.status().is_none());
}

/// A start that waits for the spawner thread leaves its runtime's thread
/// free: a ticker on the same current-thread runtime keeps ticking.
#[tokio::test(flavor = "current_thread")]
async fn a_start_waiting_for_the_spawner_does_not_block_its_runtime() {
    super::spawner(Box::new(|| std::thread::sleep(Duration::from_millis(500)))).expect("queued");
    let ticks = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let counted = std::sync::Arc::clone(&ticks);
    let ticker = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(10)).await;
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let (process, _pipes, _stdout) =
        ServerProcess::spawn(&config(&["sleep", "30"], &[]), Path::new("/"))
            .await
            .expect("spawned");
    ticker.abort();
    let ticked = ticks.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        ticked >= 5,
        "the runtime ticked {ticked} times while the start waited"
    );
    drop(process);
}

#[tokio::test]
async fn a_relative_program_path_is_taken_from_the_base_dir() {
    let base = std::env::temp_dir();
    let err = ServerProcess::spawn(&config(&["bin/srv"], &[]), &base)
        .await
        .expect_err("cannot start");
    let want = format!("cannot start `{}/bin/srv`: No such file", base.display());
    assert!(
        matches!(&err, Failure::Start(r) if r.starts_with(&want)),
        "{err:?}"
    );
}

#[tokio::test]
async fn an_env_variable_unset_at_start_is_named_and_nothing_starts() {
    // Built, not validated: the variable is unset by the time it starts.
    let config = ServerConfig::new(["/bin/true"]).with_env("T", "${SPEAR_TEST_NEVER_SET_46}");
    let err = ServerProcess::spawn(&config, Path::new("/"))
        .await
        .expect_err("cannot start");
    assert!(
        matches!(&err, Failure::Start(r) if r == r#"cannot start `/bin/true`: the value of "T" in `env` names ${SPEAR_TEST_NEVER_SET_46}, which is not set in this environment"#),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_base_dir_that_is_gone_is_said_before_the_spawn() {
    let err = ServerProcess::spawn(&config(&["srv"], &[]), Path::new("/opt/caps"))
        .await
        .expect_err("cannot start");
    assert!(
        matches!(&err, Failure::Start(r) if r == "cannot start `srv`: its working folder /opt/caps (the capabilities file's) is not a folder that exists"),
        "{err:?}"
    );
}

/// Issue 42.4: the stop is driven by the leader's exit: a group that
/// ignores its stdin gets SIGTERM after the grace, the rest of it SIGKILL,
/// and the leader is reaped before stop returns.
#[tokio::test]
async fn stop_terminates_a_group_that_ignores_its_stdin() {
    let (process, pipes, _stdout) = ServerProcess::spawn(
        &config(&["sh", "-c", "sleep 30 & sleep 30; wait"], &[]),
        Path::new("/"),
    )
    .await
    .expect("spawned");
    drop(pipes);
    let started = Instant::now();
    process
        .stop(Duration::from_millis(100), Duration::from_secs(2))
        .await;
    assert!(reaped_within(process.pid(), Duration::ZERO), "not reaped");
    let status = process.status().expect("ended");
    assert_eq!(status.to_string(), "signal: 15 (SIGTERM)");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// What the start of `program` writes on stdout, to its end.
async fn started_output(
    program: &crate::program::Program,
    args: &[String],
    env: &crate::program::Env,
) -> String {
    use std::io::Read;
    let exec = super::spawn::Exec::new(program, args, env.clone()).expect("exec");
    let (_leader, [_, stdout, _]) = super::on_spawner_thread(exec)
        .await
        .expect("the start runs it");
    let mut out = String::new();
    std::fs::File::from(stdout)
        .read_to_string(&mut out)
        .expect("stdout");
    out
}

/// Issue 42.10: the start and the kind's `check` resolve a program with one
/// resolver. With no `PATH` of ours, a bare name is found where execvp(3)
/// looks: what the check passes, the start runs, and what it refuses, the
/// start refuses in the same words.
#[tokio::test]
async fn with_no_path_of_ours_the_check_and_the_start_agree() {
    use crate::program::{Program, prepare};
    let config = config(&["sh", "-c", "echo ran"], &[]);
    let (program, env) = prepare(&config, Path::new("/"), |_| None).expect("prepared");
    assert!(program.runnable().is_ok(), "{program:?}");
    assert_eq!(
        started_output(&program, &config.command[1..], &env).await,
        "ran\n"
    );
    let missing = Program::resolve("spear-no-such-server", Path::new("/"), &env);
    let checked = missing.runnable().expect_err("refused");
    let exec = super::spawn::Exec::new(&missing, &[], env).expect("exec");
    let started = super::on_spawner_thread(exec).await.expect_err("refused");
    assert_eq!(
        missing.cannot_start(&checked),
        missing.cannot_start(&started)
    );
}

/// However much a server writes on stderr, the last `STDERR_KEPT` bytes
/// are what its errors carry.
#[tokio::test]
async fn only_the_last_bytes_of_stderr_are_kept() {
    let script = "head -c 300000 /dev/zero | tr '\\0' x >&2; printf end >&2";
    let (process, _stdin, _stdout) =
        ServerProcess::spawn(&config(&["sh", "-c", script], &[]), Path::new("/"))
            .await
            .expect("spawned");
    let _ = process.last_words(Duration::from_secs(10)).await;
    let tail = process.stderr_tail();
    assert_eq!(tail.len(), super::STDERR_KEPT);
    assert!(tail.ends_with("xxend"), "{}", &tail[tail.len() - 10..]);
}

/// Issue 42.10: `check` and the start agree where execvp(3)'s rules are
/// fine-grained: a relative `PATH` entry is taken from the folder the
/// server runs in (the base), and an error other than "not there" or
/// "not allowed" (a symbolic link loop) ends the search for both.
#[tokio::test]
async fn the_check_and_the_start_agree_on_relative_entries_and_search_errors() {
    use crate::program::prepare;
    let base = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(base.path().join("bin")).expect("bin");
    let srv = base.path().join("bin/srv");
    std::fs::write(&srv, "#!/bin/sh\necho ran\n").expect("script");
    std::fs::set_permissions(&srv, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let relative = config(&["srv"], &[("PATH", "bin")]);
    let (program, env) = prepare(&relative, base.path(), |_| None).expect("prepared");
    assert!(program.runnable().is_ok(), "{program:?}");
    assert_eq!(started_output(&program, &[], &env).await, "ran\n");

    let looped = base.path().join("loop");
    std::os::unix::fs::symlink(&looped, &looped).expect("a link to itself");
    let path = format!("{}:/usr/bin:/bin", looped.display());
    let behind_a_loop = config(&["sh"], &[("PATH", &path)]);
    let (program, env) = prepare(&behind_a_loop, base.path(), |_| None).expect("prepared");
    let checked = program.runnable().expect_err("the loop ends the search");
    assert_eq!(checked.raw_os_error(), Some(libc::ELOOP));
    let exec = super::spawn::Exec::new(&program, &[], env).expect("exec");
    let started = super::on_spawner_thread(exec).await.expect_err("refused");
    assert_eq!(
        program.cannot_start(&checked),
        program.cannot_start(&started)
    );
}

/// A spawner thread that could not be started (threads at a limit, which
/// passes) is not remembered as gone: the next start starts it.
#[test]
fn a_spawner_thread_that_could_not_start_is_started_by_the_next_job() {
    let spawner = std::sync::Mutex::new(None);
    let at_a_limit = |_| Err::<(), _>(std::io::Error::other("at a limit"));
    let refused = super::send_to(&spawner, Box::new(|| {}), at_a_limit).expect_err("no thread");
    assert_eq!(
        refused.to_string(),
        "the spawner thread could not be started: at a limit"
    );
    let (done, ran) = std::sync::mpsc::channel();
    let start = |run| std::thread::Builder::new().spawn(run);
    let job = Box::new(move || {
        let _ = done.send(());
    });
    super::send_to(&spawner, job, start).expect("started now");
    ran.recv_timeout(Duration::from_secs(10))
        .expect("the job ran");
}
