//! The server's process: start, stderr ring, shutdown of the whole group.
//!
//! The server runs in its own process group so that stop and drop reach what
//! it started (`npx`, `uvx`, `sh -c`). Its parent-death signal fires when the
//! *thread* that created it ends, so every server is started by a thread that
//! lives as long as the process: the main thread, else one spawner thread.
//! The server's own children, orphaned when it is killed, are out of reach
//! (`testkit/tests/parent_death.rs`).

mod child;
mod spawn;

use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::sync::watch;
use tokio::time::{Instant, sleep, timeout};

use crate::config::ServerConfig;
use crate::error::Failure;

/// How much of the server's stderr is kept for error messages.
pub const STDERR_KEPT: usize = 64 * 1024;

/// The last bytes a server wrote to stderr.
#[derive(Debug, Default)]
pub(crate) struct StderrRing {
    bytes: Mutex<VecDeque<u8>>,
}

impl StderrRing {
    fn push(&self, chunk: &[u8]) {
        let mut bytes = self.bytes.lock().unwrap_or_else(|p| p.into_inner());
        let chunk = &chunk[chunk.len().saturating_sub(STDERR_KEPT)..];
        let overflow = (bytes.len() + chunk.len()).saturating_sub(STDERR_KEPT);
        bytes.drain(..overflow);
        bytes.extend(chunk);
    }

    /// What is kept, as text.
    pub(crate) fn tail(&self) -> String {
        let mut bytes = self.bytes.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(bytes.make_contiguous()).into_owned()
    }
}

/// A running server. Dropping it kills its process group.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    pgid: Pid,
    exit: watch::Receiver<Option<ExitStatus>>,
    stderr: Arc<StderrRing>,
    stderr_done: watch::Receiver<bool>,
    /// Set once shutdown has ended the group, so that drop does not signal a
    /// process group id the system may since have given to someone else.
    ended: AtomicBool,
}

/// The pipes the connection speaks over, registered with the runtime.
#[derive(Debug)]
pub(crate) struct Pipes {
    pub(crate) stdin: pipe::Sender,
    pub(crate) stdout: pipe::Receiver,
}

impl ServerProcess {
    /// Starts `config`'s command with only `PATH`, `HOME` and its `env`.
    ///
    /// A relative program path with a `/` in it is taken from `base_dir`, the
    /// capabilities file's folder; a bare name is looked up in `PATH`.
    pub(crate) async fn spawn(
        config: &ServerConfig,
        base_dir: &Path,
    ) -> Result<(Self, Pipes), Failure> {
        let Some(program) = config.command.first() else {
            return Err(Failure::Start("the command is empty".into()));
        };
        // The pipes and the tasks below belong to the caller's runtime.
        tokio::runtime::Handle::try_current()
            .map_err(|e| Failure::Start(format!("cannot start `{program}`: {e}")))?;
        let program = Path::new(program);
        let program = if program.is_relative() && program.components().count() > 1 {
            base_dir.join(program)
        } else {
            program.to_path_buf()
        };
        let cannot_start = |e: std::io::Error| {
            Failure::Start(format!("cannot start `{}`: {e}", program.display()))
        };
        // Only PATH and HOME of ours; the configured variables win.
        let mut env: BTreeMap<OsString, OsString> = ["PATH", "HOME"]
            .into_iter()
            .filter_map(|name| Some((name.into(), std::env::var_os(name)?)))
            .collect();
        env.extend(config.env.iter().map(|(k, v)| (k.into(), v.into())));
        let exec = spawn::Exec::new(
            &program,
            config.command[1..].iter().map(String::as_str),
            env,
        )
        .map_err(cannot_start)?;
        let spawned = spawn_on_spawner_thread(exec).await.map_err(cannot_start)?;
        let pid = spawned.child.pid();
        let mut child = spawned.child;
        let pipes = (|| {
            Ok::<_, std::io::Error>((
                pipe::Sender::from_owned_fd(spawned.stdin)?,
                pipe::Receiver::from_owned_fd(spawned.stdout)?,
                pipe::Receiver::from_owned_fd(spawned.stderr)?,
            ))
        })();
        // On an error `child` is dropped here: killed and reaped.
        let (stdin, stdout, mut stderr) =
            pipes.map_err(|e| Failure::Start(format!("cannot watch the server's pipes: {e}")))?;
        let ring = Arc::new(StderrRing::default());
        let (done_tx, stderr_done) = watch::channel(false);
        let sink = Arc::clone(&ring);
        // Drained all the time: a server blocked on a full stderr pipe would
        // stop answering on stdout.
        tokio::spawn(async move {
            let mut chunk = vec![0; 16 * 1024];
            while let Ok(n @ 1..) = stderr.read(&mut chunk).await {
                sink.push(&chunk[..n]);
            }
            let _ = done_tx.send(true);
        });
        let (exit_tx, exit) = watch::channel(None);
        // Owns the child and reaps it as soon as it ends.
        tokio::spawn(async move {
            if let Some(status) = child.wait().await {
                let _ = exit_tx.send(Some(status));
            }
        });
        tracing::debug!(target: "spear_mcp_stdio", pid = pid.as_raw_nonzero().get(), program = %program.display(), "server spawned");
        let process = ServerProcess {
            pgid: pid,
            exit,
            stderr: ring,
            stderr_done,
            ended: AtomicBool::new(false),
        };
        Ok((process, Pipes { stdin, stdout }))
    }

