//! What `/proc` says about processes: for tests that must prove a server's
//! process group is gone and left no zombie.
//!
//! Orphans are reparented to pid 1 (or a subreaper), which in some containers
//! never reaps them; such a zombie has ended and holds nothing, so
//! [`group_survivors`] leaves zombies out, while [`zombie_children`] finds the
//! ones that would be ours to reap.

use std::collections::BTreeMap;
use std::fs;

/// One process as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    /// Its pid.
    pub pid: u32,
    /// Its state letter (`R`, `S`, `Z`, ...).
    pub state: char,
    /// Its parent's pid.
    pub ppid: u32,
    /// Its process group id.
    pub pgrp: u32,
}

/// Every process visible in `/proc`.
pub fn processes() -> Vec<ProcStat> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(stat)
        .collect()
}

/// What `/proc/<pid>/stat` says, if the process still exists.
pub fn stat(pid: u32) -> Option<ProcStat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: split after the last ')'.
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(ProcStat {
        pid,
        state,
        ppid,
        pgrp,
    })
}

/// The processes of group `pgid` that have not ended (zombies left out).
pub fn group_survivors(pgid: u32) -> Vec<ProcStat> {
    processes()
        .into_iter()
        .filter(|p| p.pgrp == pgid && p.state != 'Z')
        .collect()
}

/// This process's children that ended and were not reaped.
pub fn zombie_children() -> Vec<ProcStat> {
    let me = std::process::id();
    processes()
        .into_iter()
        .filter(|p| p.ppid == me && p.state == 'Z')
        .collect()
}

/// Waits up to `seconds` for group `pgid` to have no survivor, and returns
/// those left.
pub fn wait_group_gone(pgid: u32, seconds: u64) -> Vec<ProcStat> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    loop {
        let left = group_survivors(pgid);
        if left.is_empty() || std::time::Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// This process's open descriptors: each number with what it points to
/// (`pipe:[1234]`, `socket:[5678]`, `anon_inode:[eventfd]`, a path).
///
/// The descriptor that reads `/proc/self/fd` is left out. Comparing two
/// tables by number *and* target is exact about what the code in between
/// opened and left open: a pipe that another thread closed meanwhile, or
/// one that reuses a freed number, cannot make two different tables look
/// equal, nor two equal ones different.
pub fn fd_table() -> BTreeMap<u32, String> {
    let own = format!("/proc/{}/fd", std::process::id());
    let Ok(dir) = fs::read_dir("/proc/self/fd") else {
        return BTreeMap::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let fd = e.file_name().to_str()?.parse().ok()?;
            let target = fs::read_link(e.path()).ok()?;
            let target = target.to_string_lossy().into_owned();
            (target != own).then_some((fd, target))
        })
        .collect()
}

/// The descriptors open now that were not open, to the same target, in
/// `before`: what the code run since opened and has not closed.
pub fn fds_opened_since(before: &BTreeMap<u32, String>) -> Vec<(u32, String)> {
    fd_table()
        .into_iter()
        .filter(|(fd, target)| before.get(fd) != Some(target))
        .collect()
}

/// Waits up to `seconds` for [`fds_opened_since`] to be empty (a task that
/// owns a pipe may close it a moment after the session has closed), and
/// returns what is still open.
pub fn wait_fds_closed(before: &BTreeMap<u32, String>, seconds: u64) -> Vec<(u32, String)> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    loop {
        let left = fds_opened_since(before);
        if left.is_empty() || std::time::Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The peak resident memory of this process so far, in bytes (`VmHWM`).
pub fn peak_rss() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// The resident memory of this process now, in bytes (`VmRSS`).
pub fn resident() -> Option<u64> {
    status_bytes("VmRSS:")
}

/// A size in kB from this process's `/proc/self/status`, in bytes.
fn status_bytes(field: &str) -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_seen_with_its_group() {
        let me = stat(std::process::id()).expect("self in /proc");
        assert_eq!(me.pid, std::process::id());
        assert!(group_survivors(me.pgrp).iter().any(|p| p.pid == me.pid));
        assert!(peak_rss().expect("VmHWM") > 0);
    }

    #[test]
    fn resident_memory_grows_with_touched_pages() {
        let before = resident().expect("VmRSS");
        let block = vec![1u8; 32 << 20];
        let after = resident().expect("VmRSS");
        assert!(after >= before + (30 << 20), "{before} -> {after}");
        assert!(peak_rss().expect("VmHWM") >= after);
        drop(block);
    }

    #[test]
    fn the_fd_table_sees_a_file_opened_and_closed_by_target() {
        // Other tests of this binary open descriptors meanwhile: look only
        // for this test's own file.
        let file = tempfile::NamedTempFile::new().expect("temp file");
        let path = file.path().display().to_string();
        let ours = |fds: Vec<(u32, String)>| fds.into_iter().filter(|(_, t)| *t == path).count();
        let before = fd_table();
        assert_eq!(ours(fds_opened_since(&before)), 0);
        let (a, b) = (fs::File::open(&path), fs::File::open(&path));
        assert_eq!(ours(fds_opened_since(&before)), 2);
        drop((a, b));
        assert_eq!(ours(fds_opened_since(&before)), 0);
    }

    #[test]
    fn a_reaped_child_leaves_no_zombie_and_no_survivor() {
        let mut child = std::process::Command::new("sleep")
            .arg("0")
            .spawn()
            .expect("sleep");
        let pid = child.id();
        child.wait().expect("reaped");
        assert!(stat(pid).is_none());
        assert!(zombie_children().iter().all(|z| z.pid != pid));
    }
}
