//! A tokio runtime's shutdown, noticed when it happens.
//!
//! A provider's start runs as a task of the runtime of the turn that
//! started it, and so do its kind's I/O tasks: when that runtime shuts
//! down, they are dropped, and the provider is gone. A guard in the start,
//! then in a task that watches the ready provider on the same runtime, is
//! dropped with them and fails the provider there and then (its state, its
//! `provider_failed` record, the session's notice), instead of at the next
//! turn, which could then not have it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::super::Shared;
use super::super::state::Ready;
use super::{Phase, Slot, State};
use crate::error::Error;
use crate::shared::lock;
use crate::vocabulary::UnavailableReason;

/// How a provider's failure reads when the tokio runtime that ran it
/// (its start, its I/O) shut down.
const RUNTIME_GONE: &str = "the runtime that ran it has shut down";

/// Armed while a task of the provider's runtime lives; dropped armed (the
/// runtime shut down, or dropped the task), it runs its `gone`.
pub(super) struct RuntimeWatch {
    gone: Option<Box<dyn FnOnce() + Send>>,
    armed: Arc<AtomicBool>,
}

/// Arms a [`RuntimeWatch`] once its task is spawned: a task the runtime
/// refuses (it is shutting down) is dropped inside `tokio::spawn`, where
/// the caller may hold the slot's lock, which `gone` takes.
pub(super) struct Arming(Arc<AtomicBool>);

impl Arming {
    pub(super) fn arm(self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl RuntimeWatch {
    /// A guard that runs `gone` if it is dropped armed; armed by the
    /// [`Arming`].
    fn new(gone: impl FnOnce() + Send + 'static) -> (Self, Arming) {
        let armed = Arc::new(AtomicBool::new(false));
        let guard = Self {
            gone: Some(Box::new(gone)),
            armed: Arc::clone(&armed),
        };
        (guard, Arming(armed))
    }

    /// The task ended of itself: nothing to run.
    pub(super) fn disarm(self) {
        self.armed.store(false, Ordering::SeqCst);
    }
}

impl Drop for RuntimeWatch {
    fn drop(&mut self) {
        if self.armed.load(Ordering::SeqCst) {
            if let Some(gone) = self.gone.take() {
                gone();
            }
        }
    }
}

impl Slot {
    /// The guard of a start about to be spawned: dropped with its task by a
    /// runtime shutdown (run or not yet), it fails the start.
    pub(super) fn start_watch(self: &Arc<Self>, inner: &Arc<Shared>) -> (RuntimeWatch, Arming) {
        let (slot, session) = (Arc::downgrade(self), Arc::downgrade(inner));
        RuntimeWatch::new(move || {
            if let (Some(slot), Some(session)) = (slot.upgrade(), session.upgrade()) {
                slot.runtime_gone(&session, None);
            }
        })
    }

    /// Fails the start just spawned as `task` (under the slot's lock,
    /// `state`) if the runtime refused the task (it is shutting down): the
    /// start cannot finish, and its guard was dropped unarmed.
    pub(super) fn refused_start(&self, inner: &Shared, state: &mut State, task: &JoinHandle<()>) {
        if task.is_finished() {
            let error = runtime_gone(&self.entry.id);
            let (reason, turn) = (UnavailableReason::Crashed, inner.turns_begun());
            self.record_failure(inner, state, reason, &error, turn, true);
        }
    }

    /// Fails `ready` when the runtime this runs on shuts down before it
    /// ended: a watch of it, in a task of this runtime. Called without the
    /// slot's lock, which a runtime that refuses the task takes here.
    pub(super) fn watch_ready(self: &Arc<Self>, inner: &Arc<Shared>, ready: &Arc<Ready>) {
        let (slot, session) = (Arc::downgrade(self), Arc::downgrade(inner));
        let (watched, over) = (Arc::downgrade(ready), Arc::downgrade(ready));
        let (watch, arming) = RuntimeWatch::new(move || {
            if let (Some(slot), Some(session), Some(ready)) =
                (slot.upgrade(), session.upgrade(), watched.upgrade())
            {
                slot.runtime_gone(&session, Some(&ready));
            }
        });
        let mut changes: watch::Receiver<u64> = self.changed.subscribe();
        arming.arm();
        tokio::spawn(async move {
            while over.upgrade().is_some_and(|r| r.ended().is_none())
                && changes.changed().await.is_ok()
            {}
            watch.disarm();
        });
    }

    /// Fails the provider at once because the tokio runtime that ran it
    /// shut down: its incarnation `ready`, or (`None`) its start. Called
    /// from the drop of a task of that runtime, so nothing here awaits or
    /// needs a runtime.
    fn runtime_gone(&self, inner: &Shared, ready: Option<&Arc<Ready>>) {
        let error = runtime_gone(&self.entry.id);
        let (reason, turn) = (UnavailableReason::Crashed, inner.turns_begun());
        match ready {
            Some(ready) => self.fail(inner, ready, reason, &error, turn, true),
            None => {
                let mut state = lock(&self.state);
                if !matches!(state.phase, Phase::Starting { .. }) {
                    return;
                }
                self.record_failure(inner, &mut state, reason, &error, turn, true);
                drop(state);
                self.bump();
            }
        }
    }
}

/// The failure of `provider` whose runtime shut down.
fn runtime_gone(provider: &str) -> Error {
    Error::Crashed {
        provider: provider.to_owned(),
        status: RUNTIME_GONE.to_owned(),
        stderr: String::new(),
    }
}
