//! Sessions: the capability gateway SPEAR opens once per session.
//!
//! A [`Session`] holds the registry, the permission mode, the audit trail and
//! the providers it has started (each is started once, on the
//! first turn that selects it, and reused by later turns). Each turn of the
//! session is a [`Turn`], begun with [`Session::begin_turn`]. A provider that
//! cannot start, times out or fails is left out and recorded; the session's
//! notices say so once; later turns are told it is unavailable by name.
//!
//! It is not where commands are answered (that is [`crate::turn`]) nor where
//! the wording a turn reads is kept ([`crate::messages`]).
//!
//! ```
//! use std::path::Path;
//! use std::sync::Arc;
//! use spear_capabilities::{
//!     AnswerStatus, Audit, Auto, Registry, Session, SessionOptions, TurnKind, TurnContext,
//! };
//! use spear_testkit::{MockConnector, MockProvider};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // SPEAR loads the registry once (here from text; usually Registry::load),
//! // with the provider kinds it links (usually `spear_providers::kinds()`).
//! let file = br#"{"providers": [
//!     {"id": "notes", "kind": "mock", "scope": "corpus fw", "read": ["get_note"]}
//! ]}"#;
//! let kinds = spear_testkit::kinds::mock();
//! let path = Path::new("/etc/spear/capabilities.json");
//! let registry = Registry::parse(file, path, &kinds, &Audit::null())?;
//!
//! // A deployment starts providers with their kinds (the default connector);
//! // here a mock provider stands in for the server.
//! let (notes, script) = MockProvider::new("notes");
//! script.add_simple_tool("get_note", "Read one note.", &["id"]);
//! let connector = MockConnector::new();
//! connector.add(notes);
//!
//! let session = Session::open(
//!     Arc::new(registry),
//!     SessionOptions::new("session-1", Arc::new(Auto)).with_connector(connector),
//! );
//! let turn = session
//!     .begin_turn(TurnContext::new("/src/fw", TurnKind::Implementation).with_project("fw"))
//!     .await?;
//! assert!(turn.shown().text.contains("notes/get_note (READ)"));
//!
//! // Every command line of the turn's terminal goes through `answer` first.
//! assert_eq!(turn.answer("cargo test").await, None); // not ours: the shell runs it
//! let answer = turn
//!     .answer(r#"spear-capability invoke notes/get_note '{"id": "7"}'"#)
//!     .await
//!     .expect("ours: never handed to a shell");
//! assert_eq!(answer.status, AnswerStatus::Ok);
//! assert!(answer.text.starts_with("External content from provider `notes`"));
//!
//! assert!(session.take_notices().is_empty());
//! session.close().await;
//! # Ok(())
//! # }
//! ```

pub(crate) mod options;

use std::sync::Arc;
use std::time::Duration;

use crate::audit::{Audit, AuditEvent, AuditFailure, ModeName, SessionEnd, TrailNews};
use crate::error::Error;
use crate::error::TurnError;
use crate::kind::{Connector, KindConnector};
use crate::notice::Notice;
use crate::registry::Registry;
use crate::selection::{TurnContext, select};
use crate::shared::{ProviderState, Shared};
use crate::turn::Turn;

pub use options::SessionOptions;

/// How long `close` waits for calls in flight to stop waiting (and send
/// their cancellations) before it shuts their providers down.
const CANCEL_WAIT: Duration = Duration::from_secs(1);

