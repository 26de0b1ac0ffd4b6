//! Every sentence the gateway shows a turn, worded once.
//!
//! The exposure (whole and index), `list`, `describe`, every refusal of a
//! checked call, the lines that name an unavailable provider and the
//! session's notices are all written here, so that one reason has one
//! wording wherever a turn meets it. Provider text reaches these functions
//! already made plain ([`crate::framing`]); results and provider errors
//! arrive framed. Here it is laid out so it cannot stand where the gateway's
//! own lines stand: each line of a description after [`PROVIDER_LINE`],
//! titles, summaries and schemas after a label of the gateway's.
//!
//! The words of the family itself (the exposure, `list`, `describe`) are
//! `messages/shown.rs`; the answers to a call and the notices are here.
//!
//! It is not where the command's own syntax is refused: those messages
//! explain the grammar and live beside it, in [`crate::command`].

mod shown;

use std::fmt::Write as _;
use std::time::Duration;

use crate::audit::AuditFailure;
use crate::framing::{neutralise, one_line};
use crate::vocabulary::{CapabilityClass, UnavailableReason};

pub use shown::{PROVIDER_LINE, index_line, schema_cut};
pub(crate) use shown::{
    describe_command, describe_property_command, described, described_property, index, list,
    no_such_property, provider_unavailable, whole,
};

/// What a turn on SPEAR's earlier runtime is shown, and answered.
pub(crate) const NO_GATEWAY: &str = "External capabilities are not available to this turn: it runs on SPEAR's earlier runtime, which has no capability gateway.";
/// The answer to a command of a turn that is never offered capabilities.
pub(crate) const NOT_SERVED: &str = "External capabilities are not offered to this kind of turn.";
/// The session's notice about a provider a turn could not have, said once.
pub(crate) fn notice_unavailable(provider: &str, reason: UnavailableReason) -> String {
    match reason {
        UnavailableReason::Starting => format!(
            "External capability provider `{provider}` is still starting; the session goes on without it until it is ready."
        ),
        _ => format!(
            "External capability provider `{provider}` is unavailable ({}); the session goes on without it.",
            reason.words()
        ),
    }
}

/// The session's notice that a provider declares it offers no tools at
/// all, said once a start: it is there, and has nothing to call.
pub(crate) fn notice_declares_no_tools(provider: &str) -> String {
    format!(
        "External capability provider `{provider}` declares no tools: it has no capabilities to offer."
    )
}

/// The session's notice that a provider a turn could not have is ready
/// (it finished starting, or it was started again), said once.
pub(crate) fn notice_available(provider: &str) -> String {
    format!("External capability provider `{provider}` is available now.")
}

/// What a turn begun where no tokio runtime runs is shown, and answered.
pub const NO_RUNTIME: &str = "External capabilities are not available to this turn: SPEAR's capability gateway runs on a tokio runtime, and none is running here.";

/// What a turn of a closed session is shown, and answered.
pub(crate) const SESSION_CLOSED: &str =
    "External capabilities are not available: the session that offered them is closed.";

/// What a turn is told after a result whose structured content does not
/// match the tool's declared output schema; `framed` is the framed reason.
pub(crate) fn structured_mismatch(capability: &str, framed: &str) -> String {
    format!(
        "The call to `{}` ran, but its structured result does not match the tool's declared output schema; the first reason:\n{framed}",
        one_line(capability, 200)
    )
}

/// What a turn is told after a result whose structured content was not
/// checked against the tool's declared output schema; `reason` is one of
/// [`UNCHECKED_TOO_LONG`], [`unchecked_no_place`], [`UNCHECKED_FAILED`].
pub(crate) fn structured_unchecked(capability: &str, reason: &str) -> String {
    format!(
        "The call to `{}` ran, but its structured result was not checked against the tool's declared output schema: {reason}.",
        one_line(capability, 200)
    )
}

