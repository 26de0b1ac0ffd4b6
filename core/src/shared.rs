//! What every clone of a session and each of its turns share: the
//! registry, the options, the audit trail, one slot per provider
//! (`shared/slot.rs`), the notices not read yet, and the session's life:
//! whether it is closed, and the work its `close` waits for.
//!
//! It is the turn's view of the session: [`crate::session`] is the
//! embedder's handle on it, [`crate::turn`] a turn's.

mod slot;
mod state;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::audit::{Audit, AuditEvent, SessionEnd};
use crate::kind::Connector;
use crate::notice::Notice;
use crate::provider::Provider;
use crate::registry::Registry;
use crate::session::options::SessionOptions;

pub(crate) use slot::{Closing, Slot, millis};
pub use slot::{start_budget, start_budget_waiting};
pub use state::ProviderState;
pub(crate) use state::{Ended, Ready, View};

/// How much longer than its provider's timeout the gateway waits for a
/// request before it calls the provider timed out, whatever the provider
/// does itself.
pub const TIMEOUT_GRACE: Duration = Duration::from_secs(1);

/// The most times one provider is started again in a session.
pub(crate) const MAX_RESTARTS: u32 = 3;

/// The most schema checks of one provider's calls (of their arguments, of
/// their structured results) that run off the calling thread at once in a
/// session, abandoned ones included. A `jsonschema` validation cannot be
/// interrupted: a check past its call's bound is abandoned, not stopped, and
/// keeps its place until it ends, so a provider whose results are slow to
/// check holds at most this many threads busy. A check that finds no place
/// free within its call's bound is not run (the arguments: the call is
/// refused; a result: it is said not checked).
pub(crate) const MAX_CHECKS_IN_FLIGHT: usize = 2;

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What every clone of a session and each of its turns share.
pub(crate) struct Shared {
    pub(crate) registry: Arc<Registry>,
    pub(crate) options: SessionOptions,
    pub(crate) connector: Arc<dyn Connector>,
    pub(crate) audit: Audit,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    notices: Mutex<Vec<Notice>>,
    turns: AtomicU64,
    /// The session's end record was written (or tried).
    ended: AtomicBool,
    /// Cancelled by `close`: the session is closed for every clone, and
    /// calls in flight stop waiting at once.
    pub(crate) closed: CancellationToken,
    /// Calls sent and not answered yet, and stops begun without a caller
    /// to await them (a provider that failed, one that finished starting
    /// after its slot closed): `close` waits for them, so that every
    /// server is told its calls are cancelled and gets its whole stop.
    pub(crate) tracked: TaskTracker,
}

impl Shared {
    pub(crate) fn new(
        registry: Arc<Registry>,
        options: SessionOptions,
        connector: Arc<dyn Connector>,
        audit: Audit,
    ) -> Self {
        Self {
            registry,
            options,
            connector,
            audit,
            slots: Mutex::new(HashMap::new()),
            notices: Mutex::new(Vec::new()),
            turns: AtomicU64::new(0),
            ended: AtomicBool::new(false),
            closed: CancellationToken::new(),
            tracked: TaskTracker::new(),
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

    /// Every slot made so far, with its provider's id, in registry order.
    pub(crate) fn slots(&self) -> Vec<Arc<Slot>> {
        let slots = lock(&self.slots);
        (self.registry.entries().iter())
            .filter_map(|e| slots.get(&e.id).cloned())
            .collect()
    }

    /// Adds a notice for the person (each is said once, by its caller).
    pub(crate) fn notice(&self, notice: Notice) {
        lock(&self.notices).push(notice);
    }

    /// The notices not read yet, taken.
    pub(crate) fn take_notices(&self) -> Vec<Notice> {
        std::mem::take(&mut *lock(&self.notices))
    }

    /// Runs `stop` in the background, for `close` to wait for.
    pub(crate) fn stop_in_background(&self, stop: impl Future<Output = ()> + Send + 'static) {
        // No runtime here (a provider failed by its runtime's shutdown):
        // dropping the stop drops the provider, and its kind ends its
        // processes at once.
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        self.tracked.spawn(stop);
    }

    /// The number of the next turn, from 1.
    pub(crate) fn next_turn(&self) -> u64 {
        self.turns.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// How many turns the session has begun.
    pub(crate) fn turns_begun(&self) -> u64 {
        self.turns.load(Ordering::Relaxed)
    }

    /// Whether the session was closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }
}

/// What a provider's stop record says when its session was dropped
/// without `close`.
const DROPPED: &str =
    "the session was dropped without close: the provider was ended at once, without its grace";

impl Drop for Shared {
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

impl Shared {
    /// Closes every slot: returns the started providers, to be shut down,
    /// and records the stop of each start it abandons.
    pub(crate) fn close_slots(&self) -> Vec<(String, Arc<dyn Provider>)> {
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
    pub(crate) fn end(&self, how: SessionEnd) {
        if !self.ended.swap(true, Ordering::SeqCst) {
            let _ = self
                .audit
                .try_emit_durable(AuditEvent::SessionEnded { how });
        }
    }
}
