//! The machine side of a run: pinning to one CPU, the runtime.

use rustix::thread::{CpuSet, sched_setaffinity};

/// Pins this process to `cpu`. Threads and children started afterwards
/// inherit it, so client and server share that one CPU: unpinned runs on a
/// 2-core VM swing several-fold between runs.
///
/// # Errors
/// When the CPU does not exist or the system refuses.
pub fn pin_to_cpu(cpu: usize) -> Result<(), String> {
    let mut set = CpuSet::new();
    set.set(cpu);
    sched_setaffinity(None, &set).map_err(|e| format!("cannot pin to CPU {cpu}: {e}"))
}

/// The CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    match rustix::thread::sched_getaffinity(None) {
        Ok(set) => (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect(),
        Err(_) => Vec::new(),
    }
}

/// A tokio runtime with every driver: multi-thread (what `#[tokio::main]`
/// gives) or current-thread.
///
/// # Panics
/// When the runtime cannot be built (no threads or descriptors left).
#[must_use]
pub fn runtime(multi: bool) -> tokio::runtime::Runtime {
    if multi {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    }
    .enable_all()
    .build()
    .expect("a runtime")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_leaves_one_allowed_cpu() {
        let cpus = allowed_cpus();
        let first = *cpus.first().expect("some cpu");
        // A thread of its own: pinning it must not narrow the test harness.
        std::thread::spawn(move || {
            pin_to_cpu(first).expect("pinned");
            assert_eq!(allowed_cpus(), vec![first]);
        })
        .join()
        .expect("joined");
    }
}
