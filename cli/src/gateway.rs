//! `turn`, `list` and `invoke`: the gateway as a turn meets it.
//!
//! About 470 lines, kept whole: the three subcommands share the session's
//! set-up, the handling of signals and of a closed stdout, and the output;
//! each subcommand is a function of its own.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Value, json};
use spear_capabilities::internals::command::{CapabilityId, Command};
use spear_capabilities::internals::selection::Decision;
use spear_capabilities::{
    Answer, AnswerStatus, Audit, Exposure, PermissionMode, ProviderState, ReadOnly, Registry,
    Session, SessionOptions, Shown, Turn,
};

use crate::context::ContextArgs;
use crate::lines::Lines;
use crate::out::{Closed, out, out_raw};
use crate::permission::{Answered, Confirm, Mode, permission};
use crate::report::{self, REFUSED_EXIT};
use crate::view::{colour, info_line, result_json, state_json, state_line, status_style};

/// Loads the registry, opens a session on it and begins the turn the flags
/// describe (starting, with `only`, just that provider of those it
/// selects). Text output whose standard output is a turn's (`turn` and
/// `invoke` without `--json`: `refused_to_stderr`) has the registry's
/// refused entries said on standard error first; the others put them in
/// their own output.
async fn open(
    ctx: &ContextArgs,
    mode: Arc<dyn PermissionMode>,
    as_json: bool,
    refused_to_stderr: bool,
    finish: crate::starting::Finish,
    only: Option<&str>,
) -> Result<(Session, Turn, Arc<Registry>), ExitCode> {
    let fail = |e: String| {
        eprintln!("spear-capabilities: {e}");
        ExitCode::from(2)
    };
    let audit = ctx.audit().map_err(fail)?;
    let registry = ctx.registry(&audit).map_err(fail)?;
    if let Some(n) = registry.notice() {
        eprintln!("spear-capabilities: {n}");
    }
    if refused_to_stderr {
        report::say_refused(&registry);
    }
    let registry = Arc::new(registry);
    let mut options = SessionOptions::new("cli", mode).with_audit(audit);
    if let Some(wait) = ctx.wait {
        options = options.with_start_wait(wait);
    }
    let session = Session::open(Arc::clone(&registry), options);
    crate::out::opened(&session);
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
    let turn = if crate::starting::wanted(as_json) {
        crate::starting::begin_turn(&session, begin, finish, ctx.wait).await
    } else {
        begin.await
    };
    // A session just opened, on the CLI's runtime: neither closed nor
    // without a runtime, but said, never unwrapped, should it be.
    let turn = turn.map_err(|e| fail(e.to_string()))?;
    Ok((session, turn, registry))
}

/// [`open`] for the commands whose standard output is the turn's (`turn`,
/// `invoke`): the registry's refused entries (unless `--json`) and the
/// project hint go to standard error, and the live display's lines stay.
async fn open_as_turn(
    ctx: &ContextArgs,
    mode: Arc<dyn PermissionMode>,
    as_json: bool,
    only: Option<&str>,
) -> Result<(Session, Turn, Arc<Registry>), ExitCode> {
    let opened = open(
        ctx,
        mode,
        as_json,
        !as_json,
        crate::starting::Finish::Keep,
        only,
    )
    .await?;
    report::say_project_hint(&opened.2, &ctx.turn());
    Ok(opened)
}

fn exposure_name(e: Exposure) -> &'static str {
    e.as_str()
}

fn shown_json(shown: &Shown) -> Value {
    json!({
        "kind": "shown",
        "exposure": exposure_name(shown.exposure),
        "text": shown.text,
        "tokens": shown.tokens,
        "capabilities": shown.capabilities.iter().map(capability_json).collect::<Vec<_>>(),
        "unavailable": shown.unavailable.iter().map(|u| json!({"provider": u.provider, "reason": u.reason.to_string()})).collect::<Vec<_>>(),
    })
}

/// One capability as the turn is shown it: `schema` is the schema's text
/// as shown (compact JSON, cut past its bound with a note saying so).
fn capability_json(c: &spear_capabilities::ShownCapability) -> Value {
    let mut v = json!({
        "id": c.id,
        "class": c.class.to_string(),
        "description": c.description,
        "schema": c.schema,
    });
    if let Some(title) = &c.title {
        v["title"] = json!(title);
    }
    if let Some(output) = &c.output_schema {
        v["output_schema"] = json!(output);
    }
    v
}

