//! The named values of the audit schema's vocabulary, and of what a turn
//! and the operator are told: each enum with its names written once
//! (`named!`), and nothing else. A leaf: the registry, selection, the
//! exposure, the turn and the audit trail all speak these words, and none
//! of them needs another to do so. Each is re-exported where it belongs in
//! the public API (`registry::WritePolicy`, `audit::Outcome`, ...).

use crate::names::named;

named! {
    /// A request class a provider can serve (the entry's `tasks`).
    #[derive(PartialOrd, Ord)]
    #[non_exhaustive]
    pub enum RequestClass {
        /// Implementation turns.
        Implementation = "implementation",
        /// The implementation pass of a MIXED change.
        Mixed = "mixed",
        /// General questions (READ capabilities only).
        General = "general",
    }
}

named! {
    /// What a provider's WRITE capabilities may do (the entry's `write`).
    #[derive(Default)]
    #[non_exhaustive]
    pub enum WritePolicy {
        /// Never run a WRITE (the default).
        #[default]
        Refuse = "refuse",
        /// Run a WRITE when the session's permission mode agrees.
        Confirm = "confirm",
        /// Run a WRITE unless the session is read-only.
        Allow = "allow",
    }
}

named! {
    /// What a turn is doing.
    #[non_exhaustive]
    pub enum TurnKind {
        /// An implementation turn (class `implementation`).
        Implementation = "implementation",
        /// The implementation pass of a MIXED change (class `mixed`).
        Mixed = "mixed",
        /// A general question (class `general`, READ capabilities only).
        General = "general",
        /// A question about a bound standard: never served.
        StandardQuestion = "standard-question",
        /// The normative pre-pass: never served.
        NormativePrepass = "normative-prepass",
        /// The compliance check: never served.
        ComplianceCheck = "compliance-check",
    }
}

impl TurnKind {
    /// The request class an entry's `tasks` must list, or `None` for the
    /// kinds that external capabilities never reach.
    pub fn class(self) -> Option<RequestClass> {
        match self {
            TurnKind::Implementation => Some(RequestClass::Implementation),
            TurnKind::Mixed => Some(RequestClass::Mixed),
            TurnKind::General => Some(RequestClass::General),
            TurnKind::StandardQuestion | TurnKind::NormativePrepass | TurnKind::ComplianceCheck => {
                None
            }
        }
    }
}

named! {
    /// The runtime a turn runs on.
    #[derive(Default)]
    #[non_exhaustive]
    pub enum Runtime {
        /// The current runtime, which has the capability gateway.
        #[default]
        Current = "current",
        /// SPEAR's earlier runtime (a change in a standard-bound session that
        /// does not concern the standard): it has no capability gateway.
        Earlier = "earlier",
    }
}

named! {
    /// The decision about one candidate of a selection.
    #[non_exhaustive]
    pub enum Decision {
        /// It reaches the turn.
        Selected = "selected",
        /// The turn runs on the earlier runtime, which has no gateway.
        EarlierRuntime = "earlier_runtime",
        /// The turn's kind is never served external capabilities.
        ClassNeverServed = "class_never_served",
        /// The turn's tree is not a registered project.
        UnregisteredTree = "unregistered_tree",
        /// The entry has `"enabled": false`.
        Disabled = "disabled",
        /// The entry has no scope, so it applies nowhere.
        NoScope = "no_scope",
        /// The entry's scope does not cover the turn.
        ScopeDoesNotCover = "scope_does_not_cover",
        /// The entry's `tasks` do not list the turn's class.
        TaskNotServed = "task_not_served",
    }
}

impl Decision {
    /// A short phrase for people.
    pub fn phrase(self) -> &'static str {
        match self {
            Decision::Selected => "selected",
            Decision::EarlierRuntime => "the earlier runtime has no capability gateway",
            Decision::ClassNeverServed => {
                "this kind of turn is never offered external capabilities"
            }
            Decision::UnregisteredTree => "the turn's tree is not a registered project",
            Decision::Disabled => "disabled",
            Decision::NoScope => "no scope, so it applies nowhere",
            Decision::ScopeDoesNotCover => "its scope does not cover the turn",
            Decision::TaskNotServed => "its tasks do not include the turn's class",
        }
    }
}

