//! The one error type of the workspace's public API.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use crate::vocabulary::UnavailableReason;

/// Everything that can go wrong in the core or in a provider, as seen by SPEAR.
///
/// Messages are lower-case and carry no trailing punctuation so that chained
/// messages read well. Variants that concern a provider name it in a field;
/// process failures carry the tail of the provider's stderr. These messages
/// are for the deployment (audit trail, operator CLI): a turn is only ever told
/// [`Error::unavailable_reason`], never the message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The capabilities file exists but could not be read.
    #[error("cannot read capabilities file {}: {source}", path.display())]
    RegistryRead {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: io::Error,
    },
    /// The capabilities file is not JSON.
    #[error("capabilities file {}:{line}:{column}: {message}", path.display())]
    RegistrySyntax {
        /// The file.
        path: PathBuf,
        /// 1-based line of the fault.
        line: usize,
        /// 1-based column of the fault.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// The capabilities file is JSON but not `{"providers": [...]}`.
    #[error("capabilities file {}: {message}", path.display())]
    RegistryShape {
        /// The file.
        path: PathBuf,
        /// What is wrong and what is expected.
        message: String,
    },
    /// No provider kind of that name is linked into this program.
    #[error("unknown provider kind `{name}`; available kinds: {available}")]
    UnknownKind {
        /// The name asked for.
        name: String,
        /// The kinds that exist, sorted, comma-separated.
        available: String,
    },
    /// No provider kind is linked into this program, so no entry could ever
    /// start.
    #[error(
        "no provider kind is linked into this program: build the kinds with `spear_providers::kinds()` (or `Kinds::new`), or name the kind crates (`use spear_providers as _;`) before `Kinds::linked()`"
    )]
    NoKinds,
    /// The gateway was used where no tokio runtime runs: providers are
    /// started, timed and stopped on one (see the crate docs).
    #[error(
        "no tokio runtime is running here: SPEAR's capability gateway needs tokio 1 (multi- or current-thread, with IO and time enabled)"
    )]
    NoRuntime,
    /// Two linked crates register a provider kind under the same name.
    #[error("provider kind `{name}` is registered more than once")]
    DuplicateKind {
        /// The name registered twice.
        name: String,
    },
    /// The provider could not be started.
    #[error("provider `{provider}` did not start: {reason}{}", tail(stderr))]
    Start {
        /// The provider's id.
        provider: String,
        /// Why, e.g. the command and the OS error.
        reason: String,
        /// The last of what it wrote to stderr, if anything.
        stderr: String,
    },
    /// A request to the provider took longer than its timeout.
    #[error("provider `{provider}` timed out after {}{}", crate::messages::seconds(*after), tail(stderr))]
    Timeout {
        /// The provider's id.
        provider: String,
        /// The timeout that ran out.
        after: Duration,
        /// The last of what it wrote to stderr, if anything.
        stderr: String,
    },
    /// The provider said something its protocol does not allow.
    #[error("provider `{provider}` broke the protocol: {message}{}", tail(stderr))]
    Protocol {
        /// The provider's id.
        provider: String,
        /// What it did wrong.
        message: String,
        /// The last of what it wrote to stderr, if anything.
        stderr: String,
    },
    /// The provider went away (its process exited, its connection closed).
    #[error("provider `{provider}` exited ({status}){}", tail(stderr))]
    Crashed {
        /// The provider's id.
        provider: String,
        /// How it ended, e.g. `exit status: 1` or `signal: 9`.
        status: String,
        /// The last of what it wrote to stderr, if anything.
        stderr: String,
    },
    /// The provider is healthy but answered this one call with an error.
    ///
    /// Unlike the variants above, this does not make the provider unavailable.
    #[error("provider `{provider}` refused the call to `{tool}`: error {code}: {message}")]
    CallError {
        /// The provider's id.
        provider: String,
        /// The tool that was called.
        tool: String,
        /// The protocol's error code.
        code: i64,
        /// The provider's message (untrusted text).
        message: String,
    },
    /// The provider is healthy but answered this one call with a result
    /// that cannot be read (not the shape its protocol gives a result, or
    /// text no string can hold). Like [`Error::CallError`], it does not
    /// make the provider unavailable.
    #[error(
        "provider `{provider}` answered the call to `{tool}` with a result that cannot be read: {reason}"
    )]
    CallUnreadable {
        /// The provider's id.
        provider: String,
        /// The tool that was called.
        tool: String,
        /// What is wrong with the result, in the provider kind's words
        /// (which may quote the provider's text).
        reason: String,
    },
    /// The provider was used after it was shut down.
    #[error("provider `{provider}` is shut down")]
    ShutDown {
        /// The provider's id.
        provider: String,
    },
}

