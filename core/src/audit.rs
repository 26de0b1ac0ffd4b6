//! The audit trail: every decision and event, as structured data.
//!
//! Events are a `#[non_exhaustive]` serde enum; where they go is an
//! object-safe [`AuditSink`] passed in explicitly (never a global), so each
//! session, program and test chooses its own. [`JsonLinesSink`] writes one
//! JSON object a line.
//!
//! The records are a contract (`docs/audit.md`): each carries the schema's
//! version ([`AUDIT_SCHEMA`]), and a reader of this version keeps what a
//! later one writes ([`AuditEvent::Unknown`]) instead of failing on it.
//!
//! A trail proves itself: each record [`JsonLinesSink`] writes is chained
//! to the line before it (`seq`, `prev`; keyed with an [`AuditKey`]), and
//! [`verify`] reads a trail back and says whether it is whole.

mod arguments;
mod chain;
mod event;
mod file;
mod sink;
mod tail;
mod time;
mod verify;

use std::sync::Arc;

pub use arguments::MAX_AUDIT_ARGUMENT_BYTES;
pub(crate) use arguments::bounded as bounded_arguments;
pub use chain::{AuditKey, AuditKeyError, MAX_AUDIT_KEY_BYTES, MIN_AUDIT_KEY_BYTES};
pub use event::{AuditEvent, AuditRecord, CandidateRecord, ModeName};
pub use sink::{AuditError, AuditSink, JsonLinesOptions, JsonLinesSink, NullSink};
pub use time::{AuditTime, BadAuditTime};
pub use verify::{Break, BreakReason, MAX_VERIFIED_LINE, TrailStatus, Unended, Verdict, verify};

/// The version of the audit schema this crate writes, in every record as
/// `"schema"`. It goes up only when a stable field is removed or changes
/// meaning; new events and new fields do not change it (`docs/audit.md`).
/// Version 2 chains the records (`seq`, `prev`), says where sessions
/// begin and end, and names the outcome of a call its provider answered
/// with an error `provider_error` (version 1: `rejected`, the word of a
/// tool left out).
pub const AUDIT_SCHEMA: u32 = 2;

pub use crate::vocabulary::{Outcome, SessionEnd};
/// A sink with the ids of the session and turn it records for.
///
/// Cheap to clone; [`Audit::for_session`] and [`Audit::for_turn`] derive the
/// handles a session and a turn use.
#[derive(Clone)]
pub struct Audit {
    sink: Arc<dyn AuditSink>,
    /// Shared by every handle on the sink: whether records are being lost.
    health: Arc<Health>,
    // Shared by every record of the session and turn, not copied into each.
    session: Option<Arc<str>>,
    turn: Option<Arc<str>>,
}

impl std::fmt::Debug for Audit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Audit")
            .field("session", &self.session)
            .field("turn", &self.turn)
            .finish_non_exhaustive()
    }
}

/// What the sink said of the records it was given.
#[derive(Debug, Default)]
struct Health {
    lost: std::sync::atomic::AtomicU64,
    /// The last record was not written.
    failing: std::sync::atomic::AtomicBool,
    last_error: std::sync::Mutex<Option<AuditError>>,
    /// What the session has told the person of the trail so far.
    told: std::sync::Mutex<Told>,
}

/// What the person was last told of the trail.
#[derive(Debug, Default)]
struct Told {
    /// That it fails (WRITEs are refused), and not since that it recovered.
    failing: bool,
    /// The records lost when they were last told.
    lost: u64,
}

/// News of the trail's health, for the session's notices.
#[derive(Debug)]
pub(crate) enum TrailNews {
    /// It loses records (first said, or again after it had recovered).
    Failing(AuditFailure),
    /// It records again, after the person was told it fails; `lost`
    /// records were lost in all.
    Recovered { lost: u64 },
}

/// Records an audit trail lost: how many, and why the last one was.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditFailure {
    /// Records that could not be written.
    pub lost: u64,
    /// The sink's reason for the last of them.
    pub last_error: AuditError,
}

impl std::fmt::Display for AuditFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = if self.lost == 1 { "" } else { "s" };
        write!(
            f,
            "{} audit record{s} could not be written ({})",
            self.lost, self.last_error
        )
    }
}

impl std::error::Error for AuditFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.last_error)
    }
}

impl Audit {
    /// Records into `sink` with no session or turn.
    pub fn new(sink: Arc<dyn AuditSink>) -> Self {
        Self {
            sink,
            health: Arc::default(),
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
            health: Arc::clone(&self.health),
            session: Some(Arc::from(id.into())),
            turn: None,
        }
    }

    /// The same sink and session, recording for turn `id`.
    pub fn for_turn(&self, id: impl Into<String>) -> Self {
        Self {
            sink: Arc::clone(&self.sink),
            health: Arc::clone(&self.health),
            session: self.session.clone(),
            turn: Some(Arc::from(id.into())),
        }
    }

