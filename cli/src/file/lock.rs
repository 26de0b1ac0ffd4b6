//! One editor at a time: an exclusive `flock` on the capabilities file
//! itself, held from before the edit reads the file until after its new
//! text is renamed over it.
//!
//! `flock` on the file rather than a lock file beside it: nothing is left
//! in the folder, the kernel drops the lock with its holder (a SIGKILLed
//! editor included), and an operator's script can take the same lock with
//! `flock(1)`. Readers (`check`, SPEAR) take none: a rename is atomic, so
//! they read the old file or the new one, whole.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

use rustix::fs::FlockOperation;
use rustix::io::Errno;
use spear_capabilities::internals::framing::one_line;

use crate::error::Failure;
use crate::out::{on_terminal, tell};

/// How long an edit waits for another editor's lock before it gives up.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(10);

/// The most characters of the lock holder's command line said.
const MAX_HOLDER_CHARS: usize = 200;

/// Takes the exclusive lock on `file` (the file `path` names), waiting at
/// most [`LOCK_WAIT`] for the editor that holds it, on the runtime (a
/// signal still ends the CLI while it waits).
pub(super) async fn exclusive(file: &File, path: &Path) -> Result<(), Failure> {
    let start = tokio::time::Instant::now();
    let mut pause = Duration::from_millis(1);
    let mut told = false;
    loop {
        match rustix::fs::flock(file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(e) if e == Errno::WOULDBLOCK || e == Errno::INTR => {}
            Err(e) => {
                return Err(Failure::Usage(format!(
                    "cannot lock {} for the edit: {}; nothing written",
                    path.display(),
                    std::io::Error::from(e)
                )));
            }
        }
        let waited = start.elapsed();
        if waited >= LOCK_WAIT {
            return Err(Failure::Usage(format!(
                "{} is being edited by {}; gave up after waiting {} s; nothing written",
                path.display(),
                holder(file),
                LOCK_WAIT.as_secs()
            )));
        }
        if !told && waited >= Duration::from_millis(500) && on_terminal() {
            told = true;
            tell(format_args!(
                "waiting for {} to finish editing {} (at most {} s)",
                holder(file),
                path.display(),
                LOCK_WAIT.as_secs()
            ));
        }
        tokio::time::sleep(pause.min(LOCK_WAIT - waited)).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Who holds the `flock` on `file`, as Linux's `/proc/locks` says:
/// `pid 1234 (spear-capabilities add notes ...)`, else "another process".
fn holder(file: &File) -> String {
    let Ok(meta) = file.metadata() else {
        return "another process".to_owned();
    };
    let dev = meta.dev();
    let inode = format!(
        "{:02x}:{:02x}:{}",
        rustix::fs::major(dev),
        rustix::fs::minor(dev),
        meta.ino()
    );
    let locks = std::fs::read_to_string("/proc/locks").unwrap_or_default();
    // `1: FLOCK  ADVISORY  WRITE 1234 fe:00:5884150 0 EOF`; a waiter's
    // line has `->` after the number.
    let pid = locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields[..] {
            [_, "FLOCK", _, _, pid, id, ..] if id == inode => pid.parse::<u32>().ok(),
            _ => None,
        }
    });
    let Some(pid) = pid else {
        return "another process".to_owned();
    };
    // Its command line is its own text: shown through the sanitiser.
    let command = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            let words: Vec<String> = raw
                .split(|b| *b == 0)
                .filter(|w| !w.is_empty())
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            one_line(&words.join(" "), MAX_HOLDER_CHARS)
        })
        .unwrap_or_default();
    if command.is_empty() {
        format!("pid {pid}")
    } else {
        format!("pid {pid} ({command})")
    }
}
