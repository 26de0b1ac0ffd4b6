//! Starting a server without copying the embedder: `clone(CLONE_VM |
//! CLONE_VFORK)`, as glibc's `posix_spawn` does, plus the parent-death
//! signal, which `posix_spawn` cannot set.
//!
//! Why it exists: std's `Command` spawns through `posix_spawn` (the child
//! borrows the parent's memory until it execs) unless a `pre_exec` hook is
//! set; with one it `fork`s, and fork copies the page tables of the whole
//! embedder, which then takes a copy-on-write fault on every page it writes
//! next. The cost grows with the embedder's memory: on the shared yardstick
//! the `spawn + initialize` row went from 1.04-1.10x the floor to 3.3-4.8x
//! when the parent-death hook came in, and back to 1.13x without it (same
//! build). Timed bare (C, `/bin/true`, touching the parent's memory after
//! each spawn, 200 spawns, busy machine): with 100 MB resident, fork 9.6 ms
//! a spawn against 0.62 ms for `posix_spawn` and 0.79 ms for this clone;
//! with 400 MB, 33 ms against 1.6 and 2.0 ms. A trampoline (`setpriv
//! --pdeathsig KILL`) would keep `posix_spawn` but costs a second exec.
//!
//! The child shares the parent's memory and runs on a stack of its own
//! until `execve`, so it makes only async-signal-safe system calls on data
//! the parent prepared (C strings and NULL-terminated pointer arrays), never
//! allocates, never unwinds. The parent blocks every signal around the
//! clone, glibc's internal ones too (through the raw system call, as
//! glibc's own `posix_spawn` does), so that no handler runs in the child on
//! the shared memory; the child resets handlers to the default, closes
//! every descriptor above 2 (the embedder's, close-on-exec or not, are not
//! the server's to read) and unblocks all before exec. The unsafe code of
//! the crate's spawn is here and nowhere else.
//!
//! The program is looked up as execvp(3) does (each PATH entry in turn,
//! Permission denied if one was found but not executable), but like
//! `posix_spawnp` a file without a `#!` line is not handed to `/bin/sh`:
//! it fails with "Exec format error".
//!
//! The parent reaps its child itself (there is no `tokio::process::Child`):
//! readiness of a pidfd on the runtime, else a thread blocked in `waitpid`;
//! a [`Child`] dropped before its end is killed and reaped off the runtime.
//! With a pidfd, signals and reaping go through it, so they can never reach
//! another process that was given a reused pid.

#![allow(unsafe_code)]

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};

use libc::{c_char, c_int, c_void};
use rustix::pipe::{PipeFlags, pipe_with};
use tokio::io::unix::AsyncFd;

/// The child's stack: its frames are a few hundred bytes, `execve` reads
/// its arguments from the parent's memory.
const STACK: usize = 64 * 1024;

/// What a started child leaves the parent: its pid, a pidfd when the
/// kernel gives one, and the parent's ends of the three pipes.
#[derive(Debug)]
pub(super) struct Spawned {
    pub(super) child: Child,
    pub(super) stdin: OwnedFd,
    pub(super) stdout: OwnedFd,
    pub(super) stderr: OwnedFd,
}

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

/// The command, as the child needs it: each part a C string.
#[derive(Debug)]
pub(super) struct Exec {
    /// Where to look for the program, in order (one path unless a bare
    /// name is looked up in `PATH`).
    candidates: Vec<CString>,
    argv: Vec<CString>,
    envp: Vec<CString>,
}

impl Exec {
    /// `program` (a bare name looked up in the `PATH` of `env`, else used
    /// as given), its `args` and the child's whole environment.
    pub(super) fn new<'a>(
        program: &Path,
        args: impl IntoIterator<Item = &'a str>,
        env: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> io::Result<Self> {
        let envp = env
            .into_iter()
            .map(|(name, value)| {
                let mut pair = name;
                pair.push("=");
                pair.push(value);
                c_string(&pair)
            })
            .collect::<io::Result<Vec<_>>>()?;
        let name = program.as_os_str();
        let candidates = if name.is_empty() {
            Vec::new()
        } else if name.as_bytes().contains(&b'/') {
            vec![c_string(name)?]
        } else {
            // As execvp(3): each entry of PATH in turn, an empty one being
            // the working folder; the default when PATH is not set.
            let path = envp
                .iter()
                .find_map(|pair| pair.as_bytes().strip_prefix(b"PATH="))
                .unwrap_or(b"/bin:/usr/bin");
            path.split(|b| *b == b':')
                .map(|dir| {
                    let mut full = dir.to_vec();
                    if !dir.is_empty() {
                        full.push(b'/');
                    }
                    full.extend_from_slice(name.as_bytes());
                    c_string(OsStr::from_bytes(&full))
                })
                .collect::<io::Result<_>>()?
        };
        let argv = std::iter::once(Ok(c_string(name)?))
            .chain(args.into_iter().map(|a| c_string(OsStr::new(a))))
            .collect::<io::Result<_>>()?;
        Ok(Exec {
            candidates,
            argv,
            envp,
        })
    }
}