    /// The server's pid, which is also its process group id.
    pub(crate) fn pid(&self) -> u32 {
        self.pgid.as_raw_nonzero().get() as u32
    }

    /// What the server wrote to stderr last.
    pub(crate) fn stderr_tail(&self) -> String {
        self.stderr.tail()
    }

    /// How the server's own process ended, waiting up to `within` for it.
    pub(crate) async fn exit_status(&self, within: Duration) -> Option<ExitStatus> {
        let mut exit = self.exit.clone();
        let status = timeout(within, exit.wait_for(Option::is_some)).await;
        status.ok()?.ok().and_then(|s| *s)
    }

    /// Waits up to `within` for stderr to reach its end, so that an error
    /// about a dying server carries its last words.
    pub(crate) async fn stderr_settled(&self, within: Duration) {
        let mut done = self.stderr_done.clone();
        let _ = timeout(within, done.wait_for(|d| *d)).await;
    }

    /// Ends the server after its stdin was closed: waits `grace` for it to
    /// leave, signals the group to terminate, waits `term_grace`, kills what
    /// is left, and reaps the server.
    pub(crate) async fn stop(&self, grace: Duration, term_grace: Duration) {
        self.exit_status(grace).await;
        let mut how = "left when its stdin closed";
        if self.group_alive() {
            how = "ended by SIGTERM";
            let _ = kill_process_group(self.pgid, Signal::TERM);
            let deadline = Instant::now() + term_grace;
            while self.group_alive() && Instant::now() < deadline {
                sleep(Duration::from_millis(10)).await;
            }
            if self.group_alive() {
                how = "killed by SIGKILL";
                let _ = kill_process_group(self.pgid, Signal::KILL);
            }
        }
        // The reaper task collects the server; wait for it so no zombie is
        // left behind once stop returns.
        let status = self.exit_status(Duration::from_secs(5)).await;
        self.ended.store(true, Ordering::SeqCst);
        let status = status.map(|s| s.to_string());
        tracing::info!(target: "spear_mcp_stdio", pid = self.pid(), how, status, "server stopped");
        tracing::debug!(target: "spear_mcp_stdio", pid = self.pid(), stderr = ?self.stderr_tail(), "server stderr tail");
    }

    fn group_alive(&self) -> bool {
        test_kill_process_group(self.pgid).is_ok() && live_members(self.pgid).is_none_or(|n| n > 0)
    }
}

/// A job for the spawner thread.
type Job = Box<dyn FnOnce() + Send>;

/// Spawns `exec` from a thread that lives as long as the process (see the
/// module's documentation): the main thread itself (which ends only with
/// the process), else the spawner thread, awaited without blocking.
async fn spawn_on_spawner_thread(exec: spawn::Exec) -> std::io::Result<spawn::Spawned> {
    if spawn::on_main_thread() {
        return spawn::spawn(&exec);
    }
    let (done, spawned) = tokio::sync::oneshot::channel();
    on_spawner_thread(Box::new(move || {
        let _ = done.send(spawn::spawn(&exec));
    }))?;
    spawned
        .await
        .map_err(|_| std::io::Error::other("the spawn failed on the spawner thread"))?
}