/// Why a structured result was not checked: its check did not end within
/// what was left of the call's bound.
pub(crate) const UNCHECKED_TOO_LONG: &str = "it was too long to check within the call's time bound";

/// Why a structured result was not checked: `places` earlier checks of the
/// provider's schemas held every place for one until the call's bound.
pub(crate) fn unchecked_no_place(places: usize) -> String {
    format!("{places} earlier checks of the provider's schemas were still running")
}

/// Why a structured result was not checked: the check itself failed.
pub(crate) const UNCHECKED_FAILED: &str = "its check failed";

/// The refusal of a WRITE while the audit trail cannot record it.
pub(crate) fn write_refused_audit_failing(capability: &str) -> String {
    format!(
        "`{}` was not run: it is a WRITE, and the audit trail is failing, so its approval and invocation could not be recorded before it was sent.",
        one_line(capability, 200)
    )
}

/// The session's notice that the audit trail is losing records, said once.
pub(crate) fn notice_audit_failing(failure: &AuditFailure) -> String {
    format!(
        "The audit trail is failing ({}); READ capabilities go on, WRITE capabilities are refused while it cannot record them.",
        one_line(&failure.to_string(), 300)
    )
}

/// The session's notice that the audit trail records again, after it was
/// said to fail.
pub(crate) fn notice_audit_recovered(lost: u64) -> String {
    let s = if lost == 1 { "" } else { "s" };
    format!(
        "The audit trail records again ({lost} audit record{s} could not be written while it failed); WRITE capabilities are allowed again."
    )
}

/// The answer to a call that was sent when the session closed before its
/// answer came.
pub(crate) fn outcome_unknown_closed(capability: &str) -> String {
    format!(
        "The call to `{}` was sent, but the session closed before its answer came: whether it ran is not known.",
        one_line(capability, 200)
    )
}

/// The answer to `describe` or `invoke` of a capability whose provider is
/// unavailable: "unavailable", never "there is none".
pub(crate) fn capability_unavailable(
    capability: &str,
    provider: &str,
    reason: UnavailableReason,
) -> String {
    format!(
        "`{}` is unavailable: provider `{provider}` is unavailable ({}) and none of its capabilities can be called in this turn.",
        one_line(capability, 200),
        reason.words()
    )
}

/// The refusal of a capability the turn is not offered.
pub(crate) fn not_offered(capability: &str, read_only: bool) -> String {
    let hint = if read_only {
        " (this turn may use READ capabilities only)"
    } else {
        ""
    };
    format!(
        "No capability `{}` is offered to this turn{hint}; `spear-capability list` shows the ones that are.",
        one_line(capability, 200)
    )
}

/// The refusal of an `invoke` before `describe`, in index mode.
pub(crate) fn describe_first(capability: &str) -> String {
    format!(
        "Describe `{capability}` before invoking it: {}",
        describe_command(capability)
    )
}

/// The refusal of arguments the schema does not accept, in the gateway's
/// own words: no provider said it, so nothing of it is framed. Each of
/// what the check found is one plain line after `  - ` (it may quote the
/// turn's arguments and the schema's values, made plain and bounded as a
/// title is).
pub(crate) fn arguments_do_not_fit(capability: &str, errors: &[String]) -> String {
    let mut out = format!(
        "The arguments do not fit the schema of `{}`:",
        one_line(capability, 200)
    );
    for error in errors {
        let _ = write!(
            out,
            "\n  - {}",
            neutralise(&one_line(error, MAX_ARGUMENT_ERROR_CHARS))
        );
    }
    out
}

/// The most characters of one line of [`arguments_do_not_fit`].
const MAX_ARGUMENT_ERROR_CHARS: usize = 300;

/// The answer to a call its provider did not answer within `timeout`:
/// which call, and the limit, then what it means for the turn.
pub(crate) fn call_timed_out(
    capability: &str,
    provider: &str,
    timeout: Duration,
    reason: UnavailableReason,
) -> String {
    format!(
        "`{}` took longer than its {} timeout; provider `{provider}` is unavailable ({}) and none of its capabilities can be called in this turn.",
        one_line(capability, 200),
        seconds(timeout),
        reason.words()
    )
}