fn c_string(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "nul byte found in provided data",
        )
    })
}

/// Everything the child reads, in the parent's memory (shared until exec).
struct ChildArgs {
    candidates: *const *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    /// The child's ends of the pipes, for its fds 0, 1 and 2; all above 2.
    fds: [c_int; 3],
    parent: libc::pid_t,
    /// The highest descriptor that may be open, for kernels without
    /// `close_range` (before 5.9).
    max_fd: c_int,
    /// Why the child did not reach the server's code (an errno), 0 if it did.
    errno: AtomicI32,
}

/// NULL-terminated array of pointers into `strings`, which must outlive it.
fn pointers(strings: &[CString]) -> Vec<*const c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// A pipe whose `child` end is a descriptor above 2 (so that the dup2s
/// onto 0, 1 and 2 cannot overwrite one another) and both ends close on exec.
fn pipe(child_reads: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = pipe_with(PipeFlags::CLOEXEC)?;
    let (parent, child) = if child_reads {
        (write, read)
    } else {
        (read, write)
    };
    let child = if child.as_raw_fd() < 3 {
        rustix::io::fcntl_dupfd_cloexec(&child, 3)?
    } else {
        child
    };
    Ok((parent, child))
}

/// Starts `exec` in a process group of its own with the parent-death
/// signal set to SIGKILL: to be called on the one long-lived spawner
/// thread, since the kernel sends that signal when the creating *thread*
/// ends. The error is the reason exec failed, as execvp(3) would give it.
pub(super) fn spawn(exec: &Exec) -> io::Result<Spawned> {
    let (stdin, child_in) = pipe(true)?;
    let (stdout, child_out) = pipe(false)?;
    let (stderr, child_err) = pipe(false)?;
    let candidates = pointers(&exec.candidates);
    let argv = pointers(&exec.argv);
    let envp = pointers(&exec.envp);
    let args = ChildArgs {
        candidates: candidates.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        fds: [
            child_in.as_raw_fd(),
            child_out.as_raw_fd(),
            child_err.as_raw_fd(),
        ],
        // SAFETY: getpid(2) has no preconditions.
        parent: unsafe { libc::getpid() },
        max_fd: max_fd(),
        errno: AtomicI32::new(0),
    };
    let stack = Stack::new()?;
    let (pid, pidfd) = match clone(&args, &stack, libc::CLONE_PIDFD) {
        // Kernels before 5.2 have no CLONE_PIDFD: wait on a thread instead.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => clone(&args, &stack, 0)?,
        other => other?,
    };
    let mut child = Child {
        pid,
        pidfd,
        done: false,
    };
    match args.errno.load(Ordering::SeqCst) {
        0 => Ok(Spawned {
            child,
            stdin,
            stdout,
            stderr,
        }),
        errno => {
            // The child has exited (CLONE_VFORK resumed us after its
            // _exit): collect it now.
            child.done = !matches!(reap(pid, child.pidfd.as_ref(), 0), Reaped::Running);
            Err(io::Error::from_raw_os_error(errno))
        }
    }
}

/// Whether this is the process's main thread (its thread id is the pid).
pub(super) fn on_main_thread() -> bool {
    // SAFETY: gettid(2) and getpid(2) have no preconditions.
    unsafe { libc::gettid() == libc::getpid() }
}

/// One clone with `extra` flags; returns once the child has exec'd or
/// exited (CLONE_VFORK).
fn clone(
    args: &ChildArgs,
    stack: &Stack,
    extra: c_int,
) -> io::Result<(libc::pid_t, Option<OwnedFd>)> {
    let mut pidfd: c_int = -1;
    let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD | extra;
    let all = SignalMask::block_all()?;
    // SAFETY: the child runs `child_main` on `stack` (64 KiB, a guard page
    // below it, 16-byte aligned top) in our memory; this thread is
    // suspended until it execs or exits, so `args` and the arrays it points
    // to stay valid and unchanged while the child reads them. All signals
    // are blocked, so no handler runs in the child before it resets them.
    // With CLONE_PIDFD the kernel writes the pidfd into `pidfd` (the
    // wrapper's parent_tid argument).
    let pid = unsafe {
        libc::clone(
            child_main,
            stack.top(),
            flags,
            args as *const ChildArgs as *mut c_void,
            &mut pidfd as *mut c_int,
        )
    };
    let error = io::Error::last_os_error();
    drop(all);
    if pid < 0 {
        return Err(error);
    }
    // SAFETY: with CLONE_PIDFD the kernel gave us this fresh descriptor.
    let pidfd = (extra & libc::CLONE_PIDFD != 0 && pidfd >= 0)
        .then(|| unsafe { OwnedFd::from_raw_fd(pidfd) });
    Ok((pid, pidfd))
}

