//! Where audit records go: the [`AuditSink`] trait and the sinks built in.

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::AuditRecord;
use super::chain::{AuditKey, Linker};
use super::file::{Out, StreamTrail};

/// Why a record was not written (whole): the gateway then refuses what must
/// not run unrecorded (a WRITE), and tells the session and the operator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
#[non_exhaustive]
pub struct AuditError {
    /// What went wrong, e.g. the OS error of the write.
    pub reason: String,
}

impl AuditError {
    /// An error saying `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

impl From<io::Error> for AuditError {
    fn from(e: io::Error) -> Self {
        Self::new(e.to_string())
    }
}

/// Where audit records go. Implementations must not block for long: they are
/// called on the turn's path.
pub trait AuditSink: Send + Sync {
    /// Takes one record.
    ///
    /// # Errors
    /// When the record was not written, or not whole: a sink must say so,
    /// never lose a record silently.
    fn record(&self, record: AuditRecord) -> Result<(), AuditError>;

    /// Takes one record that must be durable before the caller goes on (a
    /// WRITE's approval, before the WRITE is sent; a session's end): when
    /// it returns `Ok`, this record and every one taken before it survive
    /// a crash of the process and of the machine. The gateway calls it off
    /// the runtime's I/O threads, where it may wait for the disk.
    ///
    /// The default takes it as [`AuditSink::record`] does: right for a sink
    /// whose records are durable once taken, or that keeps them in memory.
    ///
    /// # Errors
    /// As [`AuditSink::record`]; also when it cannot be made durable.
    fn record_durable(&self, record: AuditRecord) -> Result<(), AuditError> {
        self.record(record)
    }
}

impl<T: AuditSink + ?Sized> AuditSink for Arc<T> {
    fn record(&self, record: AuditRecord) -> Result<(), AuditError> {
        (**self).record(record)
    }

    fn record_durable(&self, record: AuditRecord) -> Result<(), AuditError> {
        (**self).record_durable(record)
    }
}

/// A sink that drops everything, for callers with no audit trail (a dry check).
#[derive(Debug, Clone, Copy, Default)]
pub struct NullSink;

impl AuditSink for NullSink {
    fn record(&self, _: AuditRecord) -> Result<(), AuditError> {
        Ok(())
    }
}

/// How a [`JsonLinesSink`] chains its records.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct JsonLinesOptions {
    /// The deployment's key file ([`AuditKey::from_file`]): with one, each
    /// record's `prev` is an HMAC-SHA-256 under the key instead of the
    /// plain SHA-256 of the line before it.
    pub key_file: Option<PathBuf>,
}

impl JsonLinesOptions {
    /// No key: the chain is plain SHA-256.
    pub fn new() -> Self {
        Self::default()
    }

    /// Chains under the key in `path`.
    pub fn with_key_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.key_file = Some(path.into());
        self
    }

    fn linker(&self) -> io::Result<Linker> {
        match &self.key_file {
            None => Ok(Linker::Plain),
            Some(path) => AuditKey::from_file(path)
                .map(Linker::Keyed)
                .map_err(io::Error::other),
        }
    }
}

/// A sink writing one JSON object a line, each record chained to the line
/// before it (`seq`, `prev`: `docs/audit.md`).
///
/// On a file ([`JsonLinesSink::append`]) one file is one chain across
/// processes and runs: a record is appended under an advisory lock and
/// chained to the file's last line, whoever wrote it; it is one `write` of
/// one whole line that a `SIGKILL` does not tear; nothing is ever cut off
/// the file. A durable record ([`AuditSink::record_durable`]) is synced
/// (`fdatasync`) into the file the path names, opened again if the file
/// was removed or replaced. New files are created `0600`. On a stream (a
/// pipe, a device, [`JsonLinesSink::new`]) the chain begins at the
/// genesis, with no lock and nothing to sync. A failed write is returned
/// to the gateway, which counts what was lost ([`super::Audit::failure`]).
pub struct JsonLinesSink {
    inner: Mutex<SinkState>,
}

struct SinkState {
    out: Out,
    linker: Linker,
}

impl JsonLinesSink {
    /// Appends to the file at `path`, creating it (`0600`) if needed, with
    /// a plain chain. A path that names a FIFO, a terminal or another
    /// device is written as a stream (opening a FIFO waits for its reader).
    ///
    /// # Errors
    /// When the file cannot be opened or read.
    pub fn append(path: &Path) -> io::Result<Self> {
        Self::append_with(path, &JsonLinesOptions::new())
    }

    /// [`JsonLinesSink::append`] with `options`.
    ///
    /// # Errors
    /// When the file cannot be opened or read, or the key file cannot be
    /// used (an `io::Error` of kind `Other` wrapping the
    /// [`AuditKeyError`](super::AuditKeyError)).
    pub fn append_with(path: &Path, options: &JsonLinesOptions) -> io::Result<Self> {
        let linker = options.linker()?;
        let out = Out::open(path, &linker)?;
        Ok(Self::with(out, linker))
    }

