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

pub(crate) mod slot;
mod state;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::audit::{Audit, AuditEvent, ModeName, SessionEnd};
use crate::connector::{Connector, KindConnector};
use crate::exposure::Limits;
use crate::permission::PermissionMode;
use crate::registry::Registry;
use crate::selection::{TurnContext, select};
use crate::tokens::{EstimatedTokens, TokenCounter};
use crate::turn::Turn;
use crate::{Error, Notice, TurnError};

use slot::{Closing, Slot};
pub use slot::{
    MAX_RESTARTS, ProviderState, START_BUDGET_FACTOR, start_budget, start_budget_waiting,
};

/// How much longer than its provider's timeout the gateway waits for a
/// request before it calls the provider timed out, whatever the provider
/// does itself.
pub const TIMEOUT_GRACE: Duration = Duration::from_secs(1);

/// How long `close` waits for calls in flight to stop waiting (and send
/// their cancellations) before it shuts their providers down.
const CANCEL_WAIT: Duration = Duration::from_secs(1);

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
    /// needs long the first time (an `npx -y` or `uvx` download): a turn
    /// waits for a start up to `wait`, each request of the start (a
    /// handshake, each page of the listing) may take it, and the whole
    /// start is bounded by the longer of `wait` and its start budget.
    /// Calls keep their provider's `timeout`. Without it (the default) a
    /// start's requests take at most the entry's `timeout`, as the spec
    /// has it; a turn in SPEAR never needs this.
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

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What every clone of a session and each of its turns share.
pub(crate) struct Inner {
    pub(crate) registry: Arc<Registry>,
    pub(crate) options: SessionOptions,
    pub(crate) connector: Arc<dyn Connector>,
    pub(crate) audit: Audit,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    notices: Mutex<Vec<Notice>>,
    turns: AtomicU64,
    closed: AtomicBool,
    /// The session's end record was written (or tried).
    ended: AtomicBool,
    /// Set by `close`: calls in flight stop waiting at once.
    pub(crate) closing: tokio::sync::watch::Sender<bool>,
    /// Calls sent and not answered yet; `close` waits for them to have
    /// told their servers they are cancelled.
    pub(crate) in_flight: tokio::sync::watch::Sender<usize>,
    /// Stops begun without a caller to await them (a provider that failed,
    /// one that finished starting after its slot closed): `close` waits for
    /// them too, so that each server gets its whole stop sequence.
    stopping: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// One SPEAR session: its permission mode, audit trail and started providers.
///
/// Cheap to clone: clones share the providers.
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
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
    pub fn audit_failure(&self) -> Option<crate::AuditFailure> {
        self.inner.audit.failure()
    }

