//! The schema checks of one call: its arguments before it is sent, and its
//! structured result after it ran.
//!
//! A check is blocking work: unless it is quick (`ToolSchema::is_quick`)
//! it runs on a thread of its own, within a deadline (the provider's
//! timeout for the arguments; what is left of the call's bound for the
//! result), in one of its provider's places for checks
//! ([`MAX_CHECKS_IN_FLIGHT`]). A `jsonschema` validation cannot be
//! interrupted: a check past its deadline is abandoned, not stopped, and
//! keeps its place until it ends, so that abandoned checks cannot pile up.
//! Its thread is not the runtime's: tokio's blocking pool would make the
//! embedder's runtime wait for an abandoned check when it is dropped,
//! however long the check takes; a thread of its own ends with the process.

use std::sync::Arc;
use std::sync::mpsc::RecvTimeoutError;

use serde_json::{Map, Value};
use tokio::time::Instant;

use super::Turn;
use crate::admission::Tool;
use crate::audit::AuditEvent;
use crate::checks::{CheckFailure, OutputCheck};
use crate::error::Error;
use crate::framing::one_line;
use crate::messages;
use crate::provider::CallResult;
use crate::shared::{MAX_CHECKS_IN_FLIGHT, Slot};
use crate::vocabulary::Refusal;

/// Why a check did not give its verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NotChecked {
    /// Every place for the provider's checks stayed taken (by earlier
    /// checks, maybe abandoned ones) until the deadline.
    NoPlace,
    /// It ran, and was not done by the deadline.
    TooLong,
    /// The check itself failed (its thread could not start, or panicked).
    Failed,
}

/// What the gateway says of a structured result besides the result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Structured {
    /// It does not match the declared output schema: the first reason.
    Mismatch(String),
    /// It was not checked: why.
    Unchecked(String),
}

/// Runs `check` on a thread of its own in one of `slot`'s places for
/// checks, both within `deadline`.
///
/// The thread is the check's own, detached: tokio's blocking pool would
/// make the runtime's drop wait for an abandoned check however long it
/// runs. It is waited for from a blocking task, which lets tokio know work
/// is under way (a paused test clock does not jump over it) and ends by the
/// deadline, so what a runtime's drop waits for stays bounded.
async fn off_thread<T: Send + 'static>(
    slot: &Slot,
    deadline: Instant,
    check: impl FnOnce() -> T + Send + 'static,
) -> Result<T, NotChecked> {
    let places = Arc::clone(&slot.checks);
    let place = match tokio::time::timeout_at(deadline, places.acquire_owned()).await {
        Ok(Ok(place)) => place,
        Ok(Err(_)) => return Err(NotChecked::Failed),
        Err(_) => return Err(NotChecked::NoPlace),
    };
    let budget = deadline.saturating_duration_since(Instant::now());
    let waiting = tokio::task::spawn_blocking(move || {
        let (done, verdict) = std::sync::mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("spear-schema-check".to_owned())
            .spawn(move || {
                // Held until the check ends, also when nobody waits for it.
                let _place = place;
                let _ = done.send(check());
            })
            .map_err(|_| NotChecked::Failed)?;
        verdict.recv_timeout(budget).map_err(|e| match e {
            RecvTimeoutError::Timeout => NotChecked::TooLong,
            // The thread ended without a verdict: the check panicked.
            RecvTimeoutError::Disconnected => NotChecked::Failed,
        })
    });
    waiting.await.unwrap_or(Err(NotChecked::Failed))
}

impl Turn {
    /// `arguments` checked against `tool`'s schema, compiled first if this
    /// is its first call, within the provider's timeout; or the refusal to
    /// give. Arguments that were not checked are never sent.
    pub(super) async fn check_arguments(
        &self,
        slot: &Slot,
        tool: &Tool,
        arguments: Map<String, Value>,
    ) -> Result<Map<String, Value>, (Refusal, String)> {
        let cap = &tool.shown.id;
        let schema = Arc::clone(&tool.schema);
        let check = move || {
            let arguments = Value::Object(arguments);
            let verdict = schema.check(&arguments);
            (arguments, verdict)
        };
        // A quick check (a small compiled schema, no regular expression)
        // is not worth a thread hand-off.
        let checked = if tool.schema.is_quick() {
            Ok(check())
        } else {
            let deadline = Instant::now() + slot.entry.timeout;
            off_thread(slot, deadline, check).await
        };
        match checked {
            Ok((Value::Object(arguments), Ok(()))) => Ok(arguments),
            Ok((_, Err(CheckFailure::Arguments(errors)))) => Err((
                Refusal::ArgumentsDoNotFit,
                messages::arguments_do_not_fit(cap, &errors),
            )),
            Ok((_, Err(CheckFailure::Unusable { reason, first }))) => {
                if first {
                    self.audit.emit(AuditEvent::ToolRejected {
                        provider: slot.entry.id.clone(),
                        tool: one_line(&tool.name, 200),
                        reason: one_line(&reason, 500),
                    });
                }
                let framed = match tool.frame.frame(&reason) {
                    Ok(framed) => framed,
                    Err(no_token) => no_token.to_string(),
                };
                Err((
                    Refusal::SchemaUnusable,
                    messages::schema_unusable(cap, &framed),
                ))
            }
            Ok((_, Ok(()))) | Err(NotChecked::Failed) => Err((
                Refusal::ArgumentsNotChecked,
                messages::arguments_not_checked(cap),
            )),
            Err(NotChecked::TooLong | NotChecked::NoPlace) => Err((
                Refusal::ArgumentsNotChecked,
                messages::arguments_not_checked_in_time(cap, slot.entry.timeout),
            )),
        }
    }

    /// What to say of the structured content of a result the tool reported
    /// as a success, checked against its declared output schema by
    /// `deadline` (what is left of the call's bound); `None` when there is
    /// nothing to say. A schema that does not compile is audited once and
    /// its results go unchecked.
    pub(super) async fn check_output(
        &self,
        slot: &Slot,
        tool: &Tool,
        outcome: &Result<CallResult, Error>,
        deadline: Instant,
    ) -> Option<Structured> {
        let output = Arc::clone(tool.output.as_ref()?);
        let structured = match outcome {
            Ok(result) if !result.is_error => result.structured.clone(),
            _ => return None,
        };
        let checked = off_thread(slot, deadline, move || output.check(structured.as_ref())).await;
        match checked {
            Ok(OutputCheck::Matches) => None,
            Ok(OutputCheck::Mismatch(reason)) => Some(Structured::Mismatch(reason)),
            Ok(OutputCheck::Unusable { reason, first }) => {
                if first {
                    self.audit.emit(AuditEvent::OutputUnchecked {
                        provider: slot.entry.id.clone(),
                        tool: one_line(&tool.name, 200),
                        reason: one_line(&reason, 500),
                    });
                }
                None
            }
            Err(NotChecked::TooLong) => Some(Structured::Unchecked(
                messages::UNCHECKED_TOO_LONG.to_owned(),
            )),
            Err(NotChecked::NoPlace) => Some(Structured::Unchecked(messages::unchecked_no_place(
                MAX_CHECKS_IN_FLIGHT,
            ))),
            Err(NotChecked::Failed) => {
                Some(Structured::Unchecked(messages::UNCHECKED_FAILED.to_owned()))
            }
        }
    }
}
