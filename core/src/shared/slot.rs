//! One provider's life in a session: started on the first turn that
//! selects it, reused by later turns, started again after a crash.
//!
//! A start (the kind's `connect`, then the listing and the admission of its
//! tools) runs as a task of its own, bounded by the start budget
//! ([`start_budget`]): a turn waits for it as long as it would wait for a
//! start that is not in the background ([`Slot::wait`]), and a start still
//! running then keeps going, so a slow first start (`npx`, `uvx`) is ready
//! for a later turn. A provider that fails is left out, recorded and said
//! once; one that crashed or timed out is started again for a later turn,
//! after a growing pause, at most [`MAX_RESTARTS`] times a session
//! ([`Slot::prepare`]). Failures that would repeat identically (it did not
//! start, it broke the protocol) are not retried.
//!
//! The state machine's transitions (prepare, wait, fail, close) are this
//! file; what the states are is `shared/state.rs`, a start's own work
//! (connect, list, admit) `shared/slot/start.rs`, and a runtime's shutdown
//! noticed when it happens `shared/slot/runtime.rs`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Semaphore, watch};
use tokio::task::AbortHandle;
use tokio::time::Instant;

mod runtime;
mod start;

use super::state::{Ended, ProviderState, Ready, View};
use super::{MAX_CHECKS_IN_FLIGHT, MAX_RESTARTS, Shared, TIMEOUT_GRACE, lock};
use crate::audit::{Audit, AuditEvent};
use crate::error::Error;
use crate::notice::Notice;
use crate::provider::Provider;
use crate::registry::ProviderEntry;
use crate::vocabulary::UnavailableReason;
use start::{start, stop};

pub(crate) use start::millis;

/// How many times its request timeout a provider's whole start may take
/// (spawn, handshake, every page of its listing) before it is a failure.
pub(crate) const START_BUDGET_FACTOR: u32 = 10;

/// The bound on a provider's whole start, for a request timeout of
/// `timeout`: `START_BUDGET_FACTOR` (10) times it, and never less than the
/// longest a turn waits for a start.
pub fn start_budget(timeout: Duration) -> Duration {
    (timeout * START_BUDGET_FACTOR).max(2 * (timeout + TIMEOUT_GRACE))
}

/// The bound on a provider's whole start when the operator lets starts go
/// on up to `wait` ([`crate::session::SessionOptions::with_start_wait`]): the
/// longer of `wait` and [`start_budget`].
pub fn start_budget_waiting(timeout: Duration, wait: Option<Duration>) -> Duration {
    start_budget(timeout).max(wait.unwrap_or_default())
}

/// How many turns after the failure the `restart`-th restart (from 1)
/// waits: the next turn, then two, then four.
fn pause_turns(restart: u32) -> u64 {
    1 << restart.saturating_sub(1).min(16)
}

#[derive(Debug)]
enum Phase {
    /// Never started.
    Idle,
    /// A start runs in the background.
    Starting {
        since: Instant,
        /// When the kind's `connect` returned, once it has.
        connected: Option<Instant>,
        task: Option<AbortHandle>,
    },
    Ready(Arc<Ready>),
    Failed(Failure),
    Closed,
}

#[derive(Debug, Clone)]
struct Failure {
    reason: UnavailableReason,
    message: String,
    /// The number of the session's turn when it failed.
    at_turn: u64,
    /// Its tokio runtime shut down: nothing of its own, so the next turn
    /// (on a live runtime) starts it again, counting against no bound.
    runtime_gone: bool,
}

impl Failure {
    /// Whether starting again could help: a crash or a timeout may not
    /// repeat, while a start or protocol failure would repeat identically.
    fn retryable(&self) -> bool {
        matches!(
            self.reason,
            UnavailableReason::Crashed | UnavailableReason::TimedOut
        )
    }
}

#[derive(Debug)]
struct State {
    phase: Phase,
    /// Restarts after a crash or a timeout (at most [`MAX_RESTARTS`]).
    restarts: u32,
    /// Every restart so far, for the records' `attempt`.
    restarted: u32,
    /// A turn was told the provider is unavailable (or starting) since it
    /// was last ready, so its readiness is news.
    missed: bool,
    /// The notices said so far: unavailable, and available again.
    said_unavailable: bool,
    said_back: bool,
}

/// One registered provider of a session.
pub(crate) struct Slot {
    pub(crate) entry: ProviderEntry,
    /// Its places for schema checks off the calling thread
    /// ([`MAX_CHECKS_IN_FLIGHT`]), over all its incarnations.
    pub(crate) checks: Arc<Semaphore>,
    state: Mutex<State>,
    /// Bumped on every change: turns waiting for a start watch it.
    changed: watch::Sender<u64>,
}

