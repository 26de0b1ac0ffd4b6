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

use std::io;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use rustix::process::Signal;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::sync::{oneshot, watch};
use tokio::time::{Instant, timeout, timeout_at};

use crate::config::ServerConfig;
use crate::error::Failure;
use crate::program::prepare;
use child::Leader;

/// How much of the server's stderr is kept for error messages.
pub const STDERR_KEPT: usize = 64 * 1024;

/// A running server. Dropping it kills its process group.
#[derive(Debug)]
pub(crate) struct ServerProcess {
    leader: Arc<Leader>,
    /// The last [`STDERR_KEPT`] bytes of stderr (and up to as many before).
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_done: watch::Receiver<bool>,
}

impl ServerProcess {
    /// Starts `config`'s command (with only `PATH`, `HOME` and its `env`,
    /// each `${NAME}` in it read from our environment now) in `base_dir`,
    /// the capabilities file's folder: wherever the caller runs, the server
    /// runs there. Returns it with its stdin and stdout.
    pub(crate) async fn spawn(
        config: &ServerConfig,
        base_dir: &Path,
    ) -> Result<(Self, pipe::Sender, pipe::Receiver), Failure> {
        let prepared = prepare(config, base_dir, |var| std::env::var_os(var));
        let (program, env) = prepared.map_err(Failure::Start)?;
        let cannot_start = |e| Failure::Start(program.cannot_start(&e));
        // The pipes and the tasks below belong to the caller's runtime.
        tokio::runtime::Handle::try_current().map_err(|e| cannot_start(io::Error::other(e)))?;
        let exec = spawn::Exec::new(&program, &config.command[1..], env).map_err(cannot_start)?;
        let (leader, [stdin, stdout, err]) = on_spawner_thread(exec).await.map_err(cannot_start)?;
        // On an error `leader` is dropped here: killed and reaped.
        let leader = Arc::new(leader);
        let unwatched = |e| Failure::Start(format!("cannot watch the server's process: {e}"));
        let stdin = pipe::Sender::from_owned_fd(stdin).map_err(unwatched)?;
        let stdout = pipe::Receiver::from_owned_fd(stdout).map_err(unwatched)?;
        let mut err = pipe::Receiver::from_owned_fd(err).map_err(unwatched)?;
        let watch = child::watch(&leader).map_err(unwatched)?;
        let (stderr, (done, stderr_done)) = (Arc::default(), watch::channel(false));
        let sink: Arc<Mutex<Vec<u8>>> = Arc::clone(&stderr);
        // Drained all the time: a full stderr pipe would block the server.
        tokio::spawn(async move {
            let mut chunk = vec![0; 4 * 1024];
            while let Ok(n @ 1..) = err.read(&mut chunk).await {
                let mut kept = sink.lock().unwrap_or_else(|p| p.into_inner());
                kept.extend_from_slice(&chunk[..n]);
                // Cut seldom: from twice what is kept back to what is kept.
                if let Some(cut) = kept.len().checked_sub(2 * STDERR_KEPT) {
                    kept.drain(..cut + STDERR_KEPT);
                }
            }
            let _ = done.send(true);
        });
        tokio::spawn(watch);
        let (pid, shown) = (leader.pid.as_raw_nonzero().get(), program.shown.display());
        tracing::debug!(target: "spear_mcp_stdio", pid, program = %shown, "server spawned");
        Ok((
            ServerProcess {
                leader,
                stderr,
                stderr_done,
            },
            stdin,
            stdout,
        ))
    }

    pub(crate) fn pid(&self) -> u32 {
        self.leader.pid.as_raw_nonzero().get().unsigned_abs()
    }

    pub(crate) fn stderr_tail(&self) -> String {
        let kept = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&kept[kept.len().saturating_sub(STDERR_KEPT)..]).into_owned()
    }

    pub(crate) fn status(&self) -> Option<ExitStatus> {
        self.leader.status()
    }

    /// Waits up to `within` for the server and its stderr to end; how it ended.
    pub(crate) async fn last_words(&self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        let _ = timeout_at(deadline, self.leader.exited()).await;
        let _ = timeout_at(deadline, self.stderr_done.clone().wait_for(|done| *done)).await;
        self.status()
    }

    pub(crate) async fn end(&self, within: Duration) {
        self.leader.signal_group(Signal::KILL);
        self.last_words(within).await;
    }

    /// Ends the server after its stdin was closed: `grace` for it to leave,
    /// SIGTERM to its group, `term_grace`, SIGKILL, reaped (awaited 5 s at
    /// most: one stuck in the kernel is reaped when it ends).
    pub(crate) async fn stop(&self, grace: Duration, term_grace: Duration) {
        let leader = &self.leader;
        let left = timeout(grace, leader.exited()).await.is_ok();
        leader.signal_group(Signal::TERM);
        let ended = left || timeout(term_grace, leader.exited()).await.is_ok();
        leader.signal_group(Signal::KILL);
        let _ = timeout(Duration::from_secs(5), leader.exited()).await;
        let how = match (left, ended) {
            (true, _) => "left when its stdin closed",
            (false, true) => "ended by SIGTERM",
            (false, false) => "killed by SIGKILL",
        };
        let (pid, status) = (self.pid(), self.status().map(|s| s.to_string()));
        tracing::info!(target: "spear_mcp_stdio", pid, how, status, "server stopped");
        tracing::debug!(target: "spear_mcp_stdio", pid, stderr = ?self.stderr_tail(), "server stderr tail");
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // Synchronous: the runtime may be gone; the watcher reaps the leader.
        self.leader.signal_group(Signal::KILL);
    }
}

/// Spawns `exec` on the spawner thread, awaited without blocking.
async fn on_spawner_thread(exec: spawn::Exec) -> io::Result<(Leader, [std::os::fd::OwnedFd; 3])> {
    let (done, spawned) = oneshot::channel();
    spawner(Box::new(move || drop(done.send(spawn::spawn(&exec)))))?;
    let failed = || io::Error::other("the spawn failed on the spawner thread");
    spawned.await.map_err(|_| failed())?
}

/// Runs `job` on the spawner thread, started on first use; a job that panics
/// ends itself only (the parent-death signals are the thread's).
fn spawner(job: Job) -> io::Result<()> {
    static SPAWNER: Mutex<Option<mpsc::Sender<Job>>> = Mutex::new(None);
    let start = |run| {
        std::thread::Builder::new()
            .name("spear-spawner".into())
            .spawn(run)
    };
    send_to(&SPAWNER, job, start)
}

/// Sends `job` to the thread behind `spawner`, which `start` starts if there
/// is none yet: not kept when it cannot (threads at a limit), so that a later
/// start tries again.
fn send_to<T>(
    spawner: &Mutex<Option<mpsc::Sender<Job>>>,
    job: Job,
    start: impl FnOnce(Box<dyn FnOnce() + Send>) -> io::Result<T>,
) -> io::Result<()> {
    let mut jobs = spawner.lock().unwrap_or_else(|p| p.into_inner());
    if jobs.is_none() {
        let (sender, queue) = mpsc::channel::<Job>();
        let run = move || {
            for job in queue {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
        };
        let why = |e| io::Error::other(format!("the spawner thread could not be started: {e}"));
        start(Box::new(run)).map_err(why)?;
        *jobs = Some(sender);
    }
    let sent = jobs.as_ref().is_some_and(|jobs| jobs.send(job).is_ok());
    sent.then_some(())
        .ok_or_else(|| io::Error::other("the spawner thread has ended"))
}

/// A job for the spawner thread.
type Job = Box<dyn FnOnce() + Send>;

#[cfg(test)]
mod spawn_tests;
