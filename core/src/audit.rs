//! The audit trail: every decision and event, as structured data.
//!
//! Events are a `#[non_exhaustive]` serde enum; where they go is an
//! object-safe [`AuditSink`] passed in explicitly (never a global), so each
//! session, program and test chooses its own. [`JsonLinesSink`] writes one
//! JSON object a line.

use std::cell::Cell;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::UnavailableReason;
use crate::exposure::Class;
use crate::names::named;
use crate::registry::{TaskClass, WritePolicy};
use crate::selection::{Decision, Runtime, TaskKind};

/// One audit record: when, in which session and turn, and what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AuditRecord {
    /// RFC 3339 UTC time with milliseconds.
    pub time: String,
    /// The session's id, where there is one (shared by all its records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<Arc<str>>,
    /// The turn's id, where there is one (shared by all its records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<Arc<str>>,
    /// What happened.
    #[serde(flatten)]
    pub event: AuditEvent,
}

/// What happened. Serialised with its name under `"event"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AuditEvent {
    /// A registry entry was accepted.
    ProviderRegistered {
        /// The capabilities file, if the registry came from one.
        file: Option<String>,
        /// The provider's id.
        provider: String,
        /// Its kind.
        kind: String,
        /// Its scope as written back, or `None` (applies nowhere).
        scope: Option<String>,
        /// The task classes it serves.
        tasks: Vec<TaskClass>,
        /// The tools declared READ.
        read: Vec<String>,
        /// Its write policy.
        write: WritePolicy,
        /// Whether it is enabled.
        enabled: bool,
        /// Its request timeout in seconds.
        timeout_secs: f64,
    },
    /// A registry entry was refused.
    ProviderRefused {
        /// The capabilities file, if the registry came from one.
        file: Option<String>,
        /// Which entry, e.g. `providers[2] ("tracker")`.
        entry: String,
        /// Every problem found, one message each.
        problems: Vec<String>,
    },
    /// The providers a turn reaches were chosen.
    CapabilityFamilySelected {
        /// The turn's project, `None` for an unregistered tree.
        project: Option<String>,
        /// The turn's task.
        task: TaskKind,
        /// The runtime the turn runs on.
        runtime: Runtime,
        /// Whether the turn may use READ capabilities only.
        read_only: bool,
        /// Every registered provider and the decision about it.
        candidates: Vec<CandidateRecord>,
    },
    /// The turn runs where there is no capability gateway.
    GatewayAbsent {
        /// Why, e.g. `earlier runtime`.
        reason: String,
    },
    /// A provider started and listed its tools.
    ProviderStarted {
        /// The provider's id.
        provider: String,
        /// How many usable tools it has.
        tools: usize,
        /// How many tools were left out.
        rejected_tools: usize,
        /// Start and listing, in milliseconds.
        duration_ms: u64,
    },
    /// A tool a provider offered was left out of its family.
    ToolRejected {
        /// The provider's id.
        provider: String,
        /// The tool's name (plain, bounded).
        tool: String,
        /// Why.
        reason: String,
    },
    /// A provider could not start, timed out or failed; it is left out of
    /// the session.
    ProviderFailed {
        /// The provider's id.
        provider: String,
        /// The short category the turn is told.
        reason: UnavailableReason,
        /// The full message, for the deployment (may carry stderr).
        message: String,
    },
    /// A turn was shown its family whole.
    CapabilityFamilyExposed {
        /// The capability ids shown.
        capabilities: Vec<String>,
        /// Estimated tokens of descriptions and schemas.
        tokens: usize,
        /// Providers named as unavailable.
        unavailable: Vec<String>,
    },
    /// A turn was shown its family as an index.
    CapabilityIndexExposed {
        /// The capability ids shown.
        capabilities: Vec<String>,
        /// Estimated tokens of descriptions and schemas.
        tokens: usize,
        /// Providers named as unavailable.
        unavailable: Vec<String>,
    },
    /// A turn described a capability.
    CapabilityDescribed {
        /// The capability id.
        capability: String,
    },
    /// A checked call went to a provider.
    CapabilityInvoked {
        /// The capability id.
        capability: String,
        /// READ or WRITE.
        class: Class,
        /// The arguments as compact JSON, cut at 4 KiB.
        arguments: String,
        /// How the call came out.
        outcome: Outcome,
        /// How long the call took, in milliseconds.
        duration_ms: u64,
    },
    /// A command was refused before reaching any provider.
    CapabilityRefused {
        /// The capability id, when the command named one.
        capability: Option<String>,
        /// The command line (plain, bounded).
        command: String,
        /// Why.
        reason: String,
    },
    /// A session shut a provider down.
    ProviderStopped {
        /// The provider's id.
        provider: String,
        /// An error while stopping, if any.
        error: Option<String>,
    },
}

named! {
    /// How a call that went to a provider came out.
    pub enum Outcome {
        /// The tool answered.
        Ok = "ok",
        /// The tool answered that it failed (`isError`).
        ToolError = "tool_error",
        /// The provider answered the call with an error.
        Rejected = "rejected",
        /// The provider failed during the call and is unavailable.
        Unavailable = "unavailable",
    }
}

