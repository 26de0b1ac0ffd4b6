//! The server's process: start, stderr ring, the end of its whole group.
//!
//! The server runs in its own process group so that stop and drop reach what
//! it started (`npx`, `uvx`, `sh -c`). Its parent-death signal fires when the
//! *thread* that created it ends, so every server is started by one spawner
//! thread that lives as long as the process. The server's own children,
//! orphaned when it is killed, are out of reach
//! (`testkit/tests/parent_death.rs`).

mod child;
mod spawn;

use std::collections::VecDeque;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rustix::process::Signal;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::sync::watch;
use tokio::time::{Instant, timeout, timeout_at};

use crate::config::ServerConfig;
use crate::error::Failure;
use crate::program::{Program, environment};
use child::Leader;

/// How much of the server's stderr is kept for error messages.
pub const STDERR_KEPT: usize = 64 * 1024;

/// How long a server sent SIGKILL is waited for before stop gives up on
/// reaping it (a process stuck in the kernel); its watcher reaps it later.
const KILLED_WAIT: Duration = Duration::from_secs(5);

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
    leader: Arc<Leader>,
    stderr: Arc<StderrRing>,
    stderr_done: watch::Receiver<bool>,
}

/// The pipes the connection speaks over, registered with the runtime.
#[derive(Debug)]
pub(crate) struct Pipes {
    pub(crate) stdin: pipe::Sender,
    pub(crate) stdout: pipe::Receiver,
}

impl ServerProcess {
    /// Starts `config`'s command with only `PATH`, `HOME` and its `env`,
    /// its program found as [`Program::resolve`] says, from `base_dir`.
    pub(crate) async fn spawn(
        config: &ServerConfig,
        base_dir: &Path,
    ) -> Result<(Self, Pipes), Failure> {
        let Some(name) = config.command.first() else {
            return Err(Failure::Start("the command is empty".into()));
        };
        let env = environment(config, |name| std::env::var_os(name));
        let program = Program::resolve(name, base_dir, &env);
        let cannot_start = |e: std::io::Error| Failure::Start(program.cannot_start(&e));
        // The pipes and the tasks below belong to the caller's runtime.
        tokio::runtime::Handle::try_current()
            .map_err(|e| cannot_start(std::io::Error::other(e)))?;
        let exec = spawn::Exec::new(&program, &config.command[1..], env).map_err(cannot_start)?;
        let spawned = on_spawner_thread(exec).await.map_err(cannot_start)?;
        let leader = Arc::new(spawned.leader);
        // On an error `leader` is dropped here: killed and reaped.
        let registered = (|| {
            Ok::<_, std::io::Error>((
                pipe::Sender::from_owned_fd(spawned.stdin)?,
                pipe::Receiver::from_owned_fd(spawned.stdout)?,
                pipe::Receiver::from_owned_fd(spawned.stderr)?,
                child::register(&leader)?,
            ))
        })();
        let (stdin, stdout, mut stderr, pidfd) = registered
            .map_err(|e| Failure::Start(format!("cannot watch the server's process: {e}")))?;
        let ring = Arc::new(StderrRing::default());
        let (done, stderr_done) = watch::channel(false);
        let sink = Arc::clone(&ring);
        // Drained all the time: a server blocked on a full stderr pipe would
        // stop answering on stdout.
        tokio::spawn(async move {
            let mut chunk = vec![0; 4 * 1024];
            while let Ok(n @ 1..) = stderr.read(&mut chunk).await {
                sink.push(&chunk[..n]);
            }
            let _ = done.send(true);
        });
        tokio::spawn(child::watch(pidfd));
        let pid = leader.pid().as_raw_nonzero().get();
        tracing::debug!(target: "spear_mcp_stdio", pid, program = %program.shown.display(), "server spawned");
        let process = ServerProcess {
            leader,
            stderr: ring,
            stderr_done,
        };
        Ok((process, Pipes { stdin, stdout }))
    }

    /// The server's pid, which is also its process group id.
    pub(crate) fn pid(&self) -> u32 {
        self.leader.pid().as_raw_nonzero().get().unsigned_abs()
    }

    /// What the server wrote to stderr last.
    pub(crate) fn stderr_tail(&self) -> String {
        self.stderr.tail()
    }

    /// How the server's own process ended, if it has.
    pub(crate) fn status(&self) -> Option<ExitStatus> {
        self.leader.status()
    }

    /// Waits up to `within` for the server's process to end and its stderr
    /// to reach its end (the last words of a server that is dying come a
    /// moment after its stdout closed); how it ended, if it did.
    pub(crate) async fn last_words(&self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        let _ = timeout_at(deadline, self.leader.exited()).await;
        self.stderr_ended(deadline).await;
        self.status()
    }

    /// Waits until `deadline` at most for stderr to reach its end.
    async fn stderr_ended(&self, deadline: Instant) {
        let mut done = self.stderr_done.clone();
        let _ = timeout_at(deadline, done.wait_for(|done| *done)).await;
    }

    /// Kills the server's group at once (SIGKILL); the leader is reaped as
    /// soon as it has ended.
    pub(crate) fn kill(&self) {
        self.leader.signal_group(Signal::KILL);
        self.leader.reap();
    }

    /// Kills the server's group and waits until `deadline` at most for its
    /// end: the leader reaped, stderr at its end.
    pub(crate) async fn end(&self, deadline: Instant) {
        self.kill();
        let _ = timeout_at(deadline, self.leader.exited()).await;
        self.leader.reap();
        self.stderr_ended(deadline).await;
    }

    /// Ends the server after its stdin was closed: waits `grace` for it to
    /// leave, asks its group to terminate, waits `term_grace` for the
    /// server, kills its group, and reaps the server.
    pub(crate) async fn stop(&self, grace: Duration, term_grace: Duration) {
        let leader = &self.leader;
        let left = timeout(grace, leader.exited()).await.is_ok();
        leader.signal_group(Signal::TERM);
        let ended = left || timeout(term_grace, leader.exited()).await.is_ok();
        leader.signal_group(Signal::KILL);
        let _ = timeout(KILLED_WAIT, leader.exited()).await;
        leader.reap();
        let how = match (left, ended) {
            (true, _) => "left when its stdin closed",
            (false, true) => "ended by SIGTERM",
            (false, false) => "killed by SIGKILL",
        };
        let status = self.status().map(|s| s.to_string());
        tracing::info!(target: "spear_mcp_stdio", pid = self.pid(), how, status, "server stopped");
        tracing::debug!(target: "spear_mcp_stdio", pid = self.pid(), stderr = ?self.stderr_tail(), "server stderr tail");
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // Synchronous on purpose: no task may be spawned here, and the
        // runtime may be gone. The watcher reaps the leader once it ends.
        self.kill();
    }
}

/// A job for the spawner thread.
type Job = Box<dyn FnOnce() + Send>;

/// Spawns `exec` from the spawner thread (see the module's documentation),
/// awaited without blocking.
async fn on_spawner_thread(exec: spawn::Exec) -> std::io::Result<spawn::Spawned> {
    let (done, spawned) = tokio::sync::oneshot::channel();
    spawner(Box::new(move || {
        let _ = done.send(spawn::spawn(&exec));
    }))?;
    spawned
        .await
        .map_err(|_| std::io::Error::other("the spawn failed on the spawner thread"))?
}

/// Runs `job` on the spawner thread, started on first use. A job that
/// panics ends itself only: the thread, and with it the parent-death
/// signal of every server it started, lives on.
fn spawner(job: Job) -> std::io::Result<()> {
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
}