/// One SPEAR session: its permission mode, audit trail and started providers.
///
/// Cheap to clone: clones share the providers.
#[derive(Clone)]
pub struct Session {
    inner: Arc<Shared>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.inner.options.id)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// The audit records this session's sink could not write, if any: the
    /// operator must hear of it (the CLI says so and exits non-zero).
    pub fn audit_failure(&self) -> Option<AuditFailure> {
        self.inner.audit.failure()
    }

    /// How many providers are still being stopped in the background (one
    /// that failed, e.g. after a timeout, gets its whole stop sequence),
    /// and calls still in flight: [`Session::close`] waits for them.
    pub fn stops_pending(&self) -> usize {
        self.inner.tracked.len()
    }

    /// Opens a session over `registry`. Nothing starts until a turn needs it.
    pub fn open(registry: Arc<Registry>, options: SessionOptions) -> Self {
        let audit = options.audit.for_session(options.id.clone());
        audit.emit(AuditEvent::SessionStarted {
            mode: ModeName::from(options.permission.name().to_owned()),
        });
        let connector = options.connector.clone().unwrap_or_else(|| {
            Arc::new(KindConnector::new(registry.kinds().clone())) as Arc<dyn Connector>
        });
        Self {
            inner: Arc::new(Shared::new(registry, options, connector, audit)),
        }
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.inner.options.id
    }

    /// Begins a turn: selects its providers, starts those not started yet
    /// (and those due to be started again), waits for them as long as
    /// their timeouts allow, and builds what the turn is shown. A provider
    /// still starting then is shown unavailable ("starting") and keeps
    /// starting in the background, for later turns.
    ///
    /// # Cancel safety
    /// Dropping the future leaves the starts it began running in the
    /// background (each bounded by its start budget); the next turn that
    /// selects a provider finds it ready, starting or failed. The turn's
    /// selection is audited as soon as it is made.
    ///
    /// # Errors
    /// A turn that cannot begin is offered nothing, and audited
    /// (`gateway_absent`): [`TurnError::SessionClosed`] when the session is
    /// closed (before the turn, or while its providers start),
    /// [`TurnError::NoRuntime`] outside a tokio runtime.
    pub async fn begin_turn(&self, context: TurnContext) -> Result<Turn, TurnError> {
        Turn::begin(Arc::clone(&self.inner), &context, None).await
    }

    /// Begins a turn as [`Session::begin_turn`] does, but gets going only
    /// those of the providers it selects that `providers` names: an
    /// operator's one call (`spear-capabilities invoke time/...`) starts
    /// the provider it calls and no other. The selection is made and
    /// audited whole, every candidate with its decision; the others are
    /// neither started nor offered, nor named unavailable (nothing is
    /// known of them), so the turn's family and its exposure record hold
    /// only the providers named.
    ///
    /// # Cancel safety
    /// As [`Session::begin_turn`].
    ///
    /// # Errors
    /// As [`Session::begin_turn`].
    pub async fn begin_turn_starting_only(
        &self,
        context: TurnContext,
        providers: &[&str],
    ) -> Result<Turn, TurnError> {
        Turn::begin(Arc::clone(&self.inner), &context, Some(providers)).await
    }

    /// Starts, in the background, the providers a turn in `context` would
    /// select, ahead of that turn; returns how many it started. A turn
    /// begun later finds them ready or still starting. Selection is not
    /// audited here; the turn's own is.
    ///
    /// # Errors
    /// [`Error::NoRuntime`] outside a tokio runtime.
    pub fn start_providers(&self, context: &TurnContext) -> Result<usize, Error> {
        tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
        if self.is_closed() {
            return Ok(0);
        }
        let selection = select(&self.inner.registry, context, &Audit::null());
        if !selection.gateway || !selection.class_served {
            return Ok(0);
        }
        let turn = self.inner.turns_begun();
        let mut started = 0;
        for slot in selection.selected().filter_map(|id| self.inner.slot(id)) {
            if slot.operator_state().is_none() {
                started += 1;
            }
            slot.prepare(&self.inner, turn, &self.inner.audit);
        }
        Ok(started)
    }

    /// Whether the session was closed (by this handle or any clone).
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// The notices not read yet: each failed provider is reported once in
    /// the session's life; an audit trail that loses records is reported
    /// (first) when it begins to, and again when it records again (WRITEs
    /// are allowed again), and so on for each later failure. Each carries
    /// its provider and reason as data; [`Notice::text`] words it for the
    /// person.
    pub fn take_notices(&self) -> Vec<Notice> {
        let mut notices = self.inner.take_notices();
        match self.inner.audit.news() {
            Some(TrailNews::Failing(failure)) => notices.insert(0, Notice::AuditFailing(failure)),
            Some(TrailNews::Recovered { lost }) => {
                notices.insert(0, Notice::AuditRecovered { lost })
            }
            None => {}
        }
        notices
    }

    /// The providers this session has started or tried to, in registry
    /// order, with their state. For the operator: it may carry stderr.
    pub fn provider_states(&self) -> Vec<(String, ProviderState)> {
        (self.inner.slots().iter())
            .filter_map(|slot| Some((slot.entry.id.clone(), slot.operator_state()?)))
            .collect()
    }

    /// Closes the session for every clone: later turns are offered
    /// nothing and told why, calls of earlier turns are refused, starts in
    /// the background are abandoned, and every started provider is shut
    /// down, concurrently; each stop is audited as `provider_stopped` (a
    /// start abandoned too), and the session's end as `session_ended`,
    /// synced. Closing twice is harmless.
    ///
    /// # Cancel safety
    /// The session is closed as soon as the call begins; dropping the
    /// future may leave providers shutting down, and each kind ends its
    /// processes when the last handle to a provider is dropped.
    pub async fn close(&self) {
        let inner = &self.inner;
        inner.closed.cancel();
        let started = inner.close_slots();
        if tokio::runtime::Handle::try_current().is_err() {
            // Nothing can be awaited here: dropping the providers ends them
            // (each kind ends its processes when its provider is dropped).
            for (id, provider) in started {
                drop(provider);
                inner.audit.emit(AuditEvent::ProviderStopped {
                    provider: id,
                    error: Some(Error::NoRuntime.to_string()),
                });
            }
            inner.end(SessionEnd::RuntimeGone);
            return;
        }
        // Calls in flight answer at once, "sent, outcome unknown", and tell
        // their servers they are cancelled before any stdin is closed: they
        // (and stops already under way) are waited for, a little.
        inner.tracked.close();
        let _ = tokio::time::timeout(CANCEL_WAIT, inner.tracked.wait()).await;
        let audit = &inner.audit;
        futures::future::join_all(started.into_iter().map(|(id, p)| async move {
            let error = p.shutdown().await.err().map(|e| e.to_string());
            audit.emit(AuditEvent::ProviderStopped {
                provider: id,
                error,
            });
        }))
        .await;
        // A failed provider's stop (after a timeout: the cancellation, then
        // stdin closed, grace, SIGTERM, SIGKILL) runs to its end too.
        inner.tracked.wait().await;
        // Synced: off the runtime's threads, which a sync would hold.
        let shared = Arc::clone(inner);
        let end = tokio::task::spawn_blocking(move || shared.end(SessionEnd::Closed));
        if end.await.is_err() {
            inner.end(SessionEnd::Closed);
        }
    }
}