named! {
    /// READ or WRITE. A tool is READ only when the entry's `read` lists it.
    #[non_exhaustive]
    pub enum CapabilityClass {
        /// Only reads.
        Read = "READ",
        /// Everything else.
        Write = "WRITE",
    }
}

named! {
    /// How a turn's family is shown.
    #[non_exhaustive]
    pub enum Exposure {
        /// Every capability with its description and schema.
        Whole = "whole",
        /// One line a capability; `describe` shows the rest.
        Index = "index",
        /// Nothing (no capability, or no gateway).
        None = "none",
    }
}

named! {
    /// The short, public category of a provider failure: all a turn learns of it.
    #[non_exhaustive]
    pub enum UnavailableReason {
        /// It could not be started.
        DidNotStart = "did_not_start",
        /// It did not answer in time.
        TimedOut = "timed_out",
        /// It broke its protocol.
        ProtocolError = "protocol_error",
        /// It stopped while in use.
        Crashed = "crashed",
        /// It is still starting (in the background): a later turn may have it.
        Starting = "starting",
    }
}

impl UnavailableReason {
    /// The category as words, as a turn reads it: `did not start`.
    pub fn words(self) -> String {
        self.as_str().replace('_', " ")
    }
}

named! {
    /// How an answer came out.
    #[non_exhaustive]
    pub enum AnswerStatus {
        /// The command did what it asked.
        Ok = "ok",
        /// The command was refused before reaching a provider.
        Refused = "refused",
        /// The provider it needs is unavailable.
        Unavailable = "unavailable",
        /// The provider or tool reported a failure.
        Failed = "failed",
        /// The call was sent and its outcome is not known (the session
        /// closed before its answer came): it may have run. Neither ok nor
        /// refused; retrying it may do it twice.
        OutcomeUnknown = "outcome_unknown",
    }
}

named! {
    /// Why SPEAR refused a command before it reached a provider
    /// ([`crate::Answer::refusal`]). Its name is the `refusal` field of the
    /// `capability_refused` audit record the refusal wrote.
    ///
    /// More reasons may come: match with a `_` arm.
    ///
    /// ```
    /// use spear_capabilities::{Answer, Refusal};
    /// fn hint(answer: &Answer) -> Option<&'static str> {
    ///     Some(match answer.refusal()? {
    ///         Refusal::AuditFailing => "the audit trail cannot record: fix the disk",
    ///         Refusal::WriteDeclined => "the person said no",
    ///         Refusal::NotDescribed => "describe it first",
    ///         _ => "see the answer's text",
    ///     })
    /// }
    /// # let _ = hint;
    /// ```
    #[non_exhaustive]
    pub enum Refusal {
        /// The line is the command, and not a well-formed one (an unknown
        /// verb, a missing id, arguments that are not one JSON object, ...).
        BadCommand = "bad_command",
        /// The turn runs on SPEAR's earlier runtime, which has no gateway.
        GatewayAbsent = "gateway_absent",
        /// External capabilities are not offered to this kind of turn.
        NotServed = "not_served",
        /// The session that offered the capabilities is closed.
        SessionClosed = "session_closed",
        /// No tokio runtime is running where the command was answered.
        NoRuntime = "no_runtime",
        /// The capability is not one this turn is offered (unknown, or a
        /// WRITE in a read-only turn).
        NotOffered = "not_offered",
        /// The capability's provider is unavailable (the answer's status is
        /// [`crate::AnswerStatus::Unavailable`]).
        ProviderUnavailable = "provider_unavailable",
        /// In index mode, a capability must be described before it is
        /// invoked.
        NotDescribed = "not_described",
        /// `describe` named a property the tool's schema does not have.
        NoSuchProperty = "no_such_property",
        /// The arguments do not fit the tool's schema.
        ArgumentsDoNotFit = "arguments_do_not_fit",
        /// The tool's schema cannot be used to check arguments.
        SchemaUnusable = "schema_unusable",
        /// The arguments could not be checked (in time): they are never
        /// sent unchecked.
        ArgumentsNotChecked = "arguments_not_checked",
        /// A WRITE, and the provider's write policy is `refuse`.
        WriteRefusedByPolicy = "write_refused_by_policy",
        /// A WRITE the session's permission mode did not allow.
        WriteRefusedByMode = "write_refused_by_mode",
        /// A WRITE the person declined when the `ask` mode asked them.
        WriteDeclined = "write_declined",
        /// A WRITE while the audit trail cannot record it.
        AuditFailing = "audit_failing",
    }
}

