//! `invoke`: a call checked before it reaches its provider.
//!
//! The capability must be one the turn admits (and, in index mode, one it
//! has described); its arguments must fit the tool's schema (`turn/check.rs`:
//! within the provider's timeout, the schema compiled at its first call and
//! kept for the session); a WRITE runs only when the provider's write
//! policy and the session's permission mode both allow it (an approval is
//! recorded when it is given). The call then goes to the provider, and the
//! gateway's own work (the checks of the arguments and of a structured
//! result included) and the call together take at most the provider's
//! timeout and [`TIMEOUT_GRACE`] (the person's approval is not counted),
//! whatever the provider does itself; its result comes back framed as
//! external content. Every call that was sent is audited, also when the
//! answer's future is dropped before it came (outcome `cancelled`).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use serde_json::{Map, Value};

use super::check::Structured;
use super::{Answer, Resolved, Turn};
use crate::admission::Tool;
use crate::audit::{AuditEvent, ModeName, bounded_arguments};
use crate::command::CapabilityId;
use crate::error::Error;
use crate::framing::result_text;
use crate::messages;
use crate::permission::WriteRequest;
use crate::provider::{CallRequest, CallResult, Provider};
use crate::shared::{Ready, Slot, TIMEOUT_GRACE, millis};
use crate::vocabulary::{
    AnswerStatus, CapabilityClass, Exposure, Outcome, Refusal, UnavailableReason, WritePolicy,
};

impl Turn {
    pub(super) async fn invoke(
        &self,
        line: &str,
        id: &CapabilityId,
        arguments: Map<String, Value>,
    ) -> Answer {
        let admitted = match self.resolve(id) {
            Resolved::Admitted(admitted) => admitted,
            Resolved::Unavailable(provider, reason) => {
                return self.unavailable(line, id, provider, reason);
            }
            Resolved::NotOffered => return self.not_offered(line, id),
            Resolved::Closed => {
                return self.refuse(
                    Some(id),
                    line,
                    Refusal::SessionClosed,
                    messages::SESSION_CLOSED,
                );
            }
        };
        let (slot, ready, tool) = (&*admitted.slot, &admitted.ready, admitted.tool());
        let cap = &tool.shown.id;
        if self.shown.exposure == Exposure::Index && !admitted.described.load(Ordering::Relaxed) {
            return self.refuse(
                Some(id),
                line,
                Refusal::NotDescribed,
                &messages::describe_first(cap),
            );
        }
        // The runtime's clock, as the call's timer reads it.
        let checking = tokio::time::Instant::now();
        let arguments = match self.check_arguments(slot, tool, arguments).await {
            Ok(arguments) => arguments,
            Err((refusal, reason)) => return self.refuse(Some(id), line, refusal, &reason),
        };
        // What the check took comes out of the call's bound.
        let bound = (slot.entry.timeout + TIMEOUT_GRACE).saturating_sub(checking.elapsed());
        let audited = bounded_arguments(&arguments);
        if tool.shown.class == CapabilityClass::Write {
            let request = WriteRequest::new(cap.as_str(), &arguments);
            if let Some((refusal, reason)) =
                self.write_refusal(slot, request, audited.clone()).await
            {
                return self.refuse(Some(id), line, refusal, &reason);
            }
        }
        if self.session.is_closed() {
            return self.refuse(
                Some(id),
                line,
                Refusal::SessionClosed,
                messages::SESSION_CLOSED,
            );
        }
        // The person's approval is not counted: the bound runs from here.
        let deadline = tokio::time::Instant::now() + bound;
        // From here the call is sent: it is audited whatever happens to
        // this future.
        let mut sent = Sent {
            turn: self,
            capability: cap,
            class: tool.shown.class,
            arguments: Some(audited),
            began: Instant::now(),
            structured: None,
        };
        // `close` waits for the call to stop waiting while this lives.
        let _in_flight = self.session.tracked.token();
        let provider: &dyn Provider = &*ready.provider;
        let call = provider.call_tool(CallRequest::new(tool.name.clone(), arguments));
        // A span, never an event: a call at info costs nothing, and its
        // arguments and result are the audit trail's, not a log's.
        let span =
            tracing::debug_span!(target: "spear_capabilities::call", "call", capability = %cap);
        let call = tracing::Instrument::instrument(call, span);
        let outcome = tokio::select! {
            outcome = tokio::time::timeout_at(deadline, call) => outcome.unwrap_or_else(|_| {
                Err(Error::Timeout {
                    provider: slot.entry.id.clone(),
                    after: slot.entry.timeout,
                    stderr: String::new(),
                })
            }),
            // The session closes: the call is dropped here, which tells
            // its server it is cancelled, and its outcome is not known.
            () = self.session.closed.cancelled() => {
                sent.done(Outcome::Closed);
                return Answer::new(Outcome::Closed.status(), messages::outcome_unknown_closed(cap));
            }
        };
        let structured = self.check_output(slot, tool, &outcome, deadline).await;
        let (label, mut answer) = self.outcome(slot, ready, id, tool, outcome);
        if let Some(structured) = structured.filter(|_| answer.status == AnswerStatus::Ok) {
            answer.text.push('\n');
            match &structured {
                Structured::Mismatch(reason) => {
                    let framed = match tool.frame.frame(reason) {
                        Ok(framed) => framed,
                        Err(no_token) => no_token.to_string(),
                    };
                    (answer.text).push_str(&messages::structured_mismatch(cap, &framed));
                    answer.structured_mismatch = Some(reason.clone());
                }
                Structured::Unchecked(reason) => {
                    (answer.text).push_str(&messages::structured_unchecked(cap, reason));
                    answer.structured_unchecked = Some(reason.clone());
                }
            }
            sent.structured = Some(structured);
        }
        sent.done(label);
        answer
    }

