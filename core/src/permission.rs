//! Whether a WRITE may run: the provider's write policy and the session's
//! permission mode must both allow it.
//!
//! | policy \ mode | read-only | ask | auto |
//! |---|---|---|---|
//! | `refuse` | refused | refused | refused |
//! | `confirm` | refused | the person is asked | allowed |
//! | `allow` | refused | allowed | allowed |
//!
//! The gateway refuses a `refuse` policy itself, so no mode can widen it; the
//! mode decides the rest. SPEAR implements [`PermissionMode`] for its own
//! modes; [`ReadOnly`], [`Ask`] and [`Auto`] are the built-in ones.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;

use crate::registry::WritePolicy;

/// A WRITE the turn wants to run, as shown to the person asked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteRequest {
    /// The capability id, `<provider>/<tool>`.
    pub capability: String,
    /// The arguments as compact JSON (bounded, plain text).
    pub arguments: String,
}

/// A session's permission mode, as far as WRITE capabilities go.
#[async_trait]
pub trait PermissionMode: Send + Sync {
    /// The mode's name for messages and the audit trail, e.g. `ask`.
    fn name(&self) -> &str;

    /// Whether `request` may run under a provider policy of `confirm` or
    /// `allow` (never called for `refuse`). The gateway records an approval
    /// as soon as this returns `true`.
    ///
    /// # Cancel safety
    /// The future is dropped when the turn's answer is dropped (the turn
    /// was cancelled): nothing is approved or run then.
    async fn allow_write(&self, policy: WritePolicy, request: &WriteRequest) -> bool;
}

/// Nothing is written: every WRITE is refused.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOnly;

#[async_trait]
impl PermissionMode for ReadOnly {
    fn name(&self) -> &str {
        "read-only"
    }
    async fn allow_write(&self, _: WritePolicy, _: &WriteRequest) -> bool {
        false
    }
}

/// Writes run without asking, where the provider's policy allows them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Auto;

#[async_trait]
impl PermissionMode for Auto {
    fn name(&self) -> &str {
        "auto"
    }
    async fn allow_write(&self, _: WritePolicy, _: &WriteRequest) -> bool {
        true
    }
}

/// The person is asked, through a callback, before a WRITE of a `confirm`
/// provider runs; an `allow` provider's WRITE runs without asking.
#[derive(Clone)]
pub struct Ask {
    ask: Arc<dyn Fn(WriteRequest) -> BoxFuture<'static, bool> + Send + Sync>,
}

impl Ask {
    /// Asks through `ask`, which answers `true` to let the WRITE run.
    pub fn new<F>(ask: F) -> Self
    where
        F: Fn(WriteRequest) -> BoxFuture<'static, bool> + Send + Sync + 'static,
    {
        Self { ask: Arc::new(ask) }
    }
}

impl fmt::Debug for Ask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ask").finish_non_exhaustive()
    }
}

#[async_trait]
impl PermissionMode for Ask {
    fn name(&self) -> &str {
        "ask"
    }
    async fn allow_write(&self, policy: WritePolicy, request: &WriteRequest) -> bool {
        match policy {
            WritePolicy::Allow => true,
            WritePolicy::Confirm => (self.ask)(request.clone()).await,
            WritePolicy::Refuse => false,
        }
    }
}