    /// How many providers are still being stopped in the background (one
    /// that failed, e.g. after a timeout, gets its whole stop sequence):
    /// [`Session::close`] waits for them.
    pub fn stops_pending(&self) -> usize {
        lock(&self.inner.stopping)
            .iter()
            .filter(|task| !task.is_finished())
            .count()
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
            inner: Arc::new(Inner {
                registry,
                options,
                connector,
                audit,
                slots: Mutex::new(HashMap::new()),
                notices: Mutex::new(Vec::new()),
                turns: AtomicU64::new(0),
                closed: AtomicBool::new(false),
                ended: AtomicBool::new(false),
                stopping: Mutex::new(Vec::new()),
                closing: tokio::sync::watch::Sender::new(false),
                in_flight: tokio::sync::watch::Sender::new(0),
            }),
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
        let n = self.inner.turns.fetch_add(1, Ordering::Relaxed) + 1;
        Turn::begin(Arc::clone(&self.inner), n, &context, None).await
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
        let n = self.inner.turns.fetch_add(1, Ordering::Relaxed) + 1;
        Turn::begin(Arc::clone(&self.inner), n, &context, Some(providers)).await
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
    /// the session's life, and so is an audit trail that loses records
    /// (first). Each carries its provider and reason as data;
    /// [`Notice::text`] words it for the person.
    pub fn take_notices(&self) -> Vec<Notice> {
        let mut notices = std::mem::take(&mut *lock(&self.inner.notices));
        if let Some(failure) = self.inner.audit.failure_untold() {
            notices.insert(0, Notice::AuditFailing(failure));
        }
        notices
    }

    /// The providers this session has started or tried to, in registry
    /// order, with their state. For the operator: it may carry stderr.
    pub fn provider_states(&self) -> Vec<(String, ProviderState)> {
        let slots = lock(&self.inner.slots);
        self.inner
            .registry
            .entries()
            .iter()
            .filter_map(|e| slots.get(&e.id))
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
        self.inner.closed.store(true, Ordering::SeqCst);
        let started = self.inner.close_slots();
        if tokio::runtime::Handle::try_current().is_err() {
            // Nothing can be awaited here: dropping the providers ends them
            // (each kind ends its processes when its provider is dropped).
            for (id, provider) in started {
                drop(provider);
                self.inner.audit.emit(AuditEvent::ProviderStopped {
                    provider: id,
                    error: Some(Error::NoRuntime.to_string()),
                });
            }
            self.inner.end(SessionEnd::RuntimeGone);
            return;
        }
        // Calls in flight answer at once, "sent, outcome unknown", and tell
        // their servers they are cancelled before any stdin is closed.
        self.inner.closing.send_replace(true);
        let mut in_flight = self.inner.in_flight.subscribe();
        let _ = tokio::time::timeout(CANCEL_WAIT, in_flight.wait_for(|n| *n == 0)).await;
        let audit = &self.inner.audit;
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
        let stopping = std::mem::take(&mut *lock(&self.inner.stopping));
        futures::future::join_all(stopping).await;
        // Synced: off the runtime's threads, which a sync would hold.
        let inner = Arc::clone(&self.inner);
        let end = tokio::task::spawn_blocking(move || inner.end(SessionEnd::Closed));
        if end.await.is_err() {
            self.inner.end(SessionEnd::Closed);
        }
    }
}

/// What a provider's stop record says when its session was dropped
/// without `close`.
const DROPPED: &str =
    "the session was dropped without close: the provider was ended at once, without its grace";

impl Drop for Inner {
    /// A session dropped without `close`: each started provider is dropped
    /// with it (its kind ends its processes) and the trail records its stop,
    /// synchronously, so that it does not end at `capability_invoked`.
    fn drop(&mut self) {
        for (id, provider) in self.close_slots() {
            drop(provider);
            self.audit.emit(AuditEvent::ProviderStopped {
                provider: id,
                error: Some(DROPPED.to_owned()),
            });
        }
        self.end(SessionEnd::Dropped);
    }
}

/// What a provider's stop record says when its session closed while it
/// was still starting.
const ABANDONED: &str = "the session closed while it was starting: the start was abandoned";

impl Inner {
    /// Closes every slot: returns the started providers, to be shut down,
    /// and records the stop of each start it abandons.
    fn close_slots(&self) -> Vec<(String, Arc<dyn crate::Provider>)> {
        let slots: Vec<Arc<Slot>> = lock(&self.slots).values().cloned().collect();
        let mut started = Vec::new();
        for slot in slots {
            let id = slot.entry.id.clone();
            match slot.close() {
                Closing::Started(provider) => started.push((id, provider)),
                Closing::Abandoned => self.audit.emit(AuditEvent::ProviderStopped {
                    provider: id,
                    error: Some(ABANDONED.to_owned()),
                }),
                Closing::Nothing => {}
            }
        }
        started
    }

    /// Records the session's end, once, synced.
    fn end(&self, how: SessionEnd) {
        if !self.ended.swap(true, Ordering::SeqCst) {
            let _ = self
                .audit
                .try_emit_durable(AuditEvent::SessionEnded { how });
        }
    }

    /// The slot of provider `id`, made on first use; `None` when the
    /// registry has no such entry.
    pub(crate) fn slot(&self, id: &str) -> Option<Arc<Slot>> {
        let entry = self.registry.entry(id)?;
        let mut slots = lock(&self.slots);
        Some(Arc::clone(
            slots
                .entry(id.to_owned())
                .or_insert_with(|| Arc::new(Slot::new(entry.clone()))),
        ))
    }

    /// Adds a notice for the person (each is said once, by its caller).
    pub(crate) fn notice(&self, notice: Notice) {
        lock(&self.notices).push(notice);
    }

    /// Runs `stop` in the background, for `close` to wait for.
    pub(crate) fn stop_in_background(&self, stop: impl Future<Output = ()> + Send + 'static) {
        let mut stopping = lock(&self.stopping);
        stopping.retain(|task| !task.is_finished());
        stopping.push(tokio::spawn(stop));
    }

    /// How many turns the session has begun.
    pub(crate) fn turns_begun(&self) -> u64 {
        self.turns.load(Ordering::Relaxed)
    }

    /// Whether the session was closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}