impl Slot {
    pub(crate) fn new(entry: ProviderEntry) -> Self {
        Self {
            entry,
            checks: Arc::new(Semaphore::new(MAX_CHECKS_IN_FLIGHT)),
            state: Mutex::new(State {
                phase: Phase::Idle,
                restarts: 0,
                restarted: 0,
                missed: false,
                said_unavailable: false,
                said_back: false,
            }),
            changed: watch::channel(0).0,
        }
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// Gets the provider going for turn `turn` of the session (whose
    /// records go to `audit`): starts it if
    /// it never was, starts it again if it crashed or timed out and its
    /// pause is over, and fails it when a ready provider says it has failed
    /// since (its process exited between turns).
    pub(crate) fn prepare(self: &Arc<Self>, inner: &Arc<Shared>, turn: u64, audit: &Audit) {
        let dead = {
            let mut state = lock(&self.state);
            let restarts = state.restarts;
            match &state.phase {
                Phase::Idle => {
                    self.spawn_start(inner, &mut state);
                    None
                }
                Phase::Failed(f)
                    if f.runtime_gone
                        || (f.retryable()
                            && restarts < MAX_RESTARTS
                            && turn >= f.at_turn + pause_turns(restarts + 1)) =>
                {
                    audit.emit(AuditEvent::ProviderRestarted {
                        provider: self.entry.id.clone(),
                        attempt: state.restarted + 1,
                        previous: f.message.clone(),
                    });
                    state.restarts += u32::from(!f.runtime_gone);
                    state.restarted += 1;
                    self.spawn_start(inner, &mut state);
                    None
                }
                Phase::Ready(ready) => ready.provider.failure().map(|e| (Arc::clone(ready), e)),
                _ => None,
            }
        };
        if let Some((ready, error)) = dead {
            let reason = error
                .unavailable_reason()
                .unwrap_or(UnavailableReason::Crashed);
            self.fail(inner, &ready, reason, &error, turn, false);
        }
    }

    fn spawn_start(self: &Arc<Self>, inner: &Arc<Shared>, state: &mut State) {
        let (slot, session) = (Arc::clone(self), Arc::clone(inner));
        let span = tracing::info_span!(
            target: "spear_capabilities::provider",
            "provider",
            provider = %self.entry.id,
            kind = %self.entry.kind
        );
        let provider = self.entry.id.as_str();
        span.in_scope(|| tracing::info!(target: "spear_capabilities::provider", provider, "provider starting"));
        let (watch, arming) = self.start_watch(inner);
        let task = tokio::spawn(tracing::Instrument::instrument(
            async move {
                let budget = start_budget_waiting(slot.entry.timeout, session.options.start_wait);
                let outcome = tokio::time::timeout(budget, start(&session, &slot))
                    .await
                    .unwrap_or_else(|_| {
                        Err(Error::Timeout {
                            provider: slot.entry.id.clone(),
                            after: budget,
                            stderr: String::new(),
                        })
                    });
                watch.disarm();
                slot.finish_start(&session, outcome);
            },
            span,
        ));
        arming.arm();
        state.phase = Phase::Starting {
            since: Instant::now(),
            connected: None,
            task: Some(task.abort_handle()),
        };
        self.refused_start(inner, state, &task);
        self.bump();
    }

    /// Notes that the kind's `connect` returned: the listing's wait begins.
    fn connected(&self) {
        if let Phase::Starting { connected, .. } = &mut lock(&self.state).phase {
            *connected = Some(Instant::now());
        }
        self.bump();
    }

    fn finish_start(self: &Arc<Self>, inner: &Arc<Shared>, outcome: Result<Ready, Error>) {
        let mut state = lock(&self.state);
        if !matches!(state.phase, Phase::Starting { .. }) {
            // Closed while it started: what started is stopped.
            drop(state);
            if let Ok(ready) = outcome {
                stop(inner, &self.entry.id, ready.provider);
            }
            return;
        }
        let mut watched = None;
        match outcome {
            Ok(ready) => {
                if ready.declares_no_tools {
                    inner.notice(Notice::NoTools {
                        provider: self.entry.id.clone(),
                    });
                }
                let ready = Arc::new(ready);
                watched = Some(Arc::clone(&ready));
                state.phase = Phase::Ready(ready);
                if std::mem::take(&mut state.missed) && !state.said_back {
                    state.said_back = true;
                    inner.notice(Notice::Available {
                        provider: self.entry.id.clone(),
                    });
                }
            }
            Err(error) => {
                let reason = error
                    .unavailable_reason()
                    .unwrap_or(UnavailableReason::DidNotStart);
                let turn = inner.turns_begun();
                self.record_failure(inner, &mut state, reason, &error, turn, false);
            }
        }
        drop(state);
        self.bump();
        // Outside the lock, which a refused watch takes to fail it.
        if let Some(ready) = watched {
            self.watch_ready(inner, &ready);
        }
    }

    /// Waits for a start in the background as long as a turn begun at
    /// `begun` waits: `start_timeout` (the entry's timeout, or the
    /// operator's longer start wait: `SessionOptions::start_timeout`) and
    /// the grace for the kind's `connect`, and as long again for the
    /// listing once it connected.
    pub(crate) async fn wait(&self, begun: Instant, start_timeout: Duration) {
        let patience = start_timeout + TIMEOUT_GRACE;
        let mut changes = self.changed.subscribe();
        loop {
            let deadline = match &lock(&self.state).phase {
                Phase::Starting { connected, .. } => match connected {
                    None => begun + patience,
                    Some(at) => (*at).max(begun) + patience,
                },
                _ => return,
            };
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                // The deadline passed, or the slot is gone.
                _ => return,
            }
        }
    }