    /// Writes to `out`, a stream with a plain chain, flushed after each
    /// record.
    pub fn new(out: impl Write + Send + 'static) -> Self {
        Self::with(Out::Stream(StreamTrail::new(Box::new(out))), Linker::Plain)
    }

    /// [`JsonLinesSink::new`] with `options`.
    ///
    /// # Errors
    /// When the key file cannot be used.
    pub fn new_with(
        out: impl Write + Send + 'static,
        options: &JsonLinesOptions,
    ) -> io::Result<Self> {
        let linker = options.linker()?;
        Ok(Self::with(
            Out::Stream(StreamTrail::new(Box::new(out))),
            linker,
        ))
    }

    fn with(out: Out, linker: Linker) -> Self {
        Self {
            inner: Mutex::new(SinkState { out, linker }),
        }
    }

    fn write(&self, record: AuditRecord, durable: bool) -> Result<(), AuditError> {
        let mut state = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let state = &mut *state;
        (state.out)
            .append(record, &state.linker, durable)
            .map_err(AuditError::from)
    }
}

impl fmt::Debug for JsonLinesSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JsonLinesSink").finish_non_exhaustive()
    }
}

impl AuditSink for JsonLinesSink {
    fn record(&self, record: AuditRecord) -> Result<(), AuditError> {
        self.write(record, false)
    }

    fn record_durable(&self, record: AuditRecord) -> Result<(), AuditError> {
        self.write(record, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{Audit, AuditEvent};
    use serde_json::json;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    struct Broken;
    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk full"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn refused() -> AuditEvent {
        AuditEvent::ProviderRefused {
            file: None,
            entry: "providers[0]".into(),
            problems: vec!["bad".into()],
        }
    }

    #[test]
    fn json_lines_carry_time_ids_and_the_event_name() {
        let buf = Shared::default();
        let audit = Audit::new(Arc::new(JsonLinesSink::new(buf.clone())));
        audit.for_session("s1").for_turn("t1").emit(refused());
        audit.emit(refused());
        let text = String::from_utf8(buf.0.lock().expect("lock").clone()).expect("utf8");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json line"))
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["event"], "provider_refused");
        assert_eq!(lines[0]["session"], "s1");
        assert_eq!(lines[0]["turn"], "t1");
        assert!(lines[1].get("session").is_none());
        // A stream is one chain from the genesis.
        assert_eq!((&lines[0]["seq"], &lines[1]["seq"]), (&json!(1), &json!(2)));
        assert_eq!(lines[0]["prev"], "0".repeat(64));
        let first = text.lines().next().expect("a line");
        assert_eq!(lines[1]["prev"], Linker::Plain.link(first.as_bytes()).hex());
        let time = lines[0]["time"].as_str().expect("time");
        assert!(humantime::parse_rfc3339(time).is_ok(), "{time}");
        let back: AuditRecord = serde_json::from_value(lines[0].clone()).expect("round trip");
        assert_eq!(back.event, refused());
    }

    #[test]
    fn a_failing_sink_counts_what_it_lost() {
        let audit = Audit::new(Arc::new(JsonLinesSink::new(Broken)));
        audit.emit(refused());
        let failure = audit.failure().expect("counted");
        assert_eq!(
            (failure.lost, failure.last_error.reason.as_str()),
            (1, "disk full")
        );
    }

    #[test]
    fn a_file_whose_last_line_was_cut_gets_the_next_record_on_a_line_of_its_own() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, "{\"event\":\"whole\"}\n{\"event\":\"cu").expect("write");
        let sink = JsonLinesSink::append(&path).expect("opens");
        Audit::new(Arc::new(sink))
            .try_emit(refused())
            .expect("written");
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[1], "{\"event\":\"cu");
        let last: serde_json::Value = serde_json::from_str(lines[2]).expect("a whole record");
        assert_eq!(last["event"], "provider_refused");
        // Chained to the fragment, which stays for `verify` to name.
        assert_eq!(last["seq"], 3);
        assert_eq!(last["prev"], Linker::Plain.link(lines[1].as_bytes()).hex());
    }

    #[test]
    fn a_write_the_file_refuses_is_returned_and_counted() {
        let sink = JsonLinesSink::append(Path::new("/dev/full")).expect("opens");
        let audit = Audit::new(Arc::new(sink));
        let err = audit.try_emit(refused()).expect_err("no space");
        assert!(err.reason.contains("No space left on device"), "{err}");
        assert!(audit.is_failing());
        let failure = audit.failure().expect("counted");
        assert_eq!(failure.lost, 1);
        assert_eq!(
            failure.to_string(),
            format!("1 audit record could not be written ({err})")
        );
    }
}
