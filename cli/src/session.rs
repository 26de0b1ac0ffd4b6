//! The gateway as `list`, `turn` and `invoke` meet it: a session opened on
//! the registry the flags name and the turn they describe begun
//! ([`open`]), then closed however the subcommand ended ([`closing`]).

use std::sync::Arc;

use serde_json::{Value, json};
use spear_capabilities::{
    Answer, PermissionMode, ProviderState, Registry, Session, SessionOptions, Turn,
    UnavailableReason,
};

use crate::error::Failure;
use crate::flags::{ContextArgs, WaitArgs};
use crate::out::{self, Closed, out};
use crate::report;
use crate::starting::Finish;

/// A session and the turn begun in it.
pub(crate) struct Opened {
    pub(crate) session: Session,
    pub(crate) turn: Turn,
    pub(crate) registry: Arc<Registry>,
}

/// Where a subcommand's standard output goes, which decides where the
/// registry's refused entries and the live display's lines go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// `list`: its own view, which shows the refused entries and each
    /// provider's state (the live display's lines are cleared).
    List,
    /// `turn` and `invoke`: the turn's view, which a refused entry never
    /// enters (said on standard error, or beside it with `--json`); the
    /// live display's lines stay, and the project hint goes to standard
    /// error.
    Turn,
}

/// This run's session id: runs that share a trail keep their records apart
/// (`cli-<pid>-<milliseconds since the epoch>`).
fn session_id() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!("cli-{}-{millis}", std::process::id())
}

/// Loads the registry, opens a session on it and begins the turn the flags
/// describe (starting, with `only`, just that provider of those it
/// selects), as `output` says.
pub(crate) async fn open(
    ctx: &ContextArgs,
    mode: Arc<dyn PermissionMode>,
    as_json: bool,
    output: Output,
    only: Option<&str>,
) -> Result<Opened, Failure> {
    let audit = ctx.audit()?;
    let registry = ctx.registry.load(&audit)?;
    if let Some(n) = registry.notice() {
        out::tell(n);
    }
    if output == Output::Turn && !as_json {
        report::say_refused(&registry);
    }
    let registry = Arc::new(registry);
    let mut options = SessionOptions::new(session_id(), mode).with_audit(audit);
    if let Some(wait) = ctx.wait.wait {
        options = options.with_start_wait(wait);
    }
    let session = Session::open(Arc::clone(&registry), options);
    out::opened(&session);
    // Each provider's state as it starts, for a person at a terminal;
    // nothing when standard error is piped, or for a script (`--json`).
    let only: Vec<&str> = only.into_iter().collect();
    let begin = async {
        if only.is_empty() {
            session.begin_turn(ctx.turn()).await
        } else {
            session.begin_turn_starting_only(ctx.turn(), &only).await
        }
    };
    let finish = match output {
        Output::List => Finish::Clear,
        Output::Turn => Finish::Keep,
    };
    let live = crate::starting::wanted(as_json);
    let turn = if live {
        crate::starting::begin_turn(&session, begin, finish, ctx.wait.wait).await
    } else {
        begin.await
    };
    // A session just opened, on the CLI's runtime: neither closed nor
    // without a runtime, but said, never unwrapped, should it be.
    let turn = turn.map_err(|e| Failure::Usage(e.to_string()))?;
    if output == Output::Turn {
        report::say_project_hint(&registry, &ctx.turn());
        // `list` says it on the provider's line, as the live display does.
        if !live {
            say_slow_starts(&session);
        }
    }
    Ok(Opened {
        session,
        turn,
        registry,
    })
}

/// Says on standard error, for each provider whose start timed out, how
/// to let a slow start finish (the turn is told only that it timed out).
fn say_slow_starts(session: &Session) {
    for (id, state) in session.provider_states() {
        if let ProviderState::Unavailable {
            reason: UnavailableReason::TimedOut,
            ..
        } = state
        {
            out::tell(format_args!(
                "`{id}` timed out starting; {}",
                WaitArgs::slow_start_hint()
            ));
        }
    }
}

/// Runs `body`, then closes the session however it ended: a closed
/// standard output ends the command early, its providers stopped the same.
/// A trail that lost records is the operator's to hear of, whatever else
/// went well, and fails a command that otherwise succeeded.
pub(crate) async fn closing<F>(session: &Session, body: F) -> Result<(), Failure>
where
    F: std::future::Future<Output = Result<(), Failure>>,
{
    let result = body.await;
    out::close(session.clone()).await;
    match (session.audit_failure(), result) {
        (None, result) => result,
        (Some(failure), Ok(())) => Err(Failure::Refused(format!(
            "the audit trail is failing: {failure}"
        ))),
        (Some(failure), Err(e)) => {
            out::tell(format_args!("the audit trail is failing: {failure}"));
            Err(e)
        }
    }
}

/// Success when `ok` and the registry refused nothing; else
/// [`Failure::Said`]: these commands say every failure in their output.
pub(crate) fn unless_refused(registry: &Registry, ok: bool) -> Result<(), Failure> {
    crate::error::said_unless(ok && registry.refused().is_empty())
}

/// The session's notices since the last call: `notice: ...` lines, or
/// `{"kind": "notice"}` records with `--json`.
pub(crate) fn print_notices(session: &Session, as_json: bool) -> Result<(), Closed> {
    for n in session.take_notices() {
        if as_json {
            out::json(&json!({"kind": "notice", "text": n.text()}))?;
        } else {
            out!("notice: {n}")?;
        }
    }
    Ok(())
}

/// An answer as `--json` gives it: `handled: false` for a line that is not
/// a `spear-capability` command.
pub(crate) fn answer_json(command: &str, answer: Option<&Answer>) -> Value {
    match answer {
        None => json!({"kind": "answer", "command": command, "handled": false}),
        Some(a) => json!({
            "kind": "answer", "command": command, "handled": true,
            "status": a.status.as_str(), "text": a.text,
        }),
    }
}

/// `text`, ending with a line break.
pub(crate) fn with_newline(text: &str) -> String {
    if text.ends_with('\n') {
        text.to_owned()
    } else {
        format!("{text}\n")
    }
}
