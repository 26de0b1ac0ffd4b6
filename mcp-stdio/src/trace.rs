//! A trace of every JSON-RPC line sent to and received from each server,
//! with the provider and a time stamp, for an operator debugging a server
//! (`spear-capabilities --trace FILE`). Off unless [`trace_to`] was called:
//! then the connection records each line it sends and each it reads (a line
//! past the line bound ends the connection unrecorded).

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// The most of one line a trace record keeps.
pub const TRACE_LINE_KEPT: usize = 64 * 1024;

/// Where the trace goes.
#[derive(Debug)]
pub(crate) struct Trace {
    file: Mutex<File>,
}

static TRACE: OnceLock<Arc<Trace>> = OnceLock::new();

/// Traces every server started from now on into `path` (created or
/// truncated), one JSON object a line: `time` (milliseconds since the
/// epoch), `provider`, `direction` (`sent` or `received`) and `line`.
///
/// # Errors
/// When the file cannot be created, or a trace was already set.
pub fn trace_to(path: &Path) -> std::io::Result<()> {
    let file = File::create(path)?;
    TRACE
        .set(Arc::new(Trace {
            file: Mutex::new(file),
        }))
        .map_err(|_| std::io::Error::other("a trace file is already set"))
}

/// The trace, if one was set.
pub(crate) fn current() -> Option<Arc<Trace>> {
    TRACE.get().cloned()
}

impl Trace {
    /// Records one line (its newline left out).
    pub(crate) fn line(&self, provider: &str, direction: &str, line: &[u8]) {
        let kept = &line[..line.len().min(TRACE_LINE_KEPT)];
        let mut record = serde_json::json!({
            "time": SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64),
            "provider": provider,
            "direction": direction,
            "line": String::from_utf8_lossy(kept.strip_suffix(b"\r").unwrap_or(kept)),
        });
        if kept.len() < line.len() {
            record["cut_at_bytes"] = serde_json::json!(TRACE_LINE_KEPT);
        }
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(file, "{record}");
    }
}
