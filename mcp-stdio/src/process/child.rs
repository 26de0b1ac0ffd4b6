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
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions as Wait, WaitIdStatus, WaitOptions};
use rustix::process::{kill_process_group, pidfd_send_signal, waitid, waitpid};
use tokio::io::unix::AsyncFd;
use tokio::sync::watch;

/// A child of this process, the leader of its own process group.
#[derive(Debug)]
pub(super) struct Leader {
    pub(super) pid: Pid,
    pidfd: OwnedFd,
    state: Mutex<State>,
    /// Set once the leader is seen to have ended.
    ended: watch::Sender<bool>,
}

#[derive(Debug, Default)]
struct State {
    /// The group was sent SIGKILL: the leader may be reaped.
    killed: bool,
    /// Reaped (or by someone else's `waitpid(-1)`): its pid is not ours.
    reaped: bool,
    status: Option<ExitStatus>,
}

impl AsRawFd for Leader {
    fn as_raw_fd(&self) -> RawFd {
        self.pidfd.as_raw_fd()
    }
}

impl Leader {
    /// The child behind `pidfd`; before Linux 5.4 (no waiting on a pidfd),
    /// an error, the child killed and reaped.
    pub(super) fn new(pid: Pid, pidfd: OwnedFd) -> io::Result<Self> {
        let leader = Leader {
            pid,
            pidfd,
            state: Mutex::default(),
            ended: watch::Sender::new(false),
        };
        let Err(Errno::INVAL) = leader.wait(Wait::NOWAIT) else {
            return Ok(leader);
        };
        let _ = pidfd_send_signal(&leader.pidfd, Signal::KILL);
        let _ = waitpid(Some(pid), WaitOptions::empty());
        leader.lock().reaped = true;
        let why = "waiting for a process through its pidfd needs Linux 5.4 or later";
        Err(io::Error::other(why))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `waitid` for an exit, never blocking (so never interrupted).
    fn wait(&self, flags: Wait) -> rustix::io::Result<Option<ExitStatus>> {
        let flags = Wait::EXITED | Wait::NOHANG | flags;
        Ok(waitid(WaitId::PidFd(self.pidfd.as_fd()), flags)?.map(exit_status))
    }

    /// Under the lock: whether the leader has ended (reaped if its group
    /// was sent SIGKILL), said to whoever waits once it has.
    fn update(&self, state: &mut State) {
        if state.reaped {
            return;
        }
        let reap = state.killed.then_some(Wait::empty());
        match self.wait(reap.unwrap_or(Wait::NOWAIT)) {
            Ok(None) => return,
            Ok(Some(status)) => (state.status, state.reaped) = (Some(status), state.killed),
            Err(_) => state.reaped = true,
        }
        self.ended.send_replace(true);
    }

    /// Sends `signal` to the leader's group, unless the leader was reaped;
    /// after SIGKILL the leader is reaped as soon as it has ended.
    pub(super) fn signal_group(&self, signal: Signal) {
        let mut state = self.lock();
        if !state.reaped {
            let _ = kill_process_group(self.pid, signal);
            state.killed |= signal == Signal::KILL;
            self.update(&mut state);
        }
    }

    pub(super) fn status(&self) -> Option<ExitStatus> {
        let mut state = self.lock();
        self.update(&mut state);
        state.status
    }

    #[cfg(test)]
    pub(super) fn reaped(&self) -> bool {
        self.lock().reaped
    }

    pub(super) async fn exited(&self) {
        let _ = self.ended.subscribe().wait_for(|ended| *ended).await;
    }

    /// Ends the group and reaps the leader now, where nothing can await it
    /// (a second at most for the SIGKILL to land); whether it is reaped.
    fn end_now(&self) -> bool {
        self.signal_group(Signal::KILL);
        if !self.lock().reaped {
            let second = Timespec::try_from(Duration::from_secs(1)).unwrap_or_default();
            self.ended_within(Some(&second));
        }
        self.lock().reaped
    }

    /// Waits for the leader to end, at most `within`, and reaps it if its
    /// group was sent SIGKILL.
    fn ended_within(&self, within: Option<&Timespec>) {
        let _ = poll(&mut [PollFd::new(&self.pidfd, PollFlags::IN)], within);
        self.status();
    }
}

impl Drop for Leader {
    fn drop(&mut self) {
        // Only where no watcher ran (a start that failed half way).
        if !self.lock().reaped && !self.end_now() {
            // Nothing signals its group any more: its pid may go at its end.
            let pidfd = self.pidfd.try_clone();
            reap_later(move || {
                let reaped = |fd: &OwnedFd| waitid(WaitId::PidFd(fd.as_fd()), Wait::EXITED);
                while let Ok(Err(Errno::INTR)) = pidfd.as_ref().map(reaped) {}
            });
        }
    }
}

/// Reaps, on a thread of its own, a leader that has not ended a second
/// after SIGKILL (stuck in the kernel): once it ends, it is no zombie.
fn reap_later(reap: impl FnOnce() + Send + 'static) {
    let thread = std::thread::Builder::new().name("spear-reaper".into());
    if let Err(e) = thread.spawn(reap) {
        tracing::warn!(target: "spear_mcp_stdio", error = %e, "a server that outlived SIGKILL cannot be reaped");
    }
}

/// Watches the leader until it has ended (reaped if its group was sent
/// SIGKILL by then). Dropped before (its runtime shut down), it ends the
/// group and reaps the leader at once, as tokio's `kill_on_drop` does.
#[allow(unsafe_code)]
pub(super) fn watch(leader: &Arc<Leader>) -> io::Result<impl Future<Output = ()> + Send + use<>> {
    // SAFETY: the descriptor is the leader's pidfd, an `OwnedFd` it never
    // replaces, open as long as the leader lives, which the `Arc` held by
    // the `AsyncFd` guarantees.
    let interest = tokio::io::Interest::READABLE;
    let pidfd = unsafe { AsyncFd::register_with_interest(Arc::clone(leader), interest) }?;
    let unwatched = Unwatched(Some(Arc::clone(leader)));
    Ok(async move {
        let mut unwatched = unwatched; // moved in whole: dropped with the future
        // A pidfd is readable once its process has ended.
        while pidfd.get_ref().status().is_none() && !*pidfd.get_ref().ended.borrow() {
            match pidfd.readable().await {
                Ok(mut ready) => ready.clear_ready(),
                Err(_) => return,
            }
        }
        unwatched.0 = None;
    })
}

struct Unwatched(Option<Arc<Leader>>);

impl Drop for Unwatched {
    fn drop(&mut self) {
        if let Some(leader) = self.0.take().filter(|leader| !leader.end_now()) {
            reap_later(move || {
                while !leader.lock().reaped {
                    leader.ended_within(None);
                }
            });
        }
    }
}

fn exit_status(status: WaitIdStatus) -> ExitStatus {
    let raw = match status.exit_status() {
        Some(code) => (code & 0xff) << 8,
        None => status.terminating_signal().unwrap_or(0) & 0x7f | i32::from(status.dumped()) << 7,
    };
    ExitStatus::from_raw(raw)
}