/// The child, from clone to exec, sharing the parent's memory: raw system
/// calls only, on the data in `ChildArgs`.
extern "C" fn child_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the parent's `ChildArgs`, alive and unchanged until
    // we exec or exit (the parent is suspended). Every call below is
    // async-signal-safe and uses only that data and our own stack; errno
    // is read right after the call that failed.
    unsafe {
        let args = &*(arg as *const ChildArgs);
        let errno = || *libc::__errno_location();
        if libc::setpgid(0, 0) != 0 {
            fail(args, errno());
        }
        // prctl(2) reads its variadic arguments as unsigned longs.
        let (kill, zero) = (libc::SIGKILL as libc::c_ulong, 0 as libc::c_ulong);
        if libc::prctl(libc::PR_SET_PDEATHSIG, kill, zero, zero, zero) != 0 {
            fail(args, errno());
        }
        // The parent died before the signal was set: it would never come.
        if libc::getppid() != args.parent {
            fail(args, libc::ESRCH);
        }
        for (target, fd) in (0..).zip(args.fds) {
            if libc::dup2(fd, target) < 0 {
                fail(args, errno());
            }
        }
        close_above_stderr(args.max_fd);
        // Handlers are the parent's code: back to the default, as exec
        // would do; SIGPIPE too, which Rust ignores for itself.
        // Every signal, 1 to 64 (Linux's _NSIG is 65); sigaction refuses
        // SIGKILL, SIGSTOP and glibc's own two, which is fine.
        for signal in 1..65 {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) != 0 {
                continue;
            }
            if old.sa_sigaction != libc::SIG_DFL
                && (old.sa_sigaction != libc::SIG_IGN || signal == libc::SIGPIPE)
            {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
        let _ = set_mask(0);
        // As execvp(3): on to the next candidate when this one is missing,
        // Permission denied if one was found but not executable.
        let mut denied = false;
        let mut last = libc::ENOENT;
        let mut candidate = args.candidates;
        while !(*candidate).is_null() {
            libc::execve(*candidate, args.argv, args.envp);
            last = errno();
            match last {
                libc::EACCES => denied = true,
                libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
                _ => fail(args, last),
            }
            candidate = candidate.add(1);
        }
        fail(args, if denied { libc::EACCES } else { last })
    }
}

/// Closes every descriptor above 2 in the child.
///
/// # Safety
/// Only in the child: raw system calls, nothing allocated.
unsafe fn close_above_stderr(max_fd: c_int) {
    // SAFETY: close_range(2) and close(2) touch only the child's own
    // descriptor table (clone without CLONE_FILES copied it).
    unsafe {
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) == 0 {
            return;
        }
        for fd in 3..=max_fd {
            libc::close(fd);
        }
    }
}

/// The highest descriptor this process may have open: one below its
/// `RLIMIT_NOFILE` (capped, so that the fallback loop stays finite).
fn max_fd() -> c_int {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) writes the struct we pass.
    let cur = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur
    } else {
        1 << 20
    };
    c_int::try_from(cur.min(1 << 20)).unwrap_or(1 << 20) - 1
}

/// Ends the child before exec, saying why in the parent's memory.
///
/// # Safety
/// Only in the child, `args` being the parent's.
unsafe fn fail(args: &ChildArgs, errno: c_int) -> ! {
    args.errno.store(errno.max(1), Ordering::SeqCst);
    // SAFETY: _exit(2) ends the child at once, running nothing of ours.
    unsafe { libc::_exit(127) }
}

/// The child's stack: an anonymous mapping with a guard page below.
struct Stack {
    base: *mut c_void,
}

impl Stack {
    fn new() -> io::Result<Self> {
        // SAFETY: a fresh private anonymous mapping, ours alone; the guard
        // page is its lowest page.
        unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                STACK + page(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            let stack = Stack { base };
            if libc::mprotect(base, page(), libc::PROT_NONE) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(stack)
        }
    }

