//! Starting a server without copying the embedder: `clone(CLONE_VM |
//! CLONE_VFORK)` as glibc's `posix_spawn` does, plus the parent-death signal
//! `posix_spawn` cannot set (a `pre_exec` hook would fork the whole embedder).
//!
//! The child shares our memory until `execve`: it makes only
//! async-signal-safe calls on data prepared for it, with every signal
//! blocked around the clone (glibc's own too); it resets handlers, closes
//! every descriptor above 2 and unblocks signals before exec. The program is
//! tried as execvp(3) does, but a file without `#!` is not run by `sh`.

#![allow(unsafe_code)]

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};

use libc::{c_char, c_int, c_void};
use rustix::pipe::{PipeFlags, pipe_with};
use rustix::process::{Pid, getpid};

use super::child::Leader;
use crate::program::{Env, Program, next_after};

// `set_mask` passes the kernel's signal set as 8 bytes; MIPS has 128 signals.
#[cfg(any(target_arch = "mips", target_arch = "mips64"))]
compile_error!("the spawn's signal mask assumes the kernel's 8-byte signal set");

/// The child's stack, as glibc's `posix_spawn` sizes it (no guard page).
const STACK: usize = 64 * 1024;

/// The command as the child needs it: the program's candidates, argv, envp;
/// and the folder it runs in. No `Debug`: envp may hold a secret of ours.
pub(super) struct Exec([Vec<CString>; 3], CString);

impl Exec {
    pub(super) fn new(program: &Program, args: &[String], env: Env) -> io::Result<Self> {
        let c = |s: &OsStr| CString::new(s.as_bytes()).map_err(io::Error::other);
        let pairs = env.into_iter().map(|(mut pair, value)| {
            pair.extend([OsStr::new("="), &value]);
            c(&pair)
        });
        let args =
            std::iter::once(c(program.shown.as_ref())).chain(args.iter().map(|a| c(a.as_ref())));
        let candidates = program.candidates.iter().map(|p| c(p.as_ref()));
        Ok(Exec(
            [
                candidates.collect::<io::Result<_>>()?,
                args.collect::<io::Result<_>>()?,
                pairs.collect::<io::Result<_>>()?,
            ],
            c(program.dir.as_os_str())?,
        ))
    }
}

/// Everything the child reads, in the parent's memory (shared until exec).
struct ChildArgs {
    /// NULL-terminated: the candidates, argv and envp.
    exec: [*const *const c_char; 3],
    /// The folder the child runs in.
    dir: *const c_char,
    /// The child's ends of the pipes, for its fds 0, 1 and 2; all above 2.
    fds: [c_int; 3],
    parent: libc::pid_t,
    /// Where to close up to without `close_range` (before 5.9), else -1.
    highest_fd: c_int,
    /// Why the child did not reach the server's code (an errno), 0 if it did.
    errno: AtomicI32,
}

/// A pipe whose `child` end is a descriptor above 2 (so that the dup2s
/// onto 0, 1 and 2 cannot overwrite one another), both ends close-on-exec.
fn pipe(child_reads: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    let (mut parent, mut child) = pipe_with(PipeFlags::CLOEXEC)?;
    if child_reads {
        std::mem::swap(&mut parent, &mut child);
    }
    match child.as_raw_fd() {
        0..3 => Ok((parent, rustix::io::fcntl_dupfd_cloexec(&child, 3)?)),
        _ => Ok((parent, child)),
    }
}

