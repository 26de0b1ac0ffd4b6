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
mod shared;
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
pub use session::{Session, SessionOptions};
pub use shared::ProviderState;
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
    #![allow(missing_docs)]

    pub mod admission {
        pub use crate::admission::{Admission, admit, class_of, tool_name_problem};
    }
    pub mod checks {
        pub use crate::checks::ArgumentSchema;
    }
    pub mod command {
        pub use crate::command::{
            COMMAND_NAME, CapabilityId, Command, Recognized, TokenKind, lex, recognize,
            recognize_unfiltered,
        };
    }
    pub mod exposure {
        pub use crate::exposure::expose;
    }
    pub mod framing {
        pub use crate::framing::{
            FrameHead, MAX_DESCRIPTION_CHARS, MAX_RESULT_CHARS, MAX_SHOWN_SCHEMA_CHARS,
            MAX_SHOWN_SCHEMA_NAMES_CHARS, SchemaCut, block, json_text, neutralise, one_line,
            schema_text, strip,
        };
    }
    pub mod messages {
        pub use crate::messages::{NO_RUNTIME, PROVIDER_LINE, index_line, schema_cut, seconds};
    }
    pub mod registry {
        pub use crate::registry::{
            BYTE_ORDER_MARK, CAPABILITIES_FILE_VAR, DEFAULT_TIMEOUT, MAX_ID_LEN,
            MAX_REGISTRY_BYTES, RefusedEntry, edit_tree, open, read,
        };
    }
    pub mod selection {
        pub use crate::selection::{Decision, select};
    }
    pub mod session {
        pub use crate::shared::{TIMEOUT_GRACE, start_budget, start_budget_waiting};
    }
    pub mod vetting {
        pub use crate::vetting::{
            ListingBudget, MAX_LISTING_PATTERN_BYTES, MAX_PATTERN_SIZE, MAX_SCHEMA_NODES,
        };
    }
}
