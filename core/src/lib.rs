#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod audit;
pub mod command;
mod error;
pub mod kind;
mod provider;
pub mod registry;
pub mod scope;
pub mod selection;

pub use audit::{Audit, AuditEvent, AuditRecord, AuditSink, JsonLinesSink, NullSink};
pub use error::{Error, UnavailableReason};
pub use kind::{
    ConnectFuture, ConnectRequest, DEFAULT_KIND, KindSettings, ProviderKind, find_kind, kinds,
};
pub use provider::{
    CallRequest, CallResult, Content, Provider, ProviderInfo, RejectedTool, ResourceBody, ToolList,
    ToolSpec,
};
pub use registry::{EntryProblem, ProviderEntry, RefusedEntry, Registry, TaskClass, WritePolicy};
pub use scope::Scope;
pub use selection::{Decision, Runtime, Selection, TaskKind, TurnContext, select};

// Provider kinds need these at their registration site without naming the
// crates themselves.
#[doc(hidden)]
pub use inventory;
