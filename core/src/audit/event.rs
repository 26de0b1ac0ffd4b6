//! The records of the audit trail, as data: [`AuditRecord`] and the
//! [`AuditEvent`] it carries, with the values they name. Their form is the
//! contract of `docs/audit.md`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::AuditTime;
use crate::vocabulary::{
    CapabilityClass, Decision, Outcome, RequestClass, Runtime, SessionEnd, TurnKind,
    UnavailableReason, WritePolicy,
};

#[cfg(doc)]
use super::{AUDIT_SCHEMA, JsonLinesSink, MAX_AUDIT_ARGUMENT_BYTES};

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
        /// Why, as the turn was told.
        reason: String,
        /// Why, by name: [`crate::Refusal`] (what `Answer::refusal` says).
        /// `None` in a record written before records carried it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refusal: Option<crate::vocabulary::Refusal>,
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
    /// `capability_invoked`. Serde's own name of the event (its
    /// `rename_all`), written nowhere else; an unknown event's own name, or
    /// `""` when it has none.
    pub fn name(&self) -> String {
        let known;
        let fields = match self {
            AuditEvent::Unknown(fields) => fields,
            event => {
                known = serde_json::to_value(event).unwrap_or_default();
                match &known {
                    Value::Object(fields) => fields,
                    _ => return String::new(),
                }
            }
        };
        let name = fields.get("event").and_then(Value::as_str);
        name.unwrap_or_default().to_owned()
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
