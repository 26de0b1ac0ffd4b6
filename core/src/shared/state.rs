//! What a provider of a session is, as the gateway's turns and the
//! deployment's operator see it: a started incarnation ([`Ready`]), how it
//! ended, what a turn makes of it ([`View`]) and the operator's
//! [`ProviderState`]. The life cycle that moves between them is
//! `shared/slot.rs`.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::admission::Tool;
use crate::provider::{Provider, ProviderInfo};
use crate::vocabulary::UnavailableReason;

/// A started provider and its admitted tools: one incarnation of a slot.
#[derive(Debug)]
pub(crate) struct Ready {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) tools: Vec<Tool>,
    pub(super) started_in: Duration,
    /// Its provider declares it offers no tools at all.
    pub(super) declares_no_tools: bool,
    /// How this incarnation ended, once it has: every turn that admitted it
    /// sees it, and none of its calls goes to a later incarnation.
    pub(super) ended: OnceLock<Ended>,
}

/// Why an incarnation of a provider is no longer usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// It failed.
    Failed(UnavailableReason),
    /// The session was closed.
    Closed,
}

impl Ready {
    /// How it ended, if it has.
    pub(crate) fn ended(&self) -> Option<Ended> {
        self.ended.get().copied()
    }
}

/// What a turn makes of a slot when it begins.
pub(crate) enum View {
    /// Ready, with its tools.
    Ready(Arc<Ready>),
    /// Unavailable to the turn, with the category it is told.
    Unavailable(UnavailableReason),
    /// The session is closed.
    Closed,
}

/// How a provider is doing, for the deployment's operator.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProviderState {
    /// Started and listed.
    Ready {
        /// How long start and listing took.
        started_in: Duration,
        /// How many usable tools it has.
        tools: usize,
        /// It declares it offers no tools at all (an MCP server without
        /// the `tools` capability): a provider with no capabilities, not
        /// one whose listing came back empty.
        declares_no_tools: bool,
        /// What its kind says of it ([`Provider::info`], asked when the
        /// state is read): e.g. an MCP server's name, version and protocol.
        /// For the operator only: a turn is never shown any of it.
        info: ProviderInfo,
    },
    /// Being started, in the background.
    Starting {
        /// How long it has been starting.
        since: Duration,
    },
    /// Left out for now: one that crashed or timed out may be started
    /// again for a later turn, a few times a session.
    Unavailable {
        /// The short category a turn is told.
        reason: UnavailableReason,
        /// The full reason (may carry the command, OS error and stderr): for
        /// the operator only, never for a turn.
        message: String,
    },
    /// Stopped because the session was closed.
    Stopped,
}
