//! How a session is set up: [`SessionOptions`].

use std::sync::Arc;
use std::time::Duration;

use crate::audit::Audit;
use crate::exposure::Limits;
use crate::kind::Connector;
use crate::permission::PermissionMode;
use crate::tokens::{EstimatedTokens, TokenCounter};

#[cfg(doc)]
use crate::kind::KindConnector;

/// How a session is set up.
#[derive(Clone)]
#[non_exhaustive]
pub struct SessionOptions {
    /// The session's id, in every audit record.
    pub id: String,
    /// The session's permission mode.
    pub permission: Arc<dyn PermissionMode>,
    /// Where audit records go.
    pub audit: Audit,
    /// How providers are started; `None` starts each with its kind from the
    /// registry's kinds ([`KindConnector`]).
    pub connector: Option<Arc<dyn Connector>>,
    /// Exposure limits.
    pub limits: Limits,
    /// How tokens are counted.
    pub tokens: Arc<dyn TokenCounter>,
    /// How long the operator lets a provider's start go on
    /// ([`SessionOptions::with_start_wait`]); `None`: as its `timeout`
    /// allows.
    pub start_wait: Option<Duration>,
}

impl std::fmt::Debug for SessionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionOptions")
            .field("id", &self.id)
            .field("permission", &self.permission.name())
            .field("connector", &self.connector)
            .field("limits", &self.limits)
            .field("start_wait", &self.start_wait)
            .finish_non_exhaustive()
    }
}

impl SessionOptions {
    /// A session `id` with `permission`, no audit trail, providers started
    /// by their kinds, and the default limits and token estimate.
    pub fn new(id: impl Into<String>, permission: Arc<dyn PermissionMode>) -> Self {
        Self {
            id: id.into(),
            permission,
            audit: Audit::null(),
            connector: None,
            limits: Limits::default(),
            tokens: Arc::new(EstimatedTokens),
            start_wait: None,
        }
    }

    /// Lets each provider's start go on up to `wait`, for a server that
    /// needs long the first time (an `npx -y` or `uvx` download): each
    /// request of the start (a handshake, each page of the listing) may take
    /// `wait`, a turn waits for the start `wait` and a second, and as long
    /// again for the listing once it connected, and the whole start is
    /// bounded by the longer of `wait` and its start budget (ten times the
    /// `timeout`). A `wait` shorter than the entry's `timeout` changes
    /// nothing. Calls keep their provider's `timeout`. Without it (the
    /// default) each request of a start takes at most the entry's
    /// `timeout`, as the spec has it, and a turn waits that and a second;
    /// a turn in SPEAR never needs this.
    pub fn with_start_wait(mut self, wait: Duration) -> Self {
        self.start_wait = Some(wait);
        self
    }

    /// How long each request of the start of a provider with request
    /// timeout `timeout` may take.
    pub(crate) fn start_timeout(&self, timeout: Duration) -> Duration {
        self.start_wait.map_or(timeout, |wait| wait.max(timeout))
    }

    /// Records into `audit`.
    pub fn with_audit(mut self, audit: Audit) -> Self {
        self.audit = audit;
        self
    }

    /// Starts providers with `connector`.
    pub fn with_connector(mut self, connector: Arc<dyn Connector>) -> Self {
        self.connector = Some(connector);
        self
    }

    /// Uses other exposure limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Counts tokens with `tokens`.
    pub fn with_token_counter(mut self, tokens: Arc<dyn TokenCounter>) -> Self {
        self.tokens = tokens;
        self
    }
}
