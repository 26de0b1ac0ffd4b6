//! The session's permission mode as the flags set it (`--mode`,
//! `--confirm`), and what became of each confirmation it asked for.
//!
//! A WRITE declined at confirmation is told to the turn as the core tells
//! it, the permission mode's refusal; the operator is owed more than that:
//! that it was asked and declined, and by what (`--confirm no`, the person
//! at the terminal, or no terminal to ask on). [`Confirmations`] keeps each
//! answer for the subcommand to say beside the turn's text.

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use clap::{Args, ValueEnum};
use futures::future::BoxFuture;
use spear_capabilities::{Ask, Auto, PermissionMode, ReadOnly, WriteRequest};

/// How WRITE capabilities are allowed.
#[derive(Debug, Args)]
pub(crate) struct PermissionArgs {
    /// The session's permission mode.
    #[arg(long, value_enum, default_value_t = Mode::Ask)]
    mode: Mode,
    /// Answer every confirmation (ask mode) without asking.
    #[arg(long, value_enum)]
    confirm: Option<Confirm>,
}

impl PermissionArgs {
    /// The permission mode the flags name, and the record of what its
    /// confirmations were answered.
    pub(crate) fn mode(&self) -> (Arc<dyn PermissionMode>, Confirmations) {
        permission(self.mode, self.confirm)
    }
}

/// The session's permission mode.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum Mode {
    ReadOnly,
    Ask,
    Auto,
}

/// An answer to every confirmation, instead of asking.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum Confirm {
    Yes,
    No,
}

/// Who answered a confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AnsweredBy {
    /// `--confirm yes` or `--confirm no`.
    Flag,
    /// The person at the controlling terminal.
    Person,
    /// Nobody: there was no terminal to ask on, which is a no.
    NoTerminal,
}

/// One confirmation the session asked for, and its answer.
#[derive(Debug, Clone)]
pub(crate) struct Answered {
    pub(crate) accepted: bool,
    pub(crate) by: AnsweredBy,
}

impl Answered {
    /// What the operator is told of a declined WRITE, after the status
    /// word: `declined at confirmation (--confirm no)`; `None` when it was
    /// accepted.
    pub(crate) fn declined_note(&self) -> Option<String> {
        if self.accepted {
            return None;
        }
        let by = match self.by {
            AnsweredBy::Flag => "--confirm no",
            AnsweredBy::Person => "answered no",
            AnsweredBy::NoTerminal => "no terminal to ask on",
        };
        Some(format!("declined at confirmation ({by})"))
    }

    /// `confirmation` in `--json` output: `accepted` or `declined`.
    pub(crate) fn json_word(&self) -> &'static str {
        if self.accepted {
            "accepted"
        } else {
            "declined"
        }
    }
}

/// The confirmations asked for since the last [`Confirmations::take`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Confirmations(Arc<Mutex<Vec<Answered>>>);

impl Confirmations {
    fn record(&self, answered: Answered) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(answered);
    }

    /// The last answer given since the last call, and so the answer for
    /// the one call made since (a command is one call at most); forgets
    /// every answer recorded.
    pub(crate) fn take(&self) -> Option<Answered> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner())).pop()
    }
}

/// The permission mode `mode` and `confirm` name, and the record of what
/// its confirmations were answered.
fn permission(mode: Mode, confirm: Option<Confirm>) -> (Arc<dyn PermissionMode>, Confirmations) {
    let confirmations = Confirmations::default();
    let mode: Arc<dyn PermissionMode> = match mode {
        Mode::ReadOnly => Arc::new(ReadOnly),
        Mode::Auto => Arc::new(Auto),
        Mode::Ask => {
            let record = confirmations.clone();
            Arc::new(Ask::new(
                move |req: WriteRequest| -> BoxFuture<'static, bool> {
                    let record = record.clone();
                    Box::pin(async move {
                        let (accepted, by) = match confirm {
                            Some(Confirm::Yes) => (true, AnsweredBy::Flag),
                            Some(Confirm::No) => (false, AnsweredBy::Flag),
                            None => tokio::task::spawn_blocking(move || ask_on_terminal(&req))
                                .await
                                .unwrap_or((false, AnsweredBy::NoTerminal)),
                        };
                        record.record(Answered { accepted, by });
                        accepted
                    })
                },
            ))
        }
    };
    (mode, confirmations)
}

/// Asks the person at the controlling terminal; no terminal is a no.
fn ask_on_terminal(req: &WriteRequest) -> (bool, AnsweredBy) {
    let Ok(mut tty) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
    else {
        crate::out::tell(format_args!(
            "no terminal to ask on, so the WRITE {} is declined (use --confirm yes|no)",
            req.capability
        ));
        return (false, AnsweredBy::NoTerminal);
    };
    let _ = write!(tty, "{} [y/N] ", req.question());
    let mut line = String::new();
    let _ = std::io::BufReader::new(tty).read_line(&mut line);
    (
        matches!(line.trim(), "y" | "Y" | "yes" | "Yes"),
        AnsweredBy::Person,
    )
}