fn tail(stderr: &str) -> String {
    let trimmed = stderr.trim_end();
    if trimmed.is_empty() {
        String::new()
    } else {
        format!("; stderr ends with: {trimmed}")
    }
}

impl Error {
    /// Why a turn must be told that the provider is unavailable, or `None` when
    /// this error does not make its provider unavailable (for instance a
    /// rejected call).
    ///
    /// This short category is all a turn ever learns of a provider failure: the
    /// message itself may carry commands, paths and stderr, which are the
    /// deployment's own.
    pub fn unavailable_reason(&self) -> Option<UnavailableReason> {
        match self {
            Error::Start { .. }
            | Error::UnknownKind { .. }
            | Error::DuplicateKind { .. }
            | Error::NoKinds
            | Error::NoRuntime => Some(UnavailableReason::DidNotStart),
            Error::Timeout { .. } => Some(UnavailableReason::TimedOut),
            Error::Protocol { .. } => Some(UnavailableReason::ProtocolError),
            Error::Crashed { .. } | Error::ShutDown { .. } => Some(UnavailableReason::Crashed),
            Error::RegistryRead { .. }
            | Error::RegistrySyntax { .. }
            | Error::RegistryShape { .. }
            | Error::CallError { .. }
            | Error::CallUnreadable { .. } => None,
        }
    }
}

/// Why a turn could not begin: it is offered no capability. SPEAR says so
/// to the turn in its own words, or with [`TurnError::turn_text`].
///
/// The audit trail records it as `gateway_absent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TurnError {
    /// The session was closed (by this handle or a clone) before the turn
    /// began, or while its providers were starting.
    #[error("the session is closed")]
    SessionClosed,
    /// No tokio runtime runs where the turn was begun: providers are
    /// started, timed and stopped on one.
    #[error(
        "no tokio runtime is running here: SPEAR's capability gateway needs tokio 1 (multi- or current-thread, with IO and time enabled)"
    )]
    NoRuntime,
}

impl TurnError {
    /// What a turn may be told of it (plain text, no deployment detail).
    pub fn turn_text(self) -> &'static str {
        match self {
            TurnError::SessionClosed => crate::messages::SESSION_CLOSED,
            TurnError::NoRuntime => crate::messages::NO_RUNTIME,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_tail_is_appended_only_when_present() {
        let quiet = Error::Crashed {
            provider: "t".into(),
            status: "exit status: 1".into(),
            stderr: " \n".into(),
        };
        assert_eq!(quiet.to_string(), "provider `t` exited (exit status: 1)");
        let loud = Error::Crashed {
            provider: "t".into(),
            status: "exit status: 1".into(),
            stderr: "boom\n".into(),
        };
        assert_eq!(
            loud.to_string(),
            "provider `t` exited (exit status: 1); stderr ends with: boom"
        );
    }

    #[test]
    fn a_rejected_call_leaves_the_provider_available() {
        let e = Error::CallError {
            provider: "t".into(),
            tool: "x".into(),
            code: -32602,
            message: "bad".into(),
        };
        assert_eq!(e.unavailable_reason(), None);
        let t = Error::Timeout {
            provider: "t".into(),
            after: Duration::from_secs(10),
            stderr: String::new(),
        };
        assert_eq!(t.unavailable_reason(), Some(UnavailableReason::TimedOut));
        assert_eq!(t.to_string(), "provider `t` timed out after 10 s");
    }
}