/// Starts `exec` (on the spawner thread); returns it with our ends of its
/// stdin, stdout and stderr, or why exec failed, as execvp(3) says it.
pub(super) fn spawn(exec: &Exec) -> io::Result<(Leader, [OwnedFd; 3])> {
    let [(stdin, child_in), (stdout, child_out), (stderr, child_err)] =
        [pipe(true)?, pipe(false)?, pipe(false)?];
    let pointers = exec.0.each_ref().map(|strings| {
        let pointers = strings.iter().map(|s| s.as_ptr());
        pointers
            .chain(std::iter::once(std::ptr::null()))
            .collect::<Vec<_>>()
    });
    let args = ChildArgs {
        exec: pointers.each_ref().map(|p| p.as_ptr()),
        dir: exec.1.as_ptr(),
        fds: [&child_in, &child_out, &child_err].map(AsRawFd::as_raw_fd),
        parent: getpid().as_raw_nonzero().get(),
        highest_fd: match close_range_works() {
            true => -1,
            false => highest_fd(),
        },
        errno: AtomicI32::new(0),
    };
    let (pid, pidfd) = match clone(&args) {
        // Kernels before 5.2 have no CLONE_PIDFD.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            return Err(io::Error::other(
                "starting a process with a pidfd needs Linux 5.4 or later",
            ));
        }
        other => other?,
    };
    let pid = Pid::from_raw(pid).ok_or_else(|| io::Error::other("clone gave no pid"))?;
    // The child has exec'd or exited (CLONE_VFORK resumed us): on an error
    // the leader is dropped, which reaps it.
    let leader = Leader::new(pid, pidfd)?;
    match args.errno.load(Ordering::SeqCst) {
        0 => Ok((leader, [stdin, stdout, stderr])),
        errno => Err(io::Error::from_raw_os_error(errno)),
    }
}

/// One clone: the child's pid and pidfd, once it has exec'd or exited.
fn clone(args: &ChildArgs) -> io::Result<(libc::pid_t, OwnedFd)> {
    let mut stack = vec![0u128; STACK / 16];
    let mut pidfd: c_int = -1;
    let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD;
    let old = set_mask(u64::MAX)?;
    // SAFETY: the child runs `child_main` on `stack` (16-byte aligned; its
    // top is one past its end, stacks grow down) in our memory. Only this
    // thread is suspended until the child execs or exits, so `args`, what
    // it points to and `stack` stay valid and unchanged (they are this
    // thread's); the embedder's other threads keep running, which
    // `child_main` allows for. Every signal is blocked, so no handler of
    // ours runs in the child before it resets them. The kernel writes the
    // pidfd into `pidfd` (the wrapper's parent_tid argument).
    let pid = unsafe {
        let top = stack.as_mut_ptr().add(stack.len()).cast();
        let arg = args as *const ChildArgs as *mut c_void;
        libc::clone(child_main, top, flags, arg, &mut pidfd as *mut c_int)
    };
    let error = io::Error::last_os_error();
    let _ = set_mask(old);
    if pid < 0 {
        return Err(error);
    }
    // SAFETY: with CLONE_PIDFD the kernel gave us this fresh descriptor.
    Ok((pid, unsafe { OwnedFd::from_raw_fd(pidfd) }))
}

/// The child, from clone to exec, in our memory while the embedder's other
/// threads run: it allocates nothing, takes no lock (another thread may hold
/// the allocator's) and writes only to its stack, `ChildArgs::errno` and the
/// suspended thread's errno (it shares its thread pointer).
extern "C" fn child_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the suspended thread's `ChildArgs`, alive and
    // unchanged until we exec or exit. Every call below is async-signal-safe
    // and uses only that data and our own stack; errno is read right after
    // the call that failed.
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
        // close_range(2) and close(2) touch only the child's own descriptor
        // table (clone without CLONE_FILES copied it).
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
            for fd in 3..=args.highest_fd {
                libc::close(fd);
            }
        }
        // Handlers are the parent's code: back to the default, as exec
        // would do; SIGPIPE too, which Rust ignores for itself. sigaction
        // refuses SIGKILL, SIGSTOP and glibc's own two, which is fine.
        for signal in 1..65 {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction != libc::SIG_DFL
                && (old.sa_sigaction != libc::SIG_IGN || signal == libc::SIGPIPE)
            {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
        let _ = set_mask(0);
        if libc::chdir(args.dir) != 0 {
            fail(args, errno());
        }
        // As execvp(3): on to the next candidate when this one is missing,
        // Permission denied if one was found but not executable.
        let (mut denied, mut last) = (false, libc::ENOENT);
        let [mut candidate, argv, envp] = args.exec;
        while !(*candidate).is_null() {
            libc::execve(*candidate, argv, envp);
            last = errno();
            match next_after(last) {
                Some(was_denied) => denied |= was_denied,
                None => fail(args, last),
            }
            candidate = candidate.add(1);
        }
        fail(args, if denied { libc::EACCES } else { last })
    }
}