/// One candidate of a selection, as audited.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CandidateRecord {
    /// The provider's id.
    pub provider: String,
    /// Whether it reaches the turn.
    pub selected: bool,
    /// Why (or why not).
    pub reason: Decision,
}

/// Where audit records go. Implementations must not block for long: they are
/// called on the turn's path.
pub trait AuditSink: fmt::Debug + Send + Sync {
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

/// A sink with the ids of the session and turn it records for.
///
/// Cheap to clone; [`Audit::for_session`] and [`Audit::for_turn`] derive the
/// handles a session and a turn use.
#[derive(Debug, Clone)]
pub struct Audit {
    sink: Arc<dyn AuditSink>,
    // Shared, not copied, into every record: a call's record was seven
    // strings built and freed, and these two were the same every time.
    session: Option<Arc<str>>,
    turn: Option<Arc<str>>,
}

impl Audit {
    /// Records into `sink` with no session or turn.
    pub fn new(sink: Arc<dyn AuditSink>) -> Self {
        Self {
            sink,
            session: None,
            turn: None,
        }
    }

    /// A handle that drops every record.
    pub fn null() -> Self {
        Self::new(Arc::new(NullSink))
    }

    /// The same sink, recording for session `id`.
    pub fn for_session(&self, id: impl Into<String>) -> Self {
        Self {
            sink: Arc::clone(&self.sink),
            session: Some(Arc::from(id.into())),
            turn: None,
        }
    }

    /// The same sink and session, recording for turn `id`.
    pub fn for_turn(&self, id: impl Into<String>) -> Self {
        Self {
            sink: Arc::clone(&self.sink),
            session: self.session.clone(),
            turn: Some(Arc::from(id.into())),
        }
    }

    /// Records `event` now.
    pub fn emit(&self, event: AuditEvent) {
        self.sink.record(AuditRecord {
            time: rfc3339_millis(SystemTime::now()),
            session: self.session.clone(),
            turn: self.turn.clone(),
            event,
        });
    }
}

/// `time` as RFC 3339 UTC with milliseconds, exactly as
/// `humantime::format_rfc3339_millis` writes it, without going through
/// `fmt`: every audit record carries one, and formatting was a third of
/// recording a call.
fn rfc3339_millis(time: SystemTime) -> String {
    /// 10000-01-01T00:00:00Z: four-digit years end there. humantime cannot
    /// write a time outside 1970..10000 either; it is left to it, as before.
    const YEAR_10000: u64 = 253_402_300_800;
    let since = match time.duration_since(UNIX_EPOCH) {
        Ok(d) if d.as_secs() < YEAR_10000 => d,
        _ => return humantime::format_rfc3339_millis(time).to_string(),
    };
    let secs = since.as_secs();
    let mut out = LAST_SECOND.with(|last| {
        let (at, text) = last.get();
        if at == secs {
            return text;
        }
        let text = second_text(secs);
        last.set((secs, text));
        text
    });
    let mut millis = since.subsec_millis();
    for digit in out[20..23].iter_mut().rev() {
        // A digit: millis % 10 < 10.
        *digit = b'0' + (millis % 10) as u8;
        millis /= 10;
    }
    // ASCII digits and punctuation only: the check cannot fail.
    std::str::from_utf8(&out).map_or_else(|_| String::new(), str::to_owned)
}

thread_local! {
    /// The last whole second written and its text: records come many a
    /// second, and only their milliseconds differ.
    static LAST_SECOND: Cell<(u64, [u8; 24])> = const { Cell::new((u64::MAX, [0; 24])) };
}

/// `secs` after the epoch (before the year 10000) as
/// `YYYY-MM-DDTHH:MM:SS.000Z`, written by humantime once a second.
fn second_text(secs: u64) -> [u8; 24] {
    let text = humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_secs(secs));
    // Four-digit years make it 24 bytes, always.
    <[u8; 24]>::try_from(text.to_string().as_bytes()).unwrap_or(*b"0000-00-00T00:00:00.000Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_humantime_writes_them() {
        let mut secs: Vec<u64> = vec![
            0,
            59,
            86_399,
            86_400,
            951_782_400,     // 2000-02-29
            951_868_799,     // 2000-02-29T23:59:59
            4_107_542_400,   // 2100-03-01
            4_102_444_799,   // 2099-12-31T23:59:59
            253_402_300_799, // 9999-12-31T23:59:59
        ];
        // Every 7919th day and some second of it, up to the year 9999.
        let mut s = 12_345u64;
        while s < 253_402_300_800 {
            secs.push(s);
            s += 7919 * 86_400 + 3671;
        }
        for secs in secs {
            for nanos in [0, 999_999, 1_000_000, 123_456_789, 999_999_999] {
                let t = UNIX_EPOCH + Duration::new(secs, nanos);
                assert_eq!(
                    rfc3339_millis(t),
                    humantime::format_rfc3339_millis(t).to_string(),
                    "{secs}.{nanos}"
                );
            }
        }
    }

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
