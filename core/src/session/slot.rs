//! One provider's life in a session: started once, on the first turn that
//! selects it, then reused; failed at most once, and then left out.
//!
//! Starting is connecting (the kind's `connect`) and listing, each under the
//! entry's timeout and [`TIMEOUT_GRACE`]; the tools listed are admitted
//! ([`crate::admission`]) and every rejection recorded. A failure, at start
//! or later, is recorded once with its full reason, said once in the
//! session's notices, and releases the provider.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::admission::{Tool, admit};
use crate::audit::AuditEvent;
use crate::framing::one_line;
use crate::messages;
use crate::registry::ProviderEntry;
use crate::session::{Inner, TIMEOUT_GRACE, lock};
use crate::{Error, Provider, UnavailableReason};

/// A started provider and its admitted tools.
#[derive(Debug)]
pub(crate) struct Ready {
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) tools: Vec<Tool>,
    started_in: Duration,
}

/// One registered provider of a session: not started yet, started, or failed.
pub(crate) struct Slot {
    pub(crate) entry: ProviderEntry,
    started: tokio::sync::OnceCell<Result<Arc<Ready>, UnavailableReason>>,
    /// Why it failed, short and in full; set once.
    failed: Mutex<Option<(UnavailableReason, String)>>,
}

/// How a started provider is doing, for the deployment's operator.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProviderState {
    /// Started and listed.
    Ready {
        /// How long start and listing took.
        started_in: Duration,
        /// How many usable tools it has.
        tools: usize,
    },
    /// Left out of the session.
    Unavailable {
        /// The short category a turn is told.
        reason: UnavailableReason,
        /// The full reason (may carry the command, OS error and stderr): for
        /// the operator only, never for a turn.
        message: String,
    },
}

impl Slot {
    pub(crate) fn new(entry: ProviderEntry) -> Self {
        Self {
            entry,
            started: tokio::sync::OnceCell::new(),
            failed: Mutex::new(None),
        }
    }

    /// Why the provider is unavailable, if it is.
    pub(crate) fn unavailable(&self) -> Option<UnavailableReason> {
        if let Some((reason, _)) = &*lock(&self.failed) {
            return Some(*reason);
        }
        self.started.get()?.as_ref().err().copied()
    }

    /// The provider and its tools when it is ready, why not when it failed,
    /// `None` when it has not been started.
    pub(crate) fn state(&self) -> Option<Result<Arc<Ready>, UnavailableReason>> {
        match self.unavailable() {
            Some(reason) => Some(Err(reason)),
            None => self.started.get().cloned(),
        }
    }

    /// The state the operator sees, with the full reason of a failure.
    pub(crate) fn operator_state(&self) -> Option<ProviderState> {
        if let Some((reason, message)) = &*lock(&self.failed) {
            return Some(ProviderState::Unavailable {
                reason: *reason,
                message: message.clone(),
            });
        }
        let ready = self.started.get()?.as_ref().ok()?;
        Some(ProviderState::Ready {
            started_in: ready.started_in,
            tools: ready.tools.len(),
        })
    }

    /// The started provider, whether or not it failed since.
    pub(crate) fn provider(&self) -> Option<Arc<dyn Provider>> {
        match self.started.get() {
            Some(Ok(ready)) => Some(Arc::clone(&ready.provider)),
            _ => None,
        }
    }

    /// Starts the provider unless it was started (or tried) before.
    pub(crate) async fn ensure_started(&self, inner: &Inner) {
        self.started
            .get_or_init(|| async {
                match start(inner, &self.entry).await {
                    Ok(ready) => Ok(Arc::new(ready)),
                    Err(e) => {
                        let reason = e
                            .unavailable_reason()
                            .unwrap_or(UnavailableReason::DidNotStart);
                        self.fail(inner, reason, &e);
                        Err(reason)
                    }
                }
            })
            .await;
    }

    /// Records the provider's failure once (audit record and one notice)
    /// and releases a provider that had started.
    pub(crate) fn fail(&self, inner: &Inner, reason: UnavailableReason, error: &Error) {
        {
            let mut failed = lock(&self.failed);
            if failed.is_some() {
                return;
            }
            *failed = Some((reason, error.to_string()));
        }
        inner.audit.emit(AuditEvent::ProviderFailed {
            provider: self.entry.id.clone(),
            reason,
            message: error.to_string(),
        });
        inner.notice(messages::notice_unavailable(&self.entry.id, reason));
        if let Some(provider) = self.provider() {
            tokio::spawn(async move {
                let _ = provider.shutdown().await;
            });
        }
    }
}

/// Connects `entry`'s provider and lists its tools, each under the entry's
/// timeout and the grace, and admits its usable tools.
async fn start(inner: &Inner, entry: &ProviderEntry) -> Result<Ready, Error> {
    let began = Instant::now();
    let timed_out = || Error::Timeout {
        provider: entry.id.clone(),
        after: entry.timeout,
        stderr: String::new(),
    };
    let connect = inner.connector.connect(entry, inner.registry.base_dir());
    let provider = tokio::time::timeout(entry.timeout + TIMEOUT_GRACE, connect)
        .await
        .map_err(|_| timed_out())??;
    let listed =
        match tokio::time::timeout(entry.timeout + TIMEOUT_GRACE, provider.list_tools()).await {
            Ok(Ok(list)) => list,
            Ok(Err(e)) => {
                let _ = provider.shutdown().await;
                return Err(e);
            }
            Err(_) => {
                let _ = provider.shutdown().await;
                return Err(timed_out());
            }
        };
    let admission = admit(entry, listed);
    for rejected in &admission.rejected {
        inner.audit.emit(AuditEvent::ToolRejected {
            provider: entry.id.clone(),
            tool: one_line(&rejected.name, 200),
            reason: one_line(&rejected.reason, 500),
        });
    }
    inner.audit.emit(AuditEvent::ProviderStarted {
        provider: entry.id.clone(),
        tools: admission.tools.len(),
        rejected_tools: admission.rejected.len(),
        duration_ms: millis(began.elapsed()),
    });
    Ok(Ready {
        provider,
        tools: admission.tools,
        started_in: began.elapsed(),
    })
}

/// `d` in whole milliseconds, for audit records.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