named! {
    /// How a call that went to a provider came out, as its audit record
    /// says it; the status of its answer follows from it
    /// ([`Outcome::status`]).
    #[non_exhaustive]
    pub enum Outcome {
        /// The tool answered.
        Ok = "ok",
        /// The tool answered that it failed (`isError`).
        ToolError = "tool_error",
        /// The provider answered the call with an error of its protocol
        /// (a JSON-RPC error); it stays available. Audit schema version 1
        /// wrote `rejected`, read as this.
        ProviderError = "provider_error" | "rejected",
        /// The provider answered with a result that cannot be read; it
        /// stays available.
        Unreadable = "unreadable",
        /// The provider failed during the call and is unavailable.
        Unavailable = "unavailable",
        /// The answer was dropped (the turn was cancelled) after the call
        /// was sent: the provider may have done it.
        Cancelled = "cancelled",
        /// The session was closed while the call was in flight.
        Closed = "closed",
    }
}

impl Outcome {
    /// The status of the answer to a call that came out so.
    pub fn status(self) -> AnswerStatus {
        match self {
            Outcome::Ok => AnswerStatus::Ok,
            Outcome::ToolError | Outcome::ProviderError | Outcome::Unreadable => {
                AnswerStatus::Failed
            }
            Outcome::Unavailable => AnswerStatus::Unavailable,
            Outcome::Cancelled | Outcome::Closed => AnswerStatus::OutcomeUnknown,
        }
    }
}

named! {
    /// How a session ended.
    #[non_exhaustive]
    pub enum SessionEnd {
        /// It was closed (`Session::close`).
        Closed = "closed",
        /// It was dropped without `close`: its providers were ended at once.
        Dropped = "dropped",
        /// `close` ran where no tokio runtime was: its providers were
        /// ended at once.
        RuntimeGone = "runtime_gone",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::Name;

    #[test]
    fn names_are_the_serialised_names() {
        for &k in TurnKind::ALL {
            assert_eq!(serde_json::to_value(k).ok(), Some(k.as_str().into()));
            assert_eq!(TurnKind::from_name(k.as_str()), Some(k));
        }
        for &r in Runtime::ALL {
            assert_eq!(serde_json::to_value(r).ok(), Some(r.as_str().into()));
            assert_eq!(Runtime::from_name(r.as_str()), Some(r));
        }
        assert_eq!(TurnKind::from_name("chat"), None);
        assert_eq!(TurnKind::StandardQuestion.to_string(), "standard-question");
    }

    #[test]
    fn every_outcome_but_ok_is_an_answer_other_than_ok() {
        for &outcome in Outcome::ALL {
            assert_eq!(
                outcome.status() == AnswerStatus::Ok,
                outcome == Outcome::Ok,
                "{outcome}"
            );
        }
        assert_eq!(Outcome::ProviderError.status(), AnswerStatus::Failed);
        // Version 1's name of it is read, never written.
        assert_eq!("rejected".parse(), Ok(Outcome::ProviderError));
        assert_eq!(Outcome::ProviderError.to_string(), "provider_error");
        assert_eq!(Outcome::Closed.status(), AnswerStatus::OutcomeUnknown);
    }
}