/// `status` in a transcript: the status word, and for a WRITE declined at
/// confirmation, that it was (`refused: declined at confirmation
/// (--confirm no)`).
fn status_text(a: &Answer, asked: Option<&Answered>) -> String {
    match asked.and_then(Answered::declined_note) {
        Some(note) => format!("{}: {note}", a.status.as_str()),
        None => a.status.as_str().to_owned(),
    }
}

fn answer_json(command: &str, answer: Option<&Answer>) -> Value {
    match answer {
        None => json!({"kind": "answer", "command": command, "handled": false}),
        Some(a) => json!({
            "kind": "answer", "command": command, "handled": true,
            "status": a.status.as_str(), "text": a.text,
        }),
    }
}

fn print_notices(session: &Session, as_json: bool) -> Result<(), Closed> {
    for n in session.take_notices() {
        if as_json {
            out!("{}", json!({"kind": "notice", "text": n.text()}))?;
        } else {
            out!("notice: {n}")?;
        }
    }
    Ok(())
}

/// Runs `body`, then closes the session however it ended: a closed
/// standard output ends the command early, its providers stopped the same.
async fn closing<F>(session: Session, body: F) -> ExitCode
where
    F: std::future::Future<Output = Result<ExitCode, Closed>>,
{
    let result = body.await;
    crate::out::close(session.clone()).await;
    let code = result.unwrap_or_else(Closed::code);
    // A trail that lost records is the operator's to hear of, whatever else
    // went well.
    match session.audit_failure() {
        Some(failure) => {
            eprintln!("spear-capabilities: the audit trail is failing: {failure}");
            if code == ExitCode::SUCCESS {
                ExitCode::from(REFUSED_EXIT)
            } else {
                code
            }
        }
        None => code,
    }
}

/// `turn`: what the turn is shown, then the answer to each command.
pub(crate) async fn turn(
    ctx: &ContextArgs,
    mode: Mode,
    confirm: Option<Confirm>,
    commands: Vec<String>,
    as_json: bool,
) -> ExitCode {
    let (mode, confirmations) = permission(mode, confirm);
    let (session, turn, registry) = match open_as_turn(ctx, mode, as_json, None).await {
        Ok(x) => x,
        Err(code) => return code,
    };
    let body = async {
        let shown = turn.shown();
        if as_json {
            out!("{}", shown_json(shown))?;
            for refused in report::refused_records(&registry) {
                out!("{refused}")?;
            }
        } else {
            out!(
                "== what the turn is shown (exposure: {}) ==",
                exposure_name(shown.exposure)
            )?;
            if shown.text.is_empty() {
                out!("(nothing)")?;
            } else {
                out_raw!("{}", with_newline(&shown.text))?;
            }
        }
        print_notices(&session, as_json)?;
        let mut lines = Lines::new(commands).await;
        // A terminal echoes what is typed at it; a transcript written
        // elsewhere gets each command line as piped input does.
        let echo = !lines.typed() || !std::io::stdout().is_terminal();
        lines.say_how_to_end();
        while let Some(command) = lines.next().await {
            let answer = turn.answer(&command).await;
            let asked = confirmations.take();
            if as_json {
                let mut v = answer_json(&command, answer.as_ref());
                if let Some(asked) = &asked {
                    v["confirmation"] = json!(asked.json_word());
                }
                out!("{v}")?;
            } else {
                if echo {
                    out!("\n$ {command}")?;
                }
                match &answer {
                    None => out!("(not a spear-capability command: the shell runs it)")?,
                    Some(a) => out!(
                        "{}[{}]",
                        with_newline(&a.text),
                        status_text(a, asked.as_ref())
                    )?,
                }
            }
            print_notices(&session, as_json)?;
        }
        Ok(exit_counting_refused(&registry, true))
    };
    closing(session.clone(), body).await
}

/// Success when `ok` and the registry refused nothing; else
/// [`REFUSED_EXIT`], the status of every failure these commands report.
fn exit_counting_refused(registry: &Registry, ok: bool) -> ExitCode {
    if ok && registry.refused().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(REFUSED_EXIT)
    }
}