/// Ends the child before exec, saying why in the parent's memory.
/// # Safety
/// Only in the child, `args` being the parent's.
unsafe fn fail(args: &ChildArgs, errno: c_int) -> ! {
    args.errno.store(errno.max(1), Ordering::SeqCst);
    // SAFETY: _exit(2) ends the child at once, running nothing of ours.
    unsafe { libc::_exit(127) }
}

/// Whether this kernel has close_range(2) (5.9 and later), asked once.
fn close_range_works() -> bool {
    static WORKS: OnceLock<bool> = OnceLock::new();
    // SAFETY: closes nothing: no descriptor is numbered that high.
    *WORKS.get_or_init(|| unsafe {
        libc::syscall(libc::SYS_close_range, u32::MAX, u32::MAX, 0u32) == 0
    })
}

/// The highest descriptor open now, so that the fallback closes as many as
/// are open (one another thread opens meanwhile without close-on-exec is
/// the race every fork has).
fn highest_fd() -> c_int {
    let open = std::fs::read_dir("/proc/self/fd").into_iter().flatten();
    let numbers = open.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok());
    numbers.max().unwrap_or(1024)
}

/// Sets this thread's signal mask (bits for signals 1 to 64) by the raw
/// system call, which sets glibc's own signals too; returns the old one.
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
            8usize,
        )
    };
    (r == 0).then_some(old).ok_or_else(io::Error::last_os_error)
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
        let old = set_mask(u64::MAX).expect("blocked");
        let during = blocked();
        for signal in [libc::SIGTERM, libc::SIGCHLD, 32, 33, 64] {
            assert_ne!(during & (1 << (signal - 1)), 0, "signal {signal} unblocked");
        }
        set_mask(old).expect("restored");
        assert_eq!(blocked(), before);
    }

    /// A leader that ended stays unreaped, its group id reserved, until its
    /// group was sent SIGKILL; then it is reaped, and no signal of ours is
    /// sent to its id any more.
    #[test]
    fn a_leader_is_reaped_only_after_its_group_was_sent_sigkill() {
        let program = Program::resolve("/bin/sh", std::path::Path::new("/"), &Env::new());
        let args = ["-c".to_owned(), "exit 3".to_owned()];
        let exec = Exec::new(&program, &args, Env::new()).expect("exec");
        let (leader, _pipes) = spawn(&exec).expect("spawned");
        let pid = leader.pid;
        let stat = || std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while leader.status().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(
            leader.status().map(|s| s.to_string()).as_deref(),
            Some("exit status: 3")
        );
        assert!(!leader.reaped(), "reaped before its group was sent SIGKILL");
        let zombie = stat().expect("still in the process table");
        assert_eq!(zombie.rsplit_once(") ").map(|(_, r)| &r[..1]), Some("Z"));
        leader.signal_group(rustix::process::Signal::KILL);
        assert!(leader.reaped());
        assert_eq!(stat(), None, "{pid} left");
    }

    /// Without close_range the child closes up to the highest descriptor
    /// open, which is found.
    #[test]
    fn the_highest_open_descriptor_is_found() {
        let file = std::fs::File::open("/dev/null").expect("open");
        assert!(highest_fd() >= file.as_raw_fd());
        assert!(close_range_works(), "this kernel has close_range");
    }
}