    /// The answer to a call that came back, and how it is audited: the
    /// answer's status is the outcome's ([`Outcome::status`]), unless the
    /// provider's text cannot be framed, when nothing of it is shown.
    fn outcome(
        &self,
        slot: &Slot,
        ready: &Arc<Ready>,
        id: &CapabilityId,
        tool: &Tool,
        outcome: Result<CallResult, Error>,
    ) -> (Outcome, Answer) {
        let (provider, cap) = (&slot.entry.id, &tool.shown.id);
        let (label, text, result) = match outcome {
            Ok(result) => {
                let framed = tool.frame.frame(&result_text(&result));
                if result.is_error {
                    let text = framed.map(|f| messages::tool_error(cap, &f));
                    (Outcome::ToolError, text, Some(result))
                } else {
                    (Outcome::Ok, framed, Some(result))
                }
            }
            Err(Error::CallError { code, message, .. }) => {
                let framed = tool.frame.frame(&message);
                let text = framed.map(|f| messages::provider_error(provider, cap, code, &f));
                (Outcome::ProviderError, text, None)
            }
            Err(Error::CallUnreadable { reason, .. }) => {
                let framed = tool.frame.frame(&reason);
                let text = framed.map(|f| messages::result_unreadable(cap, &f));
                (Outcome::Unreadable, text, None)
            }
            // The provider was shut down by the session's close, not failed:
            // the call was sent, so whether it ran is not known.
            Err(_) if self.session.is_closed() => (
                Outcome::Closed,
                Ok(messages::outcome_unknown_closed(cap)),
                None,
            ),
            Err(e) => {
                let reason = e
                    .unavailable_reason()
                    .unwrap_or(UnavailableReason::ProtocolError);
                slot.fail(&self.session, ready, reason, &e, self.number, false);
                // A timeout names the call and its limit: the turn (and
                // the person) can tell a slow call from a broken provider.
                let text = match &e {
                    Error::Timeout { .. } => {
                        messages::call_timed_out(cap, provider, slot.entry.timeout, reason)
                    }
                    _ => messages::capability_unavailable(&id.to_string(), provider, reason),
                };
                (Outcome::Unavailable, Ok(text), None)
            }
        };
        let mut answer = match text {
            Ok(text) => Answer::new(label.status(), text),
            Err(no_token) => Answer::new(AnswerStatus::Failed, messages::unframable(cap, no_token)),
        };
        // For the operator: moved in once the text is built from it.
        answer.result = result;
        (label, answer)
    }

