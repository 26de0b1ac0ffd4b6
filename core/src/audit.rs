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
mod file;
mod sink;
mod tail;
mod time;
mod verify;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use arguments::MAX_AUDIT_ARGUMENT_BYTES;
pub(crate) use arguments::bounded as bounded_arguments;
pub use chain::{AuditKey, AuditKeyError, MAX_AUDIT_KEY_BYTES, MIN_AUDIT_KEY_BYTES};
pub use sink::{AuditError, AuditSink, JsonLinesOptions, JsonLinesSink, NullSink};
pub use time::{AuditTime, BadAuditTime};
pub use verify::{Break, BreakReason, MAX_VERIFIED_LINE, TrailStatus, Unended, Verdict, verify};

/// The version of the audit schema this crate writes, in every record as
/// `"schema"`. It goes up only when a stable field is removed or changes
/// meaning; new events and new fields do not change it (`docs/audit.md`).
/// Version 2 chains the records (`seq`, `prev`) and says where sessions
/// begin and end; a version-1 reader reads it, the fields being additions.
pub const AUDIT_SCHEMA: u32 = 2;

use crate::UnavailableReason;
use crate::exposure::CapabilityClass;
use crate::names::named;
use crate::registry::{RequestClass, WritePolicy};
use crate::selection::{Decision, Runtime, TurnKind};

/// One audit record: when, in which session and turn, and what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AuditRecord {
    /// When, to the millisecond (RFC 3339 UTC in the record).
    pub time: AuditTime,
    /// The schema version the record was written with, [`AUDIT_SCHEMA`]
    /// for this crate's; 0 for a record written before records carried it.
    #[serde(default)]
    pub schema: u32,
    /// The record's position in its trail, from 1, when the sink chains
    /// its records (set by the sink: [`JsonLinesSink`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The link of the line before it in its trail: the SHA-256 of that
    /// line as written (or its HMAC-SHA-256 under the deployment's key),
    /// 64 hex digits, 64 zeros for a trail's first line. Set by the sink.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<String>,
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
///
/// A record of an event this version does not know, or of a known event
/// with a value it does not know (a new outcome, say), reads as
/// [`AuditEvent::Unknown`] with its fields as they were: a reader keeps it
/// and writes it back unchanged.
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
        tasks: Vec<RequestClass>,
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
        task: TurnKind,
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
    /// A tool's declared output schema cannot be used: the tool stays, its
    /// structured results are not checked. Said once.
    OutputUnchecked {
        /// The provider's id.
        provider: String,
        /// The tool's name.
        tool: String,
        /// Why.
        reason: String,
    },
    /// A name in a provider's `read` list that it does not offer: the tool
    /// meant (a misspelling?) stays a WRITE.
    ReadNotOffered {
        /// The provider's id.
        provider: String,
        /// The name as the registry gives it.
        tool: String,
    },
    /// A provider that had failed is started again, for a later turn.
    ProviderRestarted {
        /// The provider's id.
        provider: String,
        /// Which restart of the session this is, from 1.
        attempt: u32,
        /// The full message of the failure before it.
        previous: String,
    },
    /// A provider could not start, timed out or failed; turns are told it
    /// is unavailable until it is started again.
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
        class: CapabilityClass,
        /// The arguments, as JSON; cut as JSON when their compact form is
        /// over [`MAX_AUDIT_ARGUMENT_BYTES`] (`arguments_cut` says so).
        arguments: Value,
        /// The arguments were cut: the bytes of their whole compact JSON.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments_cut: Option<u64>,
        /// How the call came out.
        outcome: Outcome,
        /// How long the call took, in milliseconds.
        duration_ms: u64,
        /// The call ran, and its structured result does not match the
        /// tool's declared output schema: the first reason, bounded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured_mismatch: Option<String>,
        /// The call ran, and its structured result was not checked against
        /// the tool's declared output schema: why (it was too long to check
        /// within the call's time bound, say).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured_unchecked: Option<String>,
    },
    /// The session's permission mode allowed a WRITE: recorded when it is
    /// given, before the call is sent, whatever happens to the call.
    WriteApproved {
        /// The capability id.
        capability: String,
        /// The arguments, as JSON; cut as JSON when their compact form is
        /// over [`MAX_AUDIT_ARGUMENT_BYTES`] (`arguments_cut` says so).
        arguments: Value,
        /// The arguments were cut: the bytes of their whole compact JSON.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        arguments_cut: Option<u64>,
        /// The permission mode that allowed it.
        mode: ModeName,
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
    /// A session began; its records carry its id.
    SessionStarted {
        /// The session's permission mode.
        mode: ModeName,
    },
    /// A session ended: written once, and synced, however it ended. A
    /// session with no end record was cut short (its process died).
    SessionEnded {
        /// How it ended.
        how: SessionEnd,
    },
    /// A session shut a provider down.
    ProviderStopped {
        /// The provider's id.
        provider: String,
        /// An error while stopping, if any.
        error: Option<String>,
    },
    /// A record this version cannot read as one of the events above (a
    /// later version's event, or a value this version does not know): its
    /// fields, `event` among them, as they were. Never written by this
    /// version of its own accord.
    #[serde(untagged)]
    Unknown(Map<String, Value>),
}

