#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

// The modules are the crate's own; what SPEAR and a kind author use is
// re-exported below, and what only the CLI, benches, fuzz targets and tests
// use is in `internals`.
mod admission;
pub mod audit;
mod checks;
mod command;
mod compiled;
mod connector;
mod error;
mod exposure;
mod framing;
mod keywords;
mod kind;
mod messages;
mod names;
mod notice;
mod permission;
mod provider;
mod registry;
mod scope;
mod selection;
mod session;
mod tokens;
mod turn;
mod vetting;

pub use audit::{
    AUDIT_SCHEMA, Audit, AuditError, AuditEvent, AuditFailure, AuditRecord, AuditSink, AuditTime,
    BadAuditTime, CandidateRecord, JsonLinesSink, MAX_AUDIT_ARGUMENT_BYTES, ModeName, NullSink,
    Outcome,
};
pub use connector::{Connector, KindConnector};
pub use error::{Error, TurnError, UnavailableReason};
pub use exposure::{CapabilityClass, Exposure, Limits, Shown, ShownCapability, ShownUnavailable};
pub use kind::{
    CheckFn, ConnectFuture, ConnectRequest, DEFAULT_KIND, KindSettings, Kinds, ProviderKind,
};
pub use names::{Name, UnknownName};
pub use notice::Notice;
pub use permission::{Ask, Auto, PermissionMode, ReadOnly, WriteRequest};
pub use provider::{
    CallRequest, CallResult, Content, Provider, ProviderInfo, RejectedTool, ResourceBody, ToolList,
    ToolSpec,
};
pub use registry::{
    CAPABILITIES_FILE_NAME, CAPABILITIES_FILE_VAR, EntryCheck, EntryProblem, EntryProblemKind,
    EntryWarning, Fields, Position, ProviderEntry, RefusedEntry, Registry, RequestClass,
    WritePolicy, type_name,
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

/// The registration of a provider kind, for [`Kinds::linked`]:
/// `spear_capabilities::inventory::submit! { KIND }` in the kind's crate,
/// with no dependency of its own.
pub use inventory;

/// The future [`Ask::new`] takes and [`ConnectFuture`] is: re-exported so
/// that a mode or a kind needs no `futures` dependency of its own.
pub use futures::future::BoxFuture;

/// The JSON values of [`KindSettings`], [`CallRequest`] and
/// [`CallResult`]: re-exported so that an embedder or a kind uses the same
/// version of `serde_json` as this crate.
pub use serde_json;

/// What only the workspace's own operator CLI, benches, fuzz targets and
/// tests use: the recognizer's lexer, framing, vetting and admission
/// internals, the sentences a turn reads, limits. **Not API**: it changes
/// without notice; SPEAR and a kind need nothing from it.
///
/// The module tree itself is not public:
///
/// ```compile_fail
/// let _ = spear_capabilities::messages::NO_RUNTIME;
/// ```
///
/// ```
/// let _ = spear_capabilities::internals::messages::NO_RUNTIME;
/// ```
#[doc(hidden)]
pub mod internals {
    macro_rules! all_of {
        ($($module:ident),+ $(,)?) => {
            $(
                #[allow(missing_docs)]
                pub mod $module {
                    pub use crate::$module::*;
                }
            )+
        };
    }
    all_of!(
        admission, audit, checks, command, compiled, connector, exposure, framing, kind, messages,
        names, permission, registry, scope, selection, session, tokens, turn, vetting,
    );
}
