#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

// The root is what an embedder (SPEAR) uses, with the provider trait and
// its values flat (as object_store keeps its trait and values); a kind's
// author finds the rest in `kind`, an audit reader in `audit`, the
// registry's details in `registry`, what a turn is shown in `exposure`,
// and the choice of a turn's providers in `selection`. What only the
// CLI, benches, fuzz targets and tests use is in `internals`.
mod admission;
pub mod audit;
mod checks;
mod command;
mod compiled;
mod error;
pub mod exposure;
mod framing;
mod keywords;
pub mod kind;
mod messages;
mod names;
mod notice;
mod permission;
mod provider;
pub mod registry;
mod scope;
pub mod selection;
mod session;
mod shared;
mod shown;
mod tokens;
mod turn;
mod vetting;
mod vocabulary;

pub use audit::Audit;
pub use command::{CapabilityId, Command};
pub use error::{Error, TurnError};
pub use names::{Name, UnknownName};
pub use notice::Notice;
pub use permission::{Ask, Auto, PermissionMode, ReadOnly, WriteRequest};
pub use provider::{
    CallRequest, CallResult, Content, Provider, ProviderInfo, RejectedTool, ResourceBody, ToolList,
    ToolSpec,
};
pub use registry::Registry;
pub use selection::TurnContext;
pub use session::{Session, SessionOptions};
pub use shared::ProviderState;
pub use tokens::{EstimatedTokens, TokenCounter};
pub use turn::{Answer, Turn};
pub use vocabulary::{AnswerStatus, Refusal, Runtime, TurnKind, UnavailableReason, WritePolicy};

/// The attribute every implementation of [`Provider`], [`PermissionMode`]
/// and [`kind::Connector`] needs (their methods are `async`): re-exported
/// so that an implementation needs no dependency of its own.
pub use async_trait::async_trait;

/// The future [`Ask::new`] takes and [`kind::ConnectFuture`] is:
/// re-exported so that a mode or a kind needs no `futures` dependency of
/// its own.
pub use futures::future::BoxFuture;

/// The JSON values of [`kind::KindSettings`], [`CallRequest`] and
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
        pub use crate::admission::{Admission, admit, class_of};
    }
    pub mod checks {
        pub use crate::checks::ArgumentSchema;
    }
    pub mod command {
        pub use crate::command::{
            COMMAND_NAME, Construct, Lexed, Recognized, Refusal, Token, TokenKind, Unterminated,
            lex, recognize, recognize_unfiltered,
        };
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
        pub use crate::registry::document::{BYTE_ORDER_MARK, edit_tree};
        pub use crate::registry::file::{open, read};
    }
    pub mod session {
        pub use crate::shared::{TIMEOUT_GRACE, start_budget, start_budget_waiting};
    }
    pub mod tokens {
        pub use crate::tokens::WORD_LETTERS;
    }
    pub mod vetting {
        pub use crate::vetting::{
            Declared, ListingBudget, MAX_LISTING_PATTERN_BYTES, MAX_PATTERN_SIZE, MAX_SCHEMA_NODES,
            Vetted,
        };
    }
}
