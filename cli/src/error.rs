//! How a subcommand ends when it does not end well, and the exit status
//! each way gives: a subcommand returns a [`Failure`] to `main`, which says
//! its message once, on standard error, and exits with
//! [`Failure::exit_code`]. No subcommand prints its own error or picks a
//! number.

use std::process::ExitCode;

use crate::out::Closed;

/// Why a subcommand did not end in success (exit 0).
#[derive(Debug)]
pub(crate) enum Failure {
    /// It could not do what it was asked: bad usage, a registry that cannot
    /// be read or parsed, a file named on the command line that does not
    /// exist, a file that cannot be written. Exit 2.
    Usage(String),
    /// What it was asked for is refused or is not there (no entry with the
    /// id, an entry `add` will not write). Exit 1.
    Refused(String),
    /// Its output already says what is wrong (a refused entry, a start
    /// that failed, a provider unavailable, a call refused): nothing more
    /// to say. Exit 1.
    Said,
    /// What it checked is broken (an audit trail `audit verify` read), or
    /// could not be read: its output says where and why. Exit 2.
    Broken,
    /// Standard output closed under it: 141 (128 + SIGPIPE) for a closed
    /// pipe, what a shell shows for `yes | head -1`'s writer; 1 for any
    /// other write error (said where it happened).
    Closed(Closed),
    /// A signal ended it, once every provider was stopped: 128 + the
    /// signal's number (130 SIGINT, 143 SIGTERM, 129 SIGHUP).
    Signal(u8),
}

impl Failure {
    /// What `main` says on standard error, if anything.
    pub(crate) fn message(&self) -> Option<&str> {
        match self {
            Failure::Usage(message) | Failure::Refused(message) => Some(message),
            Failure::Said | Failure::Broken | Failure::Closed(_) | Failure::Signal(_) => None,
        }
    }

    /// The process's exit status.
    pub(crate) fn exit_code(&self) -> ExitCode {
        match self {
            Failure::Usage(_) | Failure::Broken => ExitCode::from(2),
            Failure::Refused(_) | Failure::Said => ExitCode::from(1),
            Failure::Closed(Closed { broken_pipe: true }) => ExitCode::from(141),
            Failure::Closed(Closed { broken_pipe: false }) => ExitCode::from(1),
            Failure::Signal(code) => ExitCode::from(*code),
        }
    }
}

impl From<Closed> for Failure {
    fn from(closed: Closed) -> Self {
        Failure::Closed(closed)
    }
}

/// Success when `ok`, else [`Failure::Said`]: the end of a subcommand whose
/// output has said what is wrong.
pub(crate) fn said_unless(ok: bool) -> Result<(), Failure> {
    if ok { Ok(()) } else { Err(Failure::Said) }
}