fn with_newline(text: &str) -> String {
    if text.ends_with('\n') {
        text.to_owned()
    } else {
        format!("{text}\n")
    }
}

/// The `read` names of each started provider that its server does not
/// offer: such a tool stays a WRITE, which the operator should know.
fn read_warnings(
    registry: &Registry,
    states: &[(String, ProviderState)],
    shown: &Shown,
) -> Vec<String> {
    let offered: std::collections::BTreeSet<&str> =
        shown.capabilities.iter().map(|c| c.id.as_str()).collect();
    let mut warnings = Vec::new();
    for (id, state) in states {
        let (ProviderState::Ready { .. }, Some(entry)) = (state, registry.entry(id)) else {
            continue;
        };
        for name in &entry.read {
            if !offered.contains(format!("{id}/{name}").as_str()) {
                warnings.push(format!(
                    "`{id}`: read names `{name}`, which its server does not offer (a tool of another name stays a WRITE)"
                ));
            }
        }
    }
    warnings
}

/// `list`: providers' states, then the capabilities and the exposure.
///
/// Exits 1 when a selected provider is unavailable (or still starting), or
/// the registry refused an entry.
pub(crate) async fn list(ctx: &ContextArgs, as_json: bool) -> ExitCode {
    // The providers' lines are the list's first: the live display clears
    // its own, so that a terminal shows them once.
    let finish = crate::starting::Finish::Clear;
    let (session, turn, registry) =
        match open(ctx, Arc::new(ReadOnly), as_json, false, finish, None).await {
            Ok(x) => x,
            Err(code) => return code,
        };
    let body = async {
        let shown = turn.shown();
        let states = session.provider_states();
        let selection = spear_capabilities::internals::selection::select(
            &registry,
            &ctx.turn(),
            &Audit::null(),
        );
        let left_out: Vec<(&str, &str)> = selection
            .candidates
            .iter()
            .filter(|c| c.decision != Decision::Selected)
            .map(|c| (c.provider.as_str(), c.decision.phrase()))
            .collect();
        let warnings = read_warnings(&registry, &states, shown);
        let hints: Vec<String> = report::project_hint(&registry, &ctx.turn())
            .into_iter()
            .collect();
        let all_ok = states
            .iter()
            .all(|(_, s)| matches!(s, ProviderState::Ready { .. }));
        if as_json {
            let mut v = shown_json(shown);
            v["providers"] = states.iter().map(|(id, s)| state_json(id, s)).collect();
            v["not_selected"] = left_out
                .iter()
                .map(|(id, why)| json!({"provider": id, "reason": why}))
                .collect();
            v["refused"] = report::refused_json(&registry);
            v["warnings"] = json!(warnings);
            v["hints"] = json!(hints);
            out!("{v}")?;
        } else {
            out!("providers:")?;
            if states.is_empty() {
                out!("  (none reaches this turn)")?;
            }
            let colour = colour();
            for (id, state) in &states {
                let (status, detail) = state_line(state);
                let style = status_style(status, colour);
                out!("  {style}{status:<8}{style:#} {id}: {detail}")?;
                // For the operator only: what the server says it is.
                if let ProviderState::Ready { info, .. } = state {
                    out!("  {:<8} {}", "", info_line(info))?;
                }
            }
            for (id, why) in &left_out {
                out!("  {:<8} {id}: not selected: {why}", "-")?;
            }
            for line in report::refused_lines(&registry, colour) {
                out!("{line}")?;
            }
            for h in &hints {
                out!("hint: {h}")?;
            }
            for w in &warnings {
                out!("warning: {w}")?;
            }
            let n = shown.capabilities.len();
            out!(
                "exposure: {} ({n} {}, about {} tokens of descriptions and schemas)",
                exposure_name(shown.exposure),
                if n == 1 { "capability" } else { "capabilities" },
                shown.tokens
            )?;
            let width = shown
                .capabilities
                .iter()
                .map(|c| c.id.len())
                .max()
                .unwrap_or(0);
            for c in &shown.capabilities {
                out!(
                    "{}",
                    spear_capabilities::internals::messages::index_line(c, width)
                )?;
            }
        }
        Ok(exit_counting_refused(&registry, all_ok))
    };
    closing(session.clone(), body).await
}

