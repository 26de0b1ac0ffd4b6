//! What can go wrong with one server, before it is named and given its stderr.

use std::time::Duration;

use spear_capabilities::Error;

/// A failure of one server, without the provider's id and the server's
/// stderr, which are added when it is reported ([`Failure::into_error`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Failure {
    /// The server could not be started or refused to start.
    #[error("{0}")]
    Start(String),
    /// A request of the start took longer than its timeout.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// The server said something MCP over stdio does not allow.
    #[error("{0}")]
    Protocol(String),
    /// The server's stdout ended or failed (what happened to it).
    #[error("it {0}")]
    Closed(String),
    /// The server's process ended (its status), or its connection is lost.
    #[error("{0}")]
    Crashed(String),
    /// The server answered one request with a JSON-RPC error.
    #[error("error {code}: {message}")]
    Rejected { code: i64, message: String },
    /// The server answered one call with a result that cannot be read.
    #[error("{0}")]
    Unreadable(String),
    /// The provider was shut down.
    #[error("shut down")]
    ShutDown,
}

impl Failure {
    /// The core's error for this failure of `provider`, in a call of `tool`
    /// (empty outside calls), with the server's `stderr` tail.
    pub(crate) fn into_error(self, provider: &str, tool: &str, stderr: String) -> Error {
        let provider = provider.to_owned();
        match self {
            Failure::Start(reason) => Error::Start {
                provider,
                reason,
                stderr,
            },
            Failure::Timeout(after) => Error::Timeout {
                provider,
                after,
                stderr,
            },
            Failure::Crashed(status) | Failure::Closed(status) => Error::Crashed {
                provider,
                status,
                stderr,
            },
            Failure::Rejected { code, message } if !tool.is_empty() => Error::CallError {
                provider,
                tool: tool.to_owned(),
                code,
                message,
            },
            Failure::Unreadable(reason) if !tool.is_empty() => Error::CallUnreadable {
                provider,
                tool: tool.to_owned(),
                reason,
            },
            // Outside a call, the server fails at what every server must do.
            Failure::Protocol(message) | Failure::Unreadable(message) => Error::Protocol {
                provider,
                message,
                stderr,
            },
            Failure::Rejected { code, message } => Error::Protocol {
                provider,
                message: format!("the server answered with error {code}: {message}"),
                stderr,
            },
            Failure::ShutDown => Error::ShutDown { provider },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spear_capabilities::UnavailableReason;

    #[test]
    fn a_rejected_call_names_the_tool_and_keeps_the_provider_available() {
        let e = Failure::Rejected {
            code: -32602,
            message: "bad".into(),
        }
        .into_error("t", "echo", "ignored".into());
        assert_eq!(
            e.to_string(),
            "provider `t` refused the call to `echo`: error -32602: bad"
        );
        assert_eq!(e.unavailable_reason(), None);
    }

    #[test]
    fn a_rejected_listing_is_a_protocol_fault() {
        let e = Failure::Rejected {
            code: -32601,
            message: "no tools".into(),
        }
        .into_error("t", "", "log".into());
        assert_eq!(
            e.unavailable_reason(),
            Some(UnavailableReason::ProtocolError)
        );
        assert_eq!(
            e.to_string(),
            "provider `t` broke the protocol: the server answered with error -32601: no tools; stderr ends with: log"
        );
    }

    #[test]
    fn process_failures_carry_the_stderr_tail() {
        let e = Failure::Crashed("exit status: 3".into()).into_error("t", "x", "boom\n".into());
        assert_eq!(
            e.to_string(),
            "provider `t` exited (exit status: 3); stderr ends with: boom"
        );
        let e = Failure::Timeout(Duration::from_secs(2)).into_error("t", "", String::new());
        assert!(matches!(e, Error::Timeout { after, .. } if after == Duration::from_secs(2)));
    }
}