    /// The highest address: stacks grow down.
    fn top(&self) -> *mut c_void {
        // SAFETY: within (one past the end of) the mapping.
        unsafe { self.base.cast::<u8>().add(STACK + page()).cast() }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: our mapping, no longer used (the child has exec'd or exited).
        unsafe {
            libc::munmap(self.base, STACK + page());
        }
    }
}

fn page() -> usize {
    // SAFETY: sysconf(3) has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096)
}

/// This thread's signal mask, every signal blocked until dropped.
struct SignalMask {
    old: u64,
}

/// The kernel's signal set: one bit a signal, 1 to 64.
const KERNEL_SIGSET: usize = 8;

/// Sets this thread's signal mask to `mask` through the raw system call,
/// which, unlike `pthread_sigmask`, also sets glibc's internal signals
/// (cancellation and `setxid`); returns the mask it replaced.
fn set_mask(mask: u64) -> io::Result<u64> {
    let mut old = 0u64;
    // SAFETY: rt_sigprocmask(2) reads and writes two 8-byte sets we own;
    // it changes only this thread's mask.
    let r = unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &mask as *const u64,
            &mut old as *mut u64,
            KERNEL_SIGSET,
        )
    };
    if r == 0 {
        Ok(old)
    } else {
        Err(io::Error::last_os_error())
    }
}

impl SignalMask {
    fn block_all() -> io::Result<Self> {
        Ok(SignalMask {
            old: set_mask(u64::MAX)?,
        })
    }
}

impl Drop for SignalMask {
    fn drop(&mut self) {
        let _ = set_mask(self.old);
    }
}

/// What `waitpid` said of a child.
enum Reaped {
    /// It ended and is reaped.
    Exited(ExitStatus),
    /// It runs (WNOHANG).
    Running,
    /// It is not ours to reap (ECHILD: someone's `waitpid(-1)` took it).
    Gone,
}

/// Reaps `pid`, through its pidfd when there is one (`waitid(P_PIDFD)`,
/// which cannot reach a process given a reused pid), else `waitpid`;
/// again when interrupted.
fn reap(pid: libc::pid_t, pidfd: Option<&OwnedFd>, flags: c_int) -> Reaped {
    loop {
        let by_pidfd = pidfd.map(|fd| reap_pidfd(fd, flags));
        let got = match by_pidfd {
            // Kernels 5.2 and 5.3 give pidfds but cannot wait on them.
            Some(Err(e)) if e.raw_os_error() == Some(libc::EINVAL) => reap_pid(pid, flags),
            Some(got) => got,
            None => reap_pid(pid, flags),
        };
        match got {
            Ok(Some(status)) => return Reaped::Exited(status),
            Ok(None) => return Reaped::Running,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Reaped::Gone,
        }
    }
}

/// `waitpid(pid)`: the status once the child ended, `None` while it runs
/// (with `WNOHANG`).
fn reap_pid(pid: libc::pid_t, flags: c_int) -> io::Result<Option<ExitStatus>> {
    let mut status: c_int = 0;
    // SAFETY: waitpid(2) writes the status we pass.
    match unsafe { libc::waitpid(pid, &mut status, flags) } {
        p if p == pid => Ok(Some(ExitStatus::from_raw(status))),
        0 => Ok(None),
        _ => Err(io::Error::last_os_error()),
    }
}

/// `waitid(P_PIDFD, fd)`: the status once the child ended, `None` while it
/// runs (with `WNOHANG`).
fn reap_pidfd(fd: &OwnedFd, flags: c_int) -> io::Result<Option<ExitStatus>> {
    // SAFETY: siginfo_t is plain data; waitid(2) fills in the one we pass
    // (and leaves it zeroed, si_pid 0, for a child that runs), on a pidfd
    // that is ours and open.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let id = fd.as_raw_fd() as libc::id_t;
        if libc::waitid(libc::P_PIDFD, id, &mut info, libc::WEXITED | flags) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((info.si_pid() != 0).then(|| wait_status(info.si_code, info.si_status())))
    }
}