    /// Records `event` now. A provider's start, failure, restart and stop
    /// are also `tracing` events (target `spear_capabilities::provider`),
    /// for an embedder's subscriber; nothing else is, so no call's
    /// arguments or results reach a log.
    ///
    /// A record the sink could not write is counted ([`Audit::failure`])
    /// and said once to the session; use [`Audit::try_emit`] where going on
    /// unrecorded is not allowed.
    pub fn emit(&self, event: AuditEvent) {
        let _ = self.try_emit(event);
    }

    /// Records `event` now, and says whether it was written.
    ///
    /// # Errors
    /// The sink's, when the record was not written (whole).
    pub fn try_emit(&self, event: AuditEvent) -> Result<(), AuditError> {
        self.write(event, false)
    }

    /// Records `event` now and makes it durable, with every record before
    /// it ([`AuditSink::record_durable`]): a WRITE's approval before the
    /// WRITE is sent, a session's end. It may wait for the disk: call it
    /// off the runtime's I/O threads.
    ///
    /// # Errors
    /// The sink's, when the record was not written, or not made durable.
    pub fn try_emit_durable(&self, event: AuditEvent) -> Result<(), AuditError> {
        self.write(event, true)
    }

    fn write(&self, event: AuditEvent, durable: bool) -> Result<(), AuditError> {
        use std::sync::atomic::Ordering;
        trace_lifecycle(self.session.as_deref().unwrap_or(""), &event);
        let record = AuditRecord {
            time: AuditTime::now(),
            schema: AUDIT_SCHEMA,
            seq: None,
            prev: None,
            session: self.session.clone(),
            turn: self.turn.clone(),
            event,
        };
        let written = if durable {
            self.sink.record_durable(record)
        } else {
            self.sink.record(record)
        };
        let health = &self.health;
        match &written {
            Ok(()) => health.failing.store(false, Ordering::SeqCst),
            Err(e) => {
                tracing::error!(target: "spear_capabilities::audit", reason = %e, "an audit record could not be written");
                health.lost.fetch_add(1, Ordering::SeqCst);
                *health.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.clone());
                health.failing.store(true, Ordering::SeqCst);
            }
        }
        written
    }

    /// Whether the last record given to the sink was lost: a WRITE is then
    /// refused before it is asked for.
    pub fn is_failing(&self) -> bool {
        self.health
            .failing
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The records lost so far on this sink, if any: for the operator (the
    /// CLI says so on stderr and exits non-zero).
    pub fn failure(&self) -> Option<AuditFailure> {
        let lost = self.health.lost.load(std::sync::atomic::Ordering::SeqCst);
        let last_error = self
            .health
            .last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()?;
        (lost > 0).then_some(AuditFailure { lost, last_error })
    }

    /// What the person should hear of the trail now, once: that it fails
    /// (the first time, or again after it recovered), or that it records
    /// again after they were told it fails.
    pub(crate) fn news(&self) -> Option<TrailNews> {
        let mut told = self.health.told.lock().unwrap_or_else(|p| p.into_inner());
        let lost = self.health.lost.load(std::sync::atomic::Ordering::SeqCst);
        if told.failing {
            if self.is_failing() {
                return None;
            }
            *told = Told {
                failing: false,
                lost,
            };
            return Some(TrailNews::Recovered { lost });
        }
        let failure = self.failure().filter(|f| f.lost > told.lost)?;
        *told = Told {
            failing: true,
            lost: failure.lost,
        };
        Some(TrailNews::Failing(failure))
    }
}

/// The `tracing` event of a provider's lifecycle record, if `event` is one.
/// A failure's full message may carry the server's stderr: debug only.
fn trace_lifecycle(session: &str, event: &AuditEvent) {
    const TARGET: &str = "spear_capabilities::provider";
    match event {
        AuditEvent::ProviderStarted {
            provider,
            tools,
            rejected_tools,
            duration_ms,
        } => {
            tracing::info!(target: TARGET, session, provider, tools, rejected_tools, duration_ms, "provider ready")
        }
        AuditEvent::ProviderFailed {
            provider,
            reason,
            message,
        } => {
            tracing::warn!(target: TARGET, session, provider, reason = reason.as_str(), "provider failed");
            tracing::debug!(target: TARGET, session, provider, message = ?message, "provider failure in full");
        }
        AuditEvent::ProviderRestarted {
            provider, attempt, ..
        } => tracing::info!(target: TARGET, session, provider, attempt, "provider restarting"),
        AuditEvent::ProviderStopped { provider, error } => match error {
            None => tracing::info!(target: TARGET, session, provider, "provider stopped"),
            Some(error) => {
                tracing::warn!(target: TARGET, session, provider, error = ?error, "provider stopped with an error")
            }
        },
        _ => {}
    }
}