impl AuditEvent {
    /// The event's name, as the record's `"event"` says it:
    /// `capability_invoked`. An unknown event's own name, or `""` when it
    /// has none.
    pub fn name(&self) -> &str {
        match self {
            AuditEvent::ProviderRegistered { .. } => "provider_registered",
            AuditEvent::ProviderRefused { .. } => "provider_refused",
            AuditEvent::CapabilityFamilySelected { .. } => "capability_family_selected",
            AuditEvent::GatewayAbsent { .. } => "gateway_absent",
            AuditEvent::ProviderStarted { .. } => "provider_started",
            AuditEvent::ToolRejected { .. } => "tool_rejected",
            AuditEvent::OutputUnchecked { .. } => "output_unchecked",
            AuditEvent::ReadNotOffered { .. } => "read_not_offered",
            AuditEvent::ProviderRestarted { .. } => "provider_restarted",
            AuditEvent::ProviderFailed { .. } => "provider_failed",
            AuditEvent::CapabilityFamilyExposed { .. } => "capability_family_exposed",
            AuditEvent::CapabilityIndexExposed { .. } => "capability_index_exposed",
            AuditEvent::CapabilityDescribed { .. } => "capability_described",
            AuditEvent::CapabilityInvoked { .. } => "capability_invoked",
            AuditEvent::WriteApproved { .. } => "write_approved",
            AuditEvent::CapabilityRefused { .. } => "capability_refused",
            AuditEvent::ProviderStopped { .. } => "provider_stopped",
            AuditEvent::SessionStarted { .. } => "session_started",
            AuditEvent::SessionEnded { .. } => "session_ended",
            AuditEvent::Unknown(fields) => {
                fields.get("event").and_then(Value::as_str).unwrap_or("")
            }
        }
    }
}

/// The permission mode that allowed a WRITE, by name: the built-in modes,
/// or an embedder's own by the name it gives.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
#[non_exhaustive]
pub enum ModeName {
    /// [`crate::ReadOnly`]: `read-only`.
    ReadOnly,
    /// [`crate::Auto`]: `auto`.
    Auto,
    /// [`crate::Ask`]: `ask`.
    Ask,
    /// An embedder's own mode, by its name.
    Other(String),
}

impl ModeName {
    /// The name, as the record writes it.
    pub fn as_str(&self) -> &str {
        match self {
            ModeName::ReadOnly => "read-only",
            ModeName::Auto => "auto",
            ModeName::Ask => "ask",
            ModeName::Other(name) => name,
        }
    }
}

impl From<String> for ModeName {
    fn from(name: String) -> Self {
        match name.as_str() {
            "read-only" => ModeName::ReadOnly,
            "auto" => ModeName::Auto,
            "ask" => ModeName::Ask,
            _ => ModeName::Other(name),
        }
    }
}

impl From<ModeName> for String {
    fn from(name: ModeName) -> Self {
        match name {
            ModeName::Other(name) => name,
            known => known.as_str().to_owned(),
        }
    }
}

impl std::fmt::Display for ModeName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

named! {
    /// How a call that went to a provider came out.
    #[non_exhaustive]
    pub enum Outcome {
        /// The tool answered.
        Ok = "ok",
        /// The tool answered that it failed (`isError`).
        ToolError = "tool_error",
        /// The provider answered the call with an error.
        Rejected = "rejected",
        /// The provider answered with a result that cannot be read; it
        /// stays available.
        Unreadable = "unreadable",
        /// The provider failed during the call and is unavailable.
        Unavailable = "unavailable",
        /// The answer was dropped (the turn was cancelled) after the call
        /// was sent: the provider may have done it.
        Cancelled = "cancelled",
        /// The session was closed while the call was in flight.
        Closed = "closed",
    }
}

named! {
    /// How a session ended.
    #[non_exhaustive]
    pub enum SessionEnd {
        /// It was closed (`Session::close`).
        Closed = "closed",
        /// It was dropped without `close`: its providers were ended at once.
        Dropped = "dropped",
        /// `close` ran where no tokio runtime was: its providers were
        /// ended at once.
        RuntimeGone = "runtime_gone",
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
    /// The session has been told.
    told: std::sync::atomic::AtomicBool,
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

    /// The failure, the first time it is asked for: what the session's
    /// notice says once.
    pub(crate) fn failure_untold(&self) -> Option<AuditFailure> {
        let failure = self.failure()?;
        (!self
            .health
            .told
            .swap(true, std::sync::atomic::Ordering::SeqCst))
        .then_some(failure)
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
