//! `invoke`: one checked call through the full gateway, starting only the
//! provider it calls.

use clap_complete::ArgValueCandidates;
use serde_json::json;
use spear_capabilities::selection::select;
use spear_capabilities::{AnswerStatus, Audit, exposure::Exposure};
use spear_capabilities::{CapabilityId, Command};

use crate::complete;
use crate::error::{Failure, said_unless};
use crate::examples::{self, Example};
use crate::flags::ContextArgs;
use crate::out::{self, out, out_raw};
use crate::permission::{Answered, PermissionArgs};
use crate::report;
use crate::session::{Opened, Output, answer_json, closing, open, with_newline};
use crate::view::result_json;

/// The examples of `invoke`.
pub(crate) const EXAMPLES: &[Example] = &[
    Example::new(
        "spear-capabilities invoke notes/search_notes '{\"query\": \"flaky\"}' --project demo",
        "One READ, checked as a turn's call is; the framed result a turn would read",
    ),
    Example::new(
        "spear-capabilities invoke notes/add_note '{\"title\": \"Ship it\", \"text\": \"Friday\"}' --project demo --confirm yes",
        "A WRITE of a `confirm` provider, confirmed without asking",
    ),
    Example::new(
        "spear-capabilities invoke notes/get_note '{\"id\": 1}' --project demo --json",
        "The framed text and the server's own result, as JSON",
    ),
    Example::new(
        "spear-capabilities invoke notes/add_note @note.json --project demo --confirm no",
        "The arguments read from note.json; the WRITE declined",
    ),
    Example::new(
        "echo '{\"id\": 1}' | spear-capabilities invoke notes/get_note - --project demo",
        "The arguments read from standard input",
    ),
];

/// One checked call through the full gateway.
///
/// Exit status: the call's: 0 when it succeeded, 1 when it was refused,
/// failed or its provider is unavailable; 2 on bad usage, an unreadable
/// registry or a file named with --capabilities that does not exist. An
/// entry the registry refuses is said on standard error (with --json, as
/// `refused`) and leaves the status the call's: `check` and `list` exit 1
/// for it.
#[derive(Debug, clap::Args)]
#[command(after_help = examples::help(EXAMPLES))]
pub(crate) struct Args {
    /// The capability, `<provider>/<tool>`.
    #[arg(add = ArgValueCandidates::new(complete::capability_prefixes))]
    id: String,
    /// The arguments, one JSON object (default `{}`); `@FILE` reads
    /// them from FILE, `-` from standard input.
    arguments: Option<String>,
    #[command(flatten)]
    context: ContextArgs,
    #[command(flatten)]
    permission: PermissionArgs,
    /// Print the `answer` JSON object instead of text.
    #[arg(long)]
    json: bool,
}

impl Args {
    pub(crate) async fn run(self) -> Result<(), Failure> {
        let Some(id) = CapabilityId::parse(&self.id) else {
            return Err(Failure::Usage(format!(
                "{:?} is not a capability id; the form is <provider>/<tool>",
                self.id
            )));
        };
        let arguments =
            crate::arguments::parse(self.arguments.as_deref()).map_err(Failure::Usage)?;
        let (mode, confirmations) = self.permission.mode();
        let ctx = &self.context;
        // Only the provider called is started: the others' starts (an npx
        // download, say) are not this command's to wait for.
        let only = Some(id.provider.as_str());
        let Opened {
            session,
            turn,
            registry,
        } = open(ctx, mode, self.json, Output::Turn, only).await?;
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
            // The turn is told to run `spear-capability list`; the
            // operator's command is another, and a near miss deserves its
            // name. Only the provider named was started: a misspelt
            // provider is matched against the ids the turn selects, a
            // misspelt tool against the started provider's capabilities.
            let shown: Vec<&str> = turn
                .shown()
                .capabilities
                .iter()
                .map(|c| c.id.as_str())
                .collect();
            let wanted = id.to_string();
            let selection = select(&registry, &ctx.turn(), &Audit::null());
            let providers: Vec<&str> = selection.selected().collect();
            let near_provider = (!providers.contains(&id.provider.as_str()))
                .then(|| closest(&id.provider, &providers))
                .flatten()
                .map(|p| format!("{p}/{}", id.tool));
            let hint = (answer.status == AnswerStatus::Refused
                && !shown.contains(&wanted.as_str()))
            .then(|| {
                let near = near_provider
                    .as_deref()
                    .or_else(|| closest(&wanted, &shown))
                    .map_or_else(|| ".".to_owned(), |c| format!("; did you mean `{c}`?"));
                format!(
                    "No capability `{wanted}` reaches this turn{near} `spear-capabilities list` with the same flags shows the ones that do."
                )
            });
            if self.json {
                let mut v = answer_json(&format!("invoke {id}"), Some(&answer));
                // For the operator only: the provider's own result, beside
                // the framed text a turn would read.
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
                out::json(&v)?;
            } else if let Some(hint) = &hint {
                out!("{hint}")?;
            } else {
                out_raw!("{}", with_newline(&answer.text))?;
                if let Some(note) = asked.as_ref().and_then(Answered::declined_note) {
                    out::tell(format_args!("`{id}` was {note}, so it was not sent"));
                }
            }
            for n in session.take_notices() {
                eprintln!("notice: {n}");
            }
            // The call's status alone: a refused entry elsewhere in the
            // file was said, and is `check`'s and `list`'s to fail on.
            said_unless(answer.status == AnswerStatus::Ok)
        };
        closing(&session, body).await
    }
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
