#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod admission;
pub mod audit;
pub mod checks;
pub mod command;
pub mod connector;
mod error;
pub mod exposure;
pub mod framing;
pub mod kind;
pub mod messages;
pub mod names;
mod notice;
pub mod permission;
mod provider;
pub mod registry;
pub mod scope;
pub mod selection;
pub mod session;
pub mod tokens;
pub mod turn;
pub mod vetting;

pub use audit::{
    AUDIT_SCHEMA, Audit, AuditError, AuditEvent, AuditFailure, AuditRecord, AuditSink, AuditTime,
    JsonLinesSink, ModeName, NullSink, Outcome,
};
pub use connector::{Connector, KindConnector};
pub use error::{Error, TurnError, UnavailableReason};
pub use exposure::{CapabilityClass, Exposure, Limits, Shown, ShownCapability, ShownUnavailable};
pub use kind::{ConnectFuture, ConnectRequest, DEFAULT_KIND, KindSettings, Kinds, ProviderKind};
pub use names::{Name, UnknownName};
pub use notice::Notice;
pub use permission::{Ask, Auto, PermissionMode, ReadOnly, WriteRequest};
pub use provider::{
    CallRequest, CallResult, Content, Provider, ProviderInfo, RejectedTool, ResourceBody, ToolList,
    ToolSpec,
};
pub use registry::{
    EntryCheck, EntryProblem, EntryWarning, Position, ProviderEntry, RefusedEntry, Registry,
    RequestClass, WritePolicy,
};
pub use scope::Scope;
pub use selection::{Decision, Runtime, Selection, TurnContext, TurnKind, select};
pub use session::{ProviderState, Session, SessionOptions};
pub use tokens::{EstimatedTokens, TokenCounter};
pub use turn::{Answer, AnswerStatus, Turn};

/// The attribute every implementation of [`Provider`], [`PermissionMode`]
/// and [`Connector`] needs (their methods are `async`): re-exported so that
/// an implementation needs no dependency of its own.
pub use async_trait::async_trait;

// Provider kinds need these at their registration site without naming the
// crates themselves.
#[doc(hidden)]
pub use inventory;
