//! The started server as this process's child: waited for on the runtime,
//! killed and reaped if dropped first, through its pidfd where the kernel
//! gives one, so that no signal or wait can reach a process given its pid
//! again.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use libc::c_int;
use tokio::io::unix::AsyncFd;

/// A child of this process not reaped yet. Dropping it before
/// [`Child::wait`] returned kills it (SIGKILL) and reaps it on a thread of
/// its own, so that no zombie is left whatever ends the waiting task.
#[derive(Debug)]
pub(super) struct Child {
    pid: libc::pid_t,
    pidfd: Option<OwnedFd>,
    /// Reaped, or reaping handed to a thread.
    done: bool,
}

/// What a wait said of a child.
enum Reaped {
    Exited(ExitStatus),
    /// It runs (`WNOHANG`).
    Running,
    /// It is not ours to wait for (someone's `waitpid(-1)` took it).
    Gone,
}

/// A pidfd's raw descriptor, for the runtime to watch while the pidfd
/// itself stays with its [`Child`].
struct Watched(c_int);

impl AsRawFd for Watched {
    fn as_raw_fd(&self) -> c_int {
        self.0
    }
}

impl Child {
    pub(super) fn new(pid: libc::pid_t, pidfd: Option<OwnedFd>) -> Self {
        Child {
            pid,
            pidfd,
            done: false,
        }
    }

    /// The child's pid, which is also its process group id.
    pub(super) fn pid(&self) -> libc::pid_t {
        self.pid
    }

    #[cfg(test)]
    pub(super) fn has_pidfd(&self) -> bool {
        self.pidfd.is_some()
    }

    /// `waitid` on the child with `flags` (besides `WEXITED`), again when
    /// interrupted: through the pidfd, else (or on kernels 5.2 and 5.3,
    /// which give pidfds but cannot wait on them) by pid.
    fn reap(&self, flags: c_int) -> Reaped {
        let by_pid = (libc::P_PID, self.pid as libc::id_t);
        let mut target = match &self.pidfd {
            Some(fd) => (libc::P_PIDFD, fd.as_raw_fd() as libc::id_t),
            None => by_pid,
        };
        loop {
            // SAFETY: siginfo_t is plain data; waitid(2) fills in the one we
            // pass, and leaves it zeroed (si_pid 0) for a child that runs.
            let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
            if unsafe { libc::waitid(target.0, target.1, &mut info, libc::WEXITED | flags) } == 0 {
                // SAFETY: filled in by waitid.
                let (pid, code, status) =
                    unsafe { (info.si_pid(), info.si_code, info.si_status()) };
                return match (pid, code) {
                    (0, _) => Reaped::Running,
                    (_, libc::CLD_EXITED) => {
                        Reaped::Exited(ExitStatus::from_raw((status & 0xff) << 8))
                    }
                    (_, libc::CLD_DUMPED) => {
                        Reaped::Exited(ExitStatus::from_raw((status & 0x7f) | 0x80))
                    }
                    _ => Reaped::Exited(ExitStatus::from_raw(status & 0x7f)),
                };
            }
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => {}
                Some(libc::EINVAL) if target != by_pid => target = by_pid,
                _ => return Reaped::Gone,
            }
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
                match self.reap(libc::WNOHANG) {
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
        let child = Child::new(self.pid, self.pidfd.take());
        self.done = true;
        std::thread::Builder::new()
            .name("spear-reaper".into())
            .spawn(move || {
                let mut child = child;
                child.done = true;
                let _ = tx.send(match child.reap(0) {
                    Reaped::Exited(status) => Some(status),
                    Reaped::Running | Reaped::Gone => None,
                });
            })
            .ok()?;
        rx.await.ok().flatten()
    }

    /// Sends SIGKILL: through the pidfd when there is one; else to the pid,
    /// only once it is checked to be our child still running (`WNOWAIT`
    /// leaves it to be reaped), so that it names no one else.
    fn kill(&self) {
        match &self.pidfd {
            // SAFETY: pidfd_send_signal(2) on our open pidfd, no siginfo.
            Some(fd) => unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0u32,
                );
            },
            None => {
                if let Reaped::Running = self.reap(libc::WNOHANG | libc::WNOWAIT) {
                    // SAFETY: our child, running, not reaped: the pid is its own.
                    unsafe { libc::kill(self.pid, libc::SIGKILL) };
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
        if let Reaped::Running = self.reap(libc::WNOHANG) {
            let mut child = Child::new(self.pid, self.pidfd.take());
            child.done = true;
            let _ = std::thread::Builder::new()
                .name("spear-reaper".into())
                .spawn(move || child.reap(0));
        }
    }
}
