//! The started server as this process's child: waited for on the runtime,
//! killed and reaped if dropped first, through its pidfd where the kernel
//! gives one, so that no signal or wait can reach a process given its pid
//! again.

#![allow(unsafe_code)]

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use rustix::io::Errno;
use rustix::process::{
    Pid, Signal, WaitId, WaitIdOptions, kill_process, pidfd_send_signal, waitid,
};
use tokio::io::unix::AsyncFd;

/// A child of this process not reaped yet. Dropping it before
/// [`Child::wait`] returned kills it (SIGKILL) and reaps it on a thread of
/// its own, so that no zombie is left whatever ends the waiting task.
#[derive(Debug)]
pub(super) struct Child {
    pid: Pid,
    pidfd: Option<OwnedFd>,
    /// Reaped, or reaping handed to a thread.
    done: bool,
}

/// What a wait said of a child.
enum Reaped {
    Exited(ExitStatus),
    /// It runs (`NOHANG`).
    Running,
    /// It is not ours to wait for (someone's `waitpid(-1)` took it).
    Gone,
}

/// A pidfd's raw descriptor, for the runtime to watch while the pidfd
/// itself stays with its [`Child`].
struct Watched(std::os::fd::RawFd);

impl AsRawFd for Watched {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0
    }
}

impl Child {
    pub(super) fn new(pid: Pid, pidfd: Option<OwnedFd>) -> Self {
        Child {
            pid,
            pidfd,
            done: false,
        }
    }

    /// The child's pid, which is also its process group id.
    pub(super) fn pid(&self) -> Pid {
        self.pid
    }

    #[cfg(test)]
    pub(super) fn has_pidfd(&self) -> bool {
        self.pidfd.is_some()
    }

    /// `waitid` on the child with `flags` (besides `EXITED`), again when
    /// interrupted: through the pidfd, else (or on kernels 5.2 and 5.3,
    /// which give pidfds but cannot wait on them) by pid.
    fn reap(&self, flags: WaitIdOptions) -> Reaped {
        let mut by_pidfd = self.pidfd.as_ref();
        loop {
            let id = by_pidfd.map_or(WaitId::Pid(self.pid), |fd| WaitId::PidFd(fd.as_fd()));
            return match waitid(id, WaitIdOptions::EXITED | flags) {
                Ok(None) => Reaped::Running,
                Ok(Some(status)) => Reaped::Exited(match status.exit_status() {
                    Some(code) => ExitStatus::from_raw((code & 0xff) << 8),
                    None => ExitStatus::from_raw(
                        status.terminating_signal().unwrap_or(0) & 0x7f
                            | if status.dumped() { 0x80 } else { 0 },
                    ),
                }),
                Err(Errno::INTR) => continue,
                Err(Errno::INVAL) if by_pidfd.is_some() => {
                    by_pidfd = None;
                    continue;
                }
                Err(_) => Reaped::Gone,
            };
        }
    }

    /// Waits for the child to end and reaps it. None when it was reaped by
    /// someone else (a `waitpid(-1)` of the embedder's) or cannot be waited for.
    ///
    /// # Cancel safety
    /// Dropping the future keeps the pidfd: the child is still this
    /// [`Child`]'s to kill and reap.
    pub(super) async fn wait(&mut self) -> Option<ExitStatus> {
        // SAFETY: the pidfd stays open, the same descriptor, while the
        // AsyncFd lives: it is this Child's, which outlives this call.
        let watched = self.pidfd.as_ref().and_then(|fd| {
            let watched = Watched(fd.as_raw_fd());
            unsafe { AsyncFd::register_with_interest(watched, tokio::io::Interest::READABLE) }.ok()
        });
        if let Some(watched) = watched {
            loop {
                match self.reap(WaitIdOptions::NOHANG) {
                    Reaped::Running => {}
                    Reaped::Exited(status) => {
                        self.done = true;
                        return Some(status);
                    }
                    Reaped::Gone => {
                        self.done = true;
                        return None;
                    }
                }
                // A pidfd is readable once its process has ended.
                match watched.readable().await {
                    Ok(mut ready) => ready.clear_ready(),
                    Err(_) => break,
                }
            }
        }
        // Nothing to watch: a thread blocked in waitid, which goes on
        // reaping if this future is dropped.
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut child = Child::new(self.pid, self.pidfd.take());
        (child.done, self.done) = (true, true);
        std::thread::Builder::new()
            .name("spear-reaper".into())
            .spawn(move || {
                let _ = tx.send(match child.reap(WaitIdOptions::empty()) {
                    Reaped::Exited(status) => Some(status),
                    Reaped::Running | Reaped::Gone => None,
                });
            })
            .ok()?;
        rx.await.ok().flatten()
    }

    /// Sends SIGKILL: through the pidfd when there is one; else to the pid,
    /// only once it is checked to be our child still running (`NOWAIT`
    /// leaves it to be reaped), so that it names no one else.
    fn kill(&self) {
        match &self.pidfd {
            Some(fd) => {
                let _ = pidfd_send_signal(fd, Signal::KILL);
            }
            None => {
                if let Reaped::Running = self.reap(WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT) {
                    let _ = kill_process(self.pid, Signal::KILL);
                }
            }
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // As tokio's kill_on_drop: the waiting task is gone (its runtime
        // shut down, or the start failed) and so is the connection.
        self.kill();
        if let Reaped::Running = self.reap(WaitIdOptions::NOHANG) {
            let mut child = Child::new(self.pid, self.pidfd.take());
            child.done = true;
            let _ = std::thread::Builder::new()
                .name("spear-reaper".into())
                .spawn(move || child.reap(WaitIdOptions::empty()));
        }
    }
}