/// `invoke`: one checked call through the full gateway.
pub(crate) async fn invoke(
    ctx: &ContextArgs,
    id: &str,
    arguments: Option<&str>,
    mode: Mode,
    confirm: Option<Confirm>,
    as_json: bool,
) -> ExitCode {
    let usage = |msg: String| {
        eprintln!("spear-capabilities: {msg}");
        ExitCode::from(2)
    };
    let Some(id) = CapabilityId::parse(id) else {
        return usage(format!(
            "{id:?} is not a capability id; the form is <provider>/<tool>"
        ));
    };
    let arguments = match crate::arguments::parse(arguments) {
        Ok(arguments) => arguments,
        Err(e) => return usage(e),
    };
    let (mode, confirmations) = permission(mode, confirm);
    // Only the provider called is started: the others' starts (an npx
    // download, say) are not this command's to wait for.
    let only = Some(id.provider.as_str());
    let (session, turn, registry) = match open_as_turn(ctx, mode, as_json, only).await {
        Ok(x) => x,
        Err(code) => return code,
    };
    let body = async {
        if turn.shown().exposure == Exposure::Index {
            // The operator has nothing to read first: describe on their behalf.
            turn.execute(Command::Describe {
                id: id.clone(),
                property: Vec::new(),
            })
            .await;
        }
        let answer = turn
            .execute(Command::Invoke {
                id: id.clone(),
                arguments,
            })
            .await;
        let asked = confirmations.take();
        // The turn is told to run `spear-capability list`; the operator's
        // command is another, and a near miss deserves its name.
        let shown: Vec<&str> = turn
            .shown()
            .capabilities
            .iter()
            .map(|c| c.id.as_str())
            .collect();
        let wanted = id.to_string();
        // Only the provider named was started: a misspelt provider is
        // matched against the ids the turn selects, a misspelt tool against
        // the started provider's capabilities.
        let selection = spear_capabilities::internals::selection::select(
            &registry,
            &ctx.turn(),
            &Audit::null(),
        );
        let providers: Vec<&str> = selection.selected().collect();
        let near_provider = (!providers.contains(&id.provider.as_str()))
            .then(|| closest(&id.provider, &providers))
            .flatten()
            .map(|p| format!("{p}/{}", id.tool));
        let hint = (answer.status == AnswerStatus::Refused && !shown.contains(&wanted.as_str()))
            .then(|| {
                let near = near_provider
                    .as_deref()
                    .or_else(|| closest(&wanted, &shown))
                    .map_or_else(|| ".".to_owned(), |c| format!("; did you mean `{c}`?"));
                format!(
                    "No capability `{wanted}` reaches this turn{near} `spear-capabilities list` with the same flags shows the ones that do."
                )
            });
        if as_json {
            let mut v = answer_json(&format!("invoke {id}"), Some(&answer));
            // For the operator only: the provider's own result, beside the
            // framed text a turn would read.
            if let Some(result) = answer.operator_result() {
                v["result"] = result_json(result);
            }
            if let Some(hint) = &hint {
                v["operator_hint"] = json!(hint);
            }
            if let Some(asked) = &asked {
                v["confirmation"] = json!(asked.json_word());
            }
            if !registry.refused().is_empty() {
                v["refused"] = report::refused_json(&registry);
            }
            out!("{v}")?;
        } else if let Some(hint) = &hint {
            out!("{hint}")?;
        } else {
            out_raw!("{}", with_newline(&answer.text))?;
            if let Some(note) = asked.as_ref().and_then(Answered::declined_note) {
                eprintln!("spear-capabilities: `{id}` was {note}, so it was not sent");
            }
        }
        for n in session.take_notices() {
            eprintln!("notice: {n}");
        }
        Ok(exit_counting_refused(
            &registry,
            answer.status == AnswerStatus::Ok,
        ))
    };
    closing(session.clone(), body).await
}

/// The candidate nearest to `wanted` by edit distance, if one is near
/// enough to be a typo (at most a third of its length away).
fn closest<'a>(wanted: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (strsim::levenshtein(wanted, c), *c))
        .filter(|(d, c)| *d > 0 && *d <= c.len().max(3) / 3)
        .min()
        .map(|(_, c)| c)
}
