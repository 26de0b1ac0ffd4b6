//! Finding a server's processes through `/proc`, and those that outlive it.
//!
//! Each test's server gets a variable ([`TAG_VAR`]) unique to that start; every
//! process it starts inherits it (`npx` and `sh` pass the environment on), so
//! the tag finds the whole tree, grandchildren included, even across the
//! parallel tests of this binary. A dead process can no longer be read this
//! way, so survivors are checked by pid and start time recorded while alive.
//!
//! A zombie whose parent is this test process is a child we failed to reap.
//! A zombie with any other parent has died: reaping it is its new parent's
//! job (in some containers pid 1 never reaps orphans, which no client can fix).

use std::fmt;
use std::fs;
use std::time::{Duration, Instant};

/// The variable that tags a server's processes.
pub(crate) const TAG_VAR: &str = "SPEAR_INTEROP_TAG";

/// One process, as seen while it was alive.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Proc {
    pid: u32,
    /// Clock ticks after boot: a pid reused by a new process differs here.
    start: u64,
    cmdline: String,
}

impl fmt::Debug for Proc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} `{}`", self.pid, self.cmdline)
    }
}

/// What `/proc/<pid>/stat` says: state, parent and start time.
struct Stat {
    state: char,
    ppid: u32,
    start: u64,
}

fn stat(pid: u32) -> Option<Stat> {
    let raw = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces or ')'.
    let rest = &raw[raw.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // After the name: state (field 3), ppid (4) ... starttime (22).
    Some(Stat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

fn cmdline(pid: u32) -> String {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            String::from_utf8_lossy(&raw)
                .replace('\0', " ")
                .trim()
                .to_owned()
        })
        .unwrap_or_default()
}

fn pids() -> Vec<u32> {
    fs::read_dir("/proc")
        .expect("/proc is readable (these tests need Linux)")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// The live processes whose environment carries `tag`, as seen right now.
///
/// A process in the middle of `execve` reads as having no environment for a
/// moment: the kernel wakes the parent (so `spawn` returns) before it lays
/// the new environment on the stack. A process that was just started may
/// therefore be missed here; [`at_least`] waits for it.
fn tagged(tag: &str) -> Vec<Proc> {
    let needle = format!("{TAG_VAR}={tag}");
    pids()
        .into_iter()
        .filter(|&pid| {
            fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|&b| b == 0).any(|var| var == needle.as_bytes()))
                .unwrap_or(false)
        })
        .filter_map(|pid| {
            let s = stat(pid)?;
            (s.state != 'Z').then(|| Proc {
                pid,
                start: s.start,
                cmdline: cmdline(pid),
            })
        })
        .collect()
}

/// The live processes carrying `tag`, once at least `count` of them are seen,
/// waiting up to `within` for them to show; whatever is seen then, if fewer.
pub(crate) async fn at_least(tag: &str, count: usize, within: Duration) -> Vec<Proc> {
    let deadline = Instant::now() + within;
    loop {
        let found = tagged(tag);
        if found.len() >= count || Instant::now() >= deadline {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether a zombie child of this test process counts as a survivor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reaping {
    /// After `shutdown`: the client must have reaped its child.
    Required,
    /// After a drop: `Drop` is synchronous and cannot wait for the exit, so
    /// the runtime reaps later; the process must be dead, not reaped.
    Deferred,
}

fn still_there(p: &Proc, reaping: Reaping) -> Option<String> {
    let s = stat(p.pid)?;
    if s.start != p.start {
        return None;
    }
    match s.state {
        'Z' if s.ppid == std::process::id() && reaping == Reaping::Required => {
            Some(format!("{p:?} is a zombie nobody reaped"))
        }
        'Z' => None,
        state => Some(format!("{p:?} is alive (state {state})")),
    }
}

/// The processes of `seen`, or new ones carrying `tag`, still there after
/// waiting up to `within` for them to go.
pub(crate) async fn survivors(
    seen: &[Proc],
    tag: &str,
    reaping: Reaping,
    within: Duration,
) -> Vec<String> {
    let deadline = Instant::now() + within;
    loop {
        let mut left: Vec<String> = seen
            .iter()
            .filter_map(|p| still_there(p, reaping))
            .collect();
        left.extend(
            tagged(tag)
                .into_iter()
                .filter(|p| !seen.contains(p))
                .map(|p| format!("{p:?} appeared and is alive")),
        );
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_tagged_process_is_found_and_its_death_seen() {
    // The scanner itself must work, or every "nothing survives" would pass.
    let tag = format!("{}-self-check", std::process::id());
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .env(TAG_VAR, &tag)
        .spawn()
        .expect("sleep runs");
    let seen = at_least(&tag, 1, Duration::from_secs(5)).await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].pid, child.id());
    let quick = Duration::from_millis(200);
    assert_eq!(
        survivors(&seen, &tag, Reaping::Required, quick).await.len(),
        1
    );
    child.kill().expect("kill");
    // Killed but not yet waited for: a zombie of ours.
    let left = survivors(&seen, &tag, Reaping::Required, quick).await;
    assert!(left[0].contains("zombie"), "{left:?}");
    assert!(
        survivors(&seen, &tag, Reaping::Deferred, quick)
            .await
            .is_empty()
    );
    child.wait().expect("reaped");
    assert!(
        survivors(&seen, &tag, Reaping::Required, quick)
            .await
            .is_empty()
    );
}
