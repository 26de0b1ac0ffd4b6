//! Where audit records go: the [`AuditSink`] trait and the sinks built in.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::AuditRecord;

/// Where audit records go. Implementations must not block for long: they are
/// called on the turn's path.
pub trait AuditSink: Send + Sync {
    /// Takes one record.
    fn record(&self, record: AuditRecord);
}

impl<T: AuditSink + ?Sized> AuditSink for Arc<T> {
    fn record(&self, record: AuditRecord) {
        (**self).record(record)
    }
}

/// A sink that drops everything, for callers with no audit trail (a dry check).
#[derive(Debug, Clone, Copy, Default)]
pub struct NullSink;

impl AuditSink for NullSink {
    fn record(&self, _: AuditRecord) {}
}

/// A sink writing one JSON object a line, flushed after each record.
///
/// A write that fails is counted and the error kept: the audit trail must not
/// stop a turn, but the deployment must be able to tell that it lost records.
pub struct JsonLinesSink {
    inner: Mutex<SinkState>,
}

struct SinkState {
    out: Box<dyn Write + Send>,
    failures: u64,
    last_error: Option<String>,
}

impl JsonLinesSink {
    /// Appends to the file at `path`, creating it if needed.
    ///
    /// # Errors
    /// When the file cannot be opened.
    pub fn append(path: &Path) -> io::Result<Self> {
        let file: File = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self::new(file))
    }

    /// Writes to `out`.
    pub fn new(out: impl Write + Send + 'static) -> Self {
        Self {
            inner: Mutex::new(SinkState {
                out: Box::new(out),
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

impl AuditSink for JsonLinesSink {
    fn record(&self, record: AuditRecord) {
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
        let result = state.out.write_all(&line).and_then(|()| state.out.flush());
        if let Err(e) = result {
            state.failures += 1;
            state.last_error = Some(e.to_string());
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
}