/// The `waitpid` status word for what `waitid` reported.
fn wait_status(code: c_int, status: c_int) -> ExitStatus {
    match code {
        libc::CLD_EXITED => ExitStatus::from_raw((status & 0xff) << 8),
        libc::CLD_DUMPED => ExitStatus::from_raw((status & 0x7f) | 0x80),
        _ => ExitStatus::from_raw(status & 0x7f),
    }
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
    /// The child's pid, which is also its process group id.
    pub(super) fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Waits for the child to end and reaps it. None when it was reaped by
    /// someone else (a `waitpid(-1)` of the embedder's) or cannot be waited for.
    ///
    /// # Cancel safety
    /// Dropping the future keeps the pidfd: the child is still the
    /// [`Child`]'s to kill and reap.
    pub(super) async fn wait(&mut self) -> Option<ExitStatus> {
        if let Some(pidfd) = &self.pidfd {
            // SAFETY: the pidfd stays open, the same descriptor, while the
            // AsyncFd lives: it is this Child's, which outlives this call.
            let watched = unsafe {
                AsyncFd::register_with_interest(
                    Watched(pidfd.as_raw_fd()),
                    tokio::io::Interest::READABLE,
                )
            };
            if let Ok(watched) = watched {
                loop {
                    match reap(self.pid, self.pidfd.as_ref(), libc::WNOHANG) {
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
        }
        // No pidfd to watch: a thread blocked in waitpid, which goes on
        // reaping if this future is dropped.
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (pid, pidfd) = (self.pid, self.pidfd.take());
        std::thread::Builder::new()
            .name("spear-reaper".into())
            .spawn(move || {
                let _ = tx.send(match reap(pid, pidfd.as_ref(), 0) {
                    Reaped::Exited(status) => Some(status),
                    Reaped::Running | Reaped::Gone => None,
                });
            })
            .ok()?;
        self.done = true;
        rx.await.ok().flatten()
    }

    /// Sends SIGKILL: through the pidfd when there is one; else to the pid,
    /// only while it is our child not reaped yet (so it names no one else).
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
                // Without a pidfd, a raw pid: checked to be our running
                // child first (WNOWAIT leaves it to be reaped below).
                let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
                // SAFETY: waitid(2) writes the siginfo we pass.
                let r = unsafe {
                    libc::waitid(
                        libc::P_PID,
                        self.pid as libc::id_t,
                        &mut info,
                        libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                    )
                };
                // SAFETY: filled in (or left zeroed) by a waitid that returned 0.
                if r == 0 && unsafe { info.si_pid() } == 0 {
                    // SAFETY: our child, running, not reaped: its pid is its own.
                    unsafe {
                        libc::kill(self.pid, libc::SIGKILL);
                    }
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
        if let Reaped::Running = reap(self.pid, self.pidfd.as_ref(), libc::WNOHANG) {
            let (pid, pidfd) = (self.pid, self.pidfd.take());
            let _ = std::thread::Builder::new()
                .name("spear-reaper".into())
                .spawn(move || reap(pid, pidfd.as_ref(), 0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mask this thread has, from the kernel's own account.
    fn blocked() -> u64 {
        let status = std::fs::read_to_string("/proc/thread-self/status").expect("status");
        let hex = status
            .lines()
            .find_map(|l| l.strip_prefix("SigBlk:"))
            .expect("SigBlk")
            .trim();
        u64::from_str_radix(hex, 16).expect("hex")
    }

    /// Around the clone every signal is blocked, glibc's internal ones (32
    /// and 33, which `pthread_sigmask` leaves out) too; the old mask comes back.
    #[test]
    fn the_clone_runs_with_every_signal_blocked() {
        let before = blocked();
        let mask = SignalMask::block_all().expect("blocked");
        let during = blocked();
        for signal in [libc::SIGTERM, libc::SIGCHLD, 32, 33, 64] {
            assert_ne!(during & (1 << (signal - 1)), 0, "signal {signal} unblocked");
        }
        drop(mask);
        assert_eq!(blocked(), before);
    }

    /// A wait that is cancelled leaves the pidfd with the child, to kill and
    /// reap it through.
    #[tokio::test]
    async fn a_cancelled_wait_keeps_the_pidfd() {
        let exec = Exec::new(
            Path::new("/bin/sleep"),
            ["30"],
            std::iter::empty::<(OsString, OsString)>(),
        )
        .expect("exec");
        let mut spawned = spawn(&exec).expect("spawned");
        assert!(spawned.child.pidfd.is_some(), "this kernel gives pidfds");
        let waited =
            tokio::time::timeout(std::time::Duration::from_millis(20), spawned.child.wait()).await;
        assert!(waited.is_err(), "sleep 30 ended");
        assert!(spawned.child.pidfd.is_some(), "the pidfd was lost");
        let pid = spawned.child.pid();
        drop(spawned);
        // Killed and reaped through the pidfd.
        let gone = (0..500).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            !Path::new(&format!("/proc/{pid}")).exists()
        });
        assert!(gone, "{pid} left");
    }
}
