//! The server's process as this process's child, held by its pidfd (Linux
//! 5.4 or later): its exit is awaited through the runtime's reactor, with
//! no thread per child.
//!
//! It is reaped last, only once its group was sent SIGKILL: the kernel
//! gives no pid away while a process with it is unreaped, so until then its
//! group id names its group and nothing else, and no signal of ours can
//! reach a group that took the id since.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;
use rustix::process::{
    Pid, Signal, WaitId, WaitIdOptions, WaitIdStatus, WaitOptions, kill_process_group,
    pidfd_send_signal, waitid, waitpid,
};
use tokio::io::unix::AsyncFd;
use tokio::sync::{Notify, watch};

/// How long a leader sent SIGKILL is waited for where nothing can await
/// it (its runtime is gone): moments, unless the kernel holds it.
const KILLED_WAIT: Duration = Duration::from_secs(1);

/// A child of this process, the leader of its own process group.
#[derive(Debug)]
pub(super) struct Leader {
    pid: Pid,
    pidfd: OwnedFd,
    state: Mutex<State>,
    /// Whether the leader has ended, once that is seen.
    ended: watch::Sender<bool>,
    /// Wakes the watcher when the group was sent SIGKILL.
    killed: Notify,
}

#[derive(Debug, Default)]
struct State {
    /// The group was sent SIGKILL: the leader may be reaped.
    killed: bool,
    /// Reaped (or taken by someone else's `waitpid(-1)`): its pid is no
    /// longer ours to signal.
    reaped: bool,
    /// How it ended, once seen.
    status: Option<ExitStatus>,
}

impl AsRawFd for Leader {
    fn as_raw_fd(&self) -> RawFd {
        self.pidfd.as_raw_fd()
    }
}

impl Leader {
    /// The child `pid` behind `pidfd`.
    ///
    /// # Errors
    /// When the kernel cannot wait on a pidfd (before Linux 5.4): the child
    /// is killed and reaped.
    pub(super) fn new(pid: Pid, pidfd: OwnedFd) -> io::Result<Self> {
        let leader = Leader {
            pid,
            pidfd,
            state: Mutex::default(),
            ended: watch::Sender::new(false),
            killed: Notify::new(),
        };
        if let Err(Errno::INVAL) = leader.wait(WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT) {
            let _ = pidfd_send_signal(&leader.pidfd, Signal::KILL);
            let _ = waitpid(Some(pid), WaitOptions::empty());
            leader.lock().reaped = true;
            return Err(io::Error::other(
                "waiting for a process through its pidfd needs Linux 5.4 or later",
            ));
        }
        Ok(leader)
    }

    /// The leader's pid, which is also its process group id.
    pub(super) fn pid(&self) -> Pid {
        self.pid
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `waitid` on the pidfd for an exit, with `flags`, again when interrupted.
    fn wait(&self, flags: WaitIdOptions) -> rustix::io::Result<Option<ExitStatus>> {
        loop {
            match waitid(
                WaitId::PidFd(self.pidfd.as_fd()),
                WaitIdOptions::EXITED | flags,
            ) {
                Err(Errno::INTR) => continue,
                other => return other.map(|s| s.map(exit_status)),
            }
        }
    }

    /// Sends `signal` to the leader's group, unless the leader was reaped.
    pub(super) fn signal_group(&self, signal: Signal) {
        let mut state = self.lock();
        if !state.reaped {
            let _ = kill_process_group(self.pid, signal);
            if signal == Signal::KILL {
                state.killed = true;
                self.killed.notify_one();
            }
        }
    }

    /// How the leader ended, if it has (it is not reaped for asking).
    pub(super) fn status(&self) -> Option<ExitStatus> {
        let mut state = self.lock();
        if state.status.is_none() && !state.reaped {
            state.status = self
                .wait(WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT)
                .ok()
                .flatten();
        }
        state.status
    }

    /// Waits until the leader is seen to end.
    pub(super) async fn exited(&self) {
        let _ = self.ended.subscribe().wait_for(|ended| *ended).await;
    }

    /// Reaps the leader if it ended and its group was sent SIGKILL; whether
    /// it is reaped.
    pub(super) fn reap(&self) -> bool {
        let mut state = self.lock();
        if state.killed && !state.reaped {
            match self.wait(WaitIdOptions::NOHANG) {
                Ok(None) => return false,
                Ok(Some(status)) => (state.reaped, state.status) = (true, Some(status)),
                Err(_) => state.reaped = true,
            }
            self.ended.send_replace(true);
        }
        state.reaped
    }

    /// Ends the group and reaps the leader here and now, where nothing can
    /// await it: waits a moment at most for the SIGKILL to land.
    fn end_now(&self) {
        self.signal_group(Signal::KILL);
        if !self.reap() {
            let timeout = Timespec::try_from(KILLED_WAIT).unwrap_or_default();
            let _ = poll(
                &mut [PollFd::new(&self.pidfd, PollFlags::IN)],
                Some(&timeout),
            );
            self.reap();
        }
    }
}

impl Drop for Leader {
    fn drop(&mut self) {
        // Only where no watcher ran (a start that failed half way).
        if !self.lock().reaped {
            self.end_now();
        }
    }
}

/// `leader`'s pidfd, registered with the current runtime for [`watch`].
#[allow(unsafe_code)]
pub(super) fn register(leader: &Arc<Leader>) -> io::Result<AsyncFd<Arc<Leader>>> {
    let interest = tokio::io::Interest::READABLE;
    // SAFETY: the descriptor is the leader's pidfd, an `OwnedFd` it never
    // replaces, open as long as the leader lives, which the `Arc` held by
    // the `AsyncFd` guarantees.
    Ok(unsafe { AsyncFd::register_with_interest(Arc::clone(leader), interest) }?)
}

/// Watches the leader through its registered pidfd: publishes its exit,
/// then reaps it once its group was sent SIGKILL. Dropped before that (its
/// runtime shut down, polled or not), it ends the group and reaps the
/// leader at once, as tokio's `kill_on_drop` does.
pub(super) fn watch(pidfd: AsyncFd<Arc<Leader>>) -> impl Future<Output = ()> + Send {
    let unwatched = Unwatched(Some(Arc::clone(pidfd.get_ref())));
    async move {
        // Moved in whole, so that dropping the future drops it.
        let mut unwatched = unwatched;
        let leader = pidfd.get_ref();
        while leader.status().is_none() {
            // A pidfd is readable once its process has ended.
            match pidfd.readable().await {
                Ok(mut ready) => ready.clear_ready(),
                Err(_) => return,
            }
        }
        leader.ended.send_replace(true);
        while !leader.lock().killed {
            leader.killed.notified().await;
        }
        leader.reap();
        unwatched.0 = None;
    }
}

struct Unwatched(Option<Arc<Leader>>);

impl Drop for Unwatched {
    fn drop(&mut self) {
        if let Some(leader) = &self.0 {
            leader.end_now();
        }
    }
}

fn exit_status(status: WaitIdStatus) -> ExitStatus {
    match status.exit_status() {
        Some(code) => ExitStatus::from_raw((code & 0xff) << 8),
        None => ExitStatus::from_raw(
            status.terminating_signal().unwrap_or(0) & 0x7f
                | if status.dumped() { 0x80 } else { 0 },
        ),
    }
}
