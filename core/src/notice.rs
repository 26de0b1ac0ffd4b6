//! Notices: what a session tells the person once, as data.
//!
//! A provider left out of the session's turns, one back, one with no tools, an audit trail
//! that is losing records or records again: each is said once, by
//! [`crate::Session::take_notices`].
//! SPEAR words them as it likes, or uses [`Notice::text`].

use crate::audit::AuditFailure;
use crate::messages;
use crate::vocabulary::UnavailableReason;

/// Something the person should hear of, said once in the session's life.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notice {
    /// A provider is left out of the session's turns, for `reason`, until
    /// it is ready or started again.
    Unavailable {
        /// The provider's id.
        provider: String,
        /// Why, as a turn is told it.
        reason: UnavailableReason,
    },
    /// A provider a turn could not have is ready now (it finished
    /// starting, or it was started again).
    Available {
        /// The provider's id.
        provider: String,
    },
    /// A provider started and declares it offers no tools at all: it is
    /// there, and has nothing to call. Said once a start.
    NoTools {
        /// The provider's id.
        provider: String,
    },
    /// The audit trail is losing records: READs go on, WRITEs are refused
    /// while it cannot record them.
    AuditFailing(AuditFailure),
    /// The audit trail records again, after the person was told it fails
    /// ([`Notice::AuditFailing`]): WRITEs are allowed again.
    AuditRecovered {
        /// The records it lost in all.
        lost: u64,
    },
}

impl Notice {
    /// The provider it is about, if it is about one.
    pub fn provider(&self) -> Option<&str> {
        match self {
            Notice::Unavailable { provider, .. }
            | Notice::Available { provider }
            | Notice::NoTools { provider } => Some(provider),
            Notice::AuditFailing(_) | Notice::AuditRecovered { .. } => None,
        }
    }

    /// Why its provider is unavailable, for [`Notice::Unavailable`].
    pub fn reason(&self) -> Option<UnavailableReason> {
        match self {
            Notice::Unavailable { reason, .. } => Some(*reason),
            _ => None,
        }
    }

    /// The notice in one sentence, for the person:
    ///
    /// ```
    /// use spear_capabilities::{Notice, UnavailableReason};
    /// let notice = Notice::Unavailable {
    ///     provider: "tracker".into(),
    ///     reason: UnavailableReason::TimedOut,
    /// };
    /// assert_eq!(
    ///     notice.text(),
    ///     "External capability provider `tracker` is unavailable (timed out); the session goes on without it."
    /// );
    /// ```
    pub fn text(&self) -> String {
        match self {
            Notice::Unavailable { provider, reason } => {
                messages::notice_unavailable(provider, *reason)
            }
            Notice::Available { provider } => messages::notice_available(provider),
            Notice::NoTools { provider } => messages::notice_declares_no_tools(provider),
            Notice::AuditFailing(failure) => messages::notice_audit_failing(failure),
            Notice::AuditRecovered { lost } => messages::notice_audit_recovered(*lost),
        }
    }
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}