    /// Why a WRITE may not run, or `None` when it may; an approval by the
    /// session's permission mode is recorded as soon as it is given.
    async fn write_refusal(
        &self,
        slot: &Slot,
        request: WriteRequest,
        (arguments, arguments_cut): (Value, Option<u64>),
    ) -> Option<(Refusal, String)> {
        let (provider, cap) = (&slot.entry.id, &request.capability);
        let policy = slot.entry.write;
        if policy == WritePolicy::Refuse {
            return Some((
                Refusal::WriteRefusedByPolicy,
                messages::write_refused_by_policy(cap, provider),
            ));
        }
        // Nothing is sent that the trail cannot record: not even asked for.
        if self.audit.is_failing() {
            return Some((
                Refusal::AuditFailing,
                messages::write_refused_audit_failing(cap),
            ));
        }
        let mode = &self.session.options.permission;
        if mode.allow_write(policy, &request).await {
            let cap = request.capability.clone();
            let approval = AuditEvent::WriteApproved {
                capability: request.capability,
                arguments,
                arguments_cut,
                mode: ModeName::from(mode.name().to_owned()),
            };
            // On disk before the call is sent: synced, off the runtime's
            // I/O threads, which a sync would hold.
            let audit = self.audit.clone();
            let recorded = tokio::task::spawn_blocking(move || audit.try_emit_durable(approval))
                .await
                .is_ok_and(|written| written.is_ok());
            (!recorded).then(|| {
                (
                    Refusal::AuditFailing,
                    messages::write_refused_audit_failing(&cap),
                )
            })
        } else {
            // The `ask` mode asked the person about a `confirm` WRITE.
            let asked = policy == WritePolicy::Confirm
                && ModeName::from(mode.name().to_owned()) == ModeName::Ask;
            let refusal = if asked {
                Refusal::WriteDeclined
            } else {
                Refusal::WriteRefusedByMode
            };
            Some((refusal, messages::write_refused_by_mode(cap, mode.name())))
        }
    }
}

/// A call that was sent: its `capability_invoked` record is written when it
/// is done, or, when the answer's future is dropped first, on drop with the
/// outcome `cancelled`.
struct Sent<'a> {
    turn: &'a Turn,
    capability: &'a str,
    class: CapabilityClass,
    /// Taken when the record is written: bounded, and their whole size
    /// when cut.
    arguments: Option<(Value, Option<u64>)>,
    began: Instant,
    structured: Option<Structured>,
}

impl Sent<'_> {
    fn done(&mut self, outcome: Outcome) {
        let Some((arguments, arguments_cut)) = self.arguments.take() else {
            return;
        };
        let (structured_mismatch, structured_unchecked) = match self.structured.take() {
            Some(Structured::Mismatch(reason)) => (Some(reason), None),
            Some(Structured::Unchecked(reason)) => (None, Some(reason)),
            None => (None, None),
        };
        self.turn.audit.emit(AuditEvent::CapabilityInvoked {
            capability: self.capability.to_owned(),
            class: self.class,
            arguments,
            arguments_cut,
            outcome,
            duration_ms: millis(self.began.elapsed()),
            structured_mismatch,
            structured_unchecked,
        });
    }
}

impl Drop for Sent<'_> {
    fn drop(&mut self) {
        self.done(Outcome::Cancelled);
    }
}