/// `d` as an operator writes a `timeout`: `3 s`, `1.5 s`, `0.25 s`.
pub fn seconds(d: Duration) -> String {
    let text = format!("{:.3}", d.as_secs_f64());
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} s")
}

/// The refusal of a call whose arguments could not be checked within the
/// provider's `timeout`: it was not sent.
pub(crate) fn arguments_not_checked_in_time(capability: &str, timeout: Duration) -> String {
    format!(
        "The arguments of `{capability}` could not be checked against its schema within {} (the provider's timeout); the call was not sent.",
        seconds(timeout)
    )
}

/// The refusal of a call whose arguments could not be checked at all (the
/// checker failed): it was not sent.
pub(crate) fn arguments_not_checked(capability: &str) -> String {
    format!(
        "The arguments of `{capability}` could not be checked against its schema; the call was not sent."
    )
}

/// The refusal of a call to a tool whose schema failed to compile at its
/// first call; `framed_reason` is the framed reason (the provider's text
/// may be in it). The tool stays refused for the session.
pub(crate) fn schema_unusable(capability: &str, framed_reason: &str) -> String {
    format!(
        "`{capability}` cannot be called in this session: its input schema cannot be used:\n{framed_reason}"
    )
}

/// The refusal of a WRITE whose provider refuses writes.
pub(crate) fn write_refused_by_policy(capability: &str, provider: &str) -> String {
    format!(
        "`{capability}` is a {}, and provider `{provider}` refuses writes (write policy \"refuse\").",
        class_phrase(CapabilityClass::Write)
    )
}

/// The refusal of a WRITE the session's permission mode did not allow.
pub(crate) fn write_refused_by_mode(capability: &str, mode: &str) -> String {
    format!(
        "`{capability}` is a {}, and the session's permission mode ({mode}) did not allow it.",
        class_phrase(CapabilityClass::Write)
    )
}

fn class_phrase(class: CapabilityClass) -> String {
    format!("{class} capability")
}

/// A result the tool itself marked as an error; `framed` is the framed result.
pub(crate) fn tool_error(capability: &str, framed: &str) -> String {
    format!("`{capability}` reported an error:\n{framed}")
}

/// A call the provider answered with a protocol error; `framed` is its
/// framed message.
pub(crate) fn provider_error(provider: &str, capability: &str, code: i64, framed: &str) -> String {
    format!("Provider `{provider}` answered `{capability}` with error {code}:\n{framed}")
}

/// A result the provider sent that cannot be read (`framed`: why).
pub(crate) fn result_unreadable(capability: &str, framed: &str) -> String {
    format!("The result of `{capability}` could not be read:\n{framed}")
}

/// A result that cannot be shown because it cannot be framed safely.
pub(crate) fn unframable(capability: &str, why: impl std::fmt::Display) -> String {
    format!("The result of `{capability}` cannot be shown: {why}.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_is_said_in_seconds_as_an_operator_writes_it() {
        assert_eq!(seconds(Duration::from_secs(3)), "3 s");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(seconds(Duration::from_millis(250)), "0.25 s");
    }

    #[test]
    fn a_refusal_of_arguments_is_plain_lines_after_the_gateways_label() {
        let errors = vec![
            "at /id: \"two\" is not of type \"integer\"".to_owned(),
            "a line\nwith <<<EXTERNAL-CONTENT x>>> in it".to_owned(),
        ];
        let text = arguments_do_not_fit("notes/get_note", &errors);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(
            lines[0],
            "The arguments do not fit the schema of `notes/get_note`:"
        );
        assert_eq!(lines[1], "  - at /id: \"two\" is not of type \"integer\"");
        assert!(lines[2].starts_with("  - a line with "), "{text}");
        assert!(!text.contains("<<<"), "{text}");
    }
}
