//! Where audit records go: the [`AuditSink`] trait and the sinks built in.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::AuditRecord;

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
}

impl<T: AuditSink + ?Sized> AuditSink for Arc<T> {
    fn record(&self, record: AuditRecord) -> Result<(), AuditError> {
        (**self).record(record)
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

/// A sink writing one JSON object a line.
///
/// On a file ([`JsonLinesSink::append`]) each record is one write on an
/// `O_APPEND` descriptor, whole or not at all: a write that fails part way
/// (a full disk) is cut back off the file, and a file whose last line was
/// cut before (a crash) gets a newline before the first record, so that no
/// record is ever glued onto a fragment. A failed write is returned to the
/// gateway, and also counted here ([`JsonLinesSink::failures`]).
pub struct JsonLinesSink {
    inner: Mutex<SinkState>,
}

struct SinkState {
    out: Out,
    /// The next record must begin on a new line: what is there ends in a
    /// fragment that could not be cut off.
    fresh_line: bool,
    failures: u64,
    last_error: Option<String>,
}

enum Out {
    File(File),
    Other(Box<dyn Write + Send>),
}

impl JsonLinesSink {
    /// Appends to the file at `path`, creating it if needed.
    ///
    /// # Errors
    /// When the file cannot be opened or read.
    pub fn append(path: &Path) -> io::Result<Self> {
        let mut file: File = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)?;
        let cut = match file.seek(SeekFrom::End(0))? {
            0 => false,
            len => {
                let mut last = [0u8; 1];
                file.seek(SeekFrom::Start(len - 1))?;
                file.read_exact(&mut last)?;
                last[0] != b'\n'
            }
        };
        let mut sink = Self::with(Out::File(file));
        sink.inner
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .fresh_line = cut;
        Ok(sink)
    }

    /// Writes to `out`, flushed after each record (a record that fails part
    /// way cannot be taken back from a plain writer).
    pub fn new(out: impl Write + Send + 'static) -> Self {
        Self::with(Out::Other(Box::new(out)))
    }

    fn with(out: Out) -> Self {
        Self {
            inner: Mutex::new(SinkState {
                out,
                fresh_line: false,
                failures: 0,
                last_error: None,
            }),
        }
    }

    /// How many records could not be written, and the last error.
    pub fn failures(&self) -> (u64, Option<String>) {
        let state = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        (state.failures, state.last_error.clone())
    }
}

impl fmt::Debug for JsonLinesSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (failures, _) = self.failures();
        f.debug_struct("JsonLinesSink")
            .field("failures", &failures)
            .finish_non_exhaustive()
    }
}

impl SinkState {
    fn write(&mut self, line: &[u8]) -> io::Result<()> {
        match &mut self.out {
            Out::Other(out) => {
                let result = out.write_all(line).and_then(|()| out.flush());
                // Whatever part of it went out stays: the next starts afresh.
                self.fresh_line |= result.is_err();
                result
            }
            Out::File(file) => {
                let before = file.metadata()?.len();
                let result = file.write(line).and_then(|n| {
                    (n == line.len()).then_some(()).ok_or_else(|| {
                        io::Error::new(io::ErrorKind::WriteZero, "the record was written in part")
                    })
                });
                if result.is_err() && file.set_len(before).is_err() {
                    self.fresh_line = true;
                }
                result
            }
        }
    }
}

impl AuditSink for JsonLinesSink {
    fn record(&self, record: AuditRecord) -> Result<(), AuditError> {
        let mut line = match serde_json::to_vec(&record) {
            Ok(line) => line,
            Err(e) => format!(
                r#"{{"event":"audit_unserialisable","error":{:?}}}"#,
                e.to_string()
            )
            .into_bytes(),
        };
        line.push(b'\n');
        let mut state = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if state.fresh_line {
            line.insert(0, b'\n');
        }
        match state.write(&line) {
            Ok(()) => {
                state.fresh_line = false;
                Ok(())
            }
            Err(e) => {
                state.failures += 1;
                state.last_error = Some(e.to_string());
                Err(e.into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{Audit, AuditEvent};

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
        let time = lines[0]["time"].as_str().expect("time");
        assert!(humantime::parse_rfc3339(time).is_ok(), "{time}");
        let back: AuditRecord = serde_json::from_value(lines[0].clone()).expect("round trip");
        assert_eq!(back.event, refused());
    }

    #[test]
    fn a_failing_sink_counts_what_it_lost() {
        let sink = Arc::new(JsonLinesSink::new(Broken));
        Audit::new(sink.clone()).emit(refused());
        assert_eq!(sink.failures(), (1, Some("disk full".into())));
    }

    #[test]
    fn a_file_whose_last_line_was_cut_gets_the_next_record_on_a_line_of_its_own() {
        let dir = std::env::temp_dir().join(format!("spear-audit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("audit.jsonl");
        std::fs::write(&path, "{\"event\":\"whole\"}\n{\"event\":\"cu").expect("write");
        let sink = JsonLinesSink::append(&path).expect("opens");
        sink.record(AuditRecord {
            time: crate::AuditTime::now(),
            schema: crate::AUDIT_SCHEMA,
            session: None,
            turn: None,
            event: refused(),
        })
        .expect("written");
        let text = std::fs::read_to_string(&path).expect("read");
        let _ = std::fs::remove_dir_all(&dir);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(lines[1], "{\"event\":\"cu");
        let last: serde_json::Value = serde_json::from_str(lines[2]).expect("a whole record");
        assert_eq!(last["event"], "provider_refused");
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