/// Runs `job` on the spawner thread, started on first use. A job that
/// panics ends itself only: the thread, and with it the parent-death
/// signal of every server it started, lives on.
fn on_spawner_thread(job: Job) -> std::io::Result<()> {
    static SPAWNER: OnceLock<Option<std::sync::mpsc::Sender<Job>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("spear-spawner".into())
            .spawn(move || {
                for job in queue {
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                }
            })
            .ok()?;
        Some(jobs)
    });
    spawner
        .as_ref()
        .ok_or_else(|| std::io::Error::other("the spawner thread could not be started"))?
        .send(job)
        .map_err(|_| std::io::Error::other("the spawner thread has ended"))
}

/// How many members of group `pgid` have not ended, where `/proc` says: an
/// unreaped orphan (pid 1 may never reap it) still makes the group exist for
/// `kill`, and counting it made every such shutdown wait its whole grace.
fn live_members(pgid: Pid) -> Option<usize> {
    let pgid = pgid.as_raw_nonzero().get();
    let dir = std::fs::read_dir("/proc").ok()?;
    let live = dir
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // The command name may hold spaces and parentheses: split after the last ')'.
            let mut fields = stat
                .rsplit_once(')')
                .map(|(_, r)| r)
                .unwrap_or("")
                .split_whitespace();
            let state = fields.next();
            let group = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
            group == Some(pgid) && state != Some("Z") && state != Some("X")
        })
        .count();
    Some(live)
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // Synchronous on purpose: no task may be spawned here, and the
        // runtime may be gone. The reaper task (or tokio's orphan queue, if
        // the runtime is shutting down) collects the leader.
        if !self.ended.load(Ordering::SeqCst) {
            let _ = kill_process_group(self.pgid, Signal::KILL);
        }
    }
}

#[cfg(test)]
mod spawn_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_only_the_last_bytes() {
        let ring = StderrRing::default();
        ring.push(b"hello ");
        ring.push(b"world");
        assert_eq!(ring.tail(), "hello world");
        ring.push(&vec![b'x'; STDERR_KEPT - 3]);
        let tail = ring.tail();
        assert_eq!(tail.len(), STDERR_KEPT);
        assert!(tail.starts_with("rldxxx"), "{}", &tail[..10]);
        ring.push(&vec![b'y'; 3 * STDERR_KEPT]);
        assert_eq!(ring.tail(), "y".repeat(STDERR_KEPT));
    }

    fn config(command: &[&str]) -> ServerConfig {
        let Some(serde_json::Value::Object(settings)) =
            Some(serde_json::json!({ "command": command }))
        else {
            unreachable!()
        };
        ServerConfig::from_settings(&settings).expect("valid")
    }

    #[tokio::test]
    async fn a_missing_program_names_the_command_and_the_os_error() {
        let err = ServerProcess::spawn(&config(&["/nonexistent/server"]), Path::new("/"))
            .await
            .expect_err("cannot start");
        let Failure::Start(reason) = err else {
            panic!("{err:?}")
        };
        assert!(
            reason.starts_with("cannot start `/nonexistent/server`: No such file or directory"),
            "{reason}"
        );
    }

    #[tokio::test]
    async fn a_relative_program_path_is_taken_from_the_base_dir() {
        let err = ServerProcess::spawn(&config(&["bin/srv"]), Path::new("/opt/caps"))
            .await
            .expect_err("cannot start");
        assert!(
            matches!(&err, Failure::Start(r) if r.starts_with("cannot start `/opt/caps/bin/srv`")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn stop_terminates_a_group_that_ignores_its_stdin() {
        let (process, pipes) = ServerProcess::spawn(
            &config(&["sh", "-c", "sleep 30 & sleep 30; wait"]),
            Path::new("/"),
        )
        .await
        .expect("spawned");
        drop(pipes);
        let started = Instant::now();
        process
            .stop(Duration::from_millis(100), Duration::from_secs(2))
            .await;
        assert!(!process.group_alive() || only_zombies(process.pid()));
        let status = process.exit_status(Duration::ZERO).await.expect("reaped");
        assert_eq!(status.to_string(), "signal: 15 (SIGTERM)");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    /// Orphans go to pid 1, which in some containers never reaps them:
    /// a zombie there has ended, it is just not collected.
    fn only_zombies(pgid: u32) -> bool {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return false;
        };
        dir.flatten().all(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return true;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.get(2) != Some(&pgid.to_string().as_str()) || fields[0] == "Z"
        })
    }
}