    /// What a turn makes of the slot now; a turn told it is unavailable
    /// makes its readiness news, and the first such turn gets the session's
    /// notice.
    pub(crate) fn view(&self, inner: &Shared) -> View {
        let mut state = lock(&self.state);
        let reason = match &state.phase {
            Phase::Ready(ready) => return View::Ready(Arc::clone(ready)),
            Phase::Closed => return View::Closed,
            Phase::Starting { .. } | Phase::Idle => UnavailableReason::Starting,
            Phase::Failed(f) => f.reason,
        };
        self.missed(inner, &mut state, reason);
        View::Unavailable(reason)
    }

    /// Records that incarnation `ready` failed during turn `turn`: once,
    /// with an audit record and (the first time) the session's notice, and
    /// releases it. A failure of an incarnation that already ended is not
    /// news. `runtime_gone`: the tokio runtime that ran it shut down (it is
    /// started again at the next turn, counting against no bound).
    pub(crate) fn fail(
        &self,
        inner: &Shared,
        ready: &Arc<Ready>,
        reason: UnavailableReason,
        error: &Error,
        turn: u64,
        runtime_gone: bool,
    ) {
        if ready.ended.set(Ended::Failed(reason)).is_err() {
            return;
        }
        let mut state = lock(&self.state);
        if matches!(&state.phase, Phase::Ready(current) if Arc::ptr_eq(current, ready)) {
            self.record_failure(inner, &mut state, reason, error, turn, runtime_gone);
            self.missed(inner, &mut state, reason);
        }
        drop(state);
        self.bump();
        let provider = Arc::clone(&ready.provider);
        inner.stop_in_background(async move {
            let _ = provider.shutdown().await;
        });
    }

    /// Notes that a turn goes without the provider, for `reason`: its
    /// readiness is news from now on, and the session's notice says it is
    /// unavailable, the first time only.
    fn missed(&self, inner: &Shared, state: &mut State, reason: UnavailableReason) {
        state.missed = true;
        if !std::mem::replace(&mut state.said_unavailable, true) {
            inner.notice(Notice::Unavailable {
                provider: self.entry.id.clone(),
                reason,
            });
        }
    }

    fn record_failure(
        &self,
        inner: &Shared,
        state: &mut State,
        reason: UnavailableReason,
        error: &Error,
        turn: u64,
        runtime_gone: bool,
    ) {
        inner.audit.emit(AuditEvent::ProviderFailed {
            provider: self.entry.id.clone(),
            reason,
            message: error.to_string(),
        });
        state.phase = Phase::Failed(Failure {
            reason,
            message: error.to_string(),
            at_turn: turn,
            runtime_gone,
        });
    }

    /// The state the operator sees, with the full reason of a failure;
    /// `None` when it was never started.
    pub(crate) fn operator_state(&self) -> Option<ProviderState> {
        let ready = match &lock(&self.state).phase {
            Phase::Idle => return None,
            Phase::Starting { since, .. } => {
                return Some(ProviderState::Starting {
                    since: since.elapsed(),
                });
            }
            Phase::Failed(f) => {
                return Some(ProviderState::Unavailable {
                    reason: f.reason,
                    message: f.message.clone(),
                });
            }
            Phase::Closed => return Some(ProviderState::Stopped),
            Phase::Ready(ready) => Arc::clone(ready),
        };
        // The kind is asked outside the lock.
        Some(ProviderState::Ready {
            started_in: ready.started_in,
            tools: ready.tools.len(),
            declares_no_tools: ready.declares_no_tools,
            info: ready.provider.info(),
        })
    }

    /// Closes the slot: a start in the background is abandoned (its kind
    /// stops what it started), and the ready provider, if any, is returned
    /// to be shut down.
    pub(crate) fn close(&self) -> Closing {
        let mut state = lock(&self.state);
        let closing = match std::mem::replace(&mut state.phase, Phase::Closed) {
            Phase::Starting { task, .. } => {
                if let Some(task) = task {
                    task.abort();
                }
                Closing::Abandoned
            }
            Phase::Ready(ready) => {
                let _ = ready.ended.set(Ended::Closed);
                Closing::Started(Arc::clone(&ready.provider))
            }
            Phase::Idle | Phase::Failed(_) | Phase::Closed => Closing::Nothing,
        };
        drop(state);
        self.bump();
        closing
    }
}

/// What closing a slot left to do.
pub(crate) enum Closing {
    /// A started provider, to be shut down.
    Started(Arc<dyn Provider>),
    /// A start in the background was abandoned: its kind stops what it
    /// started; its stop is still to be recorded.
    Abandoned,
    /// Nothing was running.
    Nothing,
}
