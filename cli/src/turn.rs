//! `turn`: exactly what a turn is shown, then each command line answered
//! as SPEAR would answer it.

use std::io::IsTerminal;

use serde_json::json;
use spear_capabilities::Answer;

use crate::error::Failure;
use crate::examples::{self, Example};
use crate::flags::ContextArgs;
use crate::lines::Lines;
use crate::out::{self, out, out_raw};
use crate::permission::{Answered, PermissionArgs};
use crate::report;
use crate::session::{
    Opened, Output, answer_json, closing, open, print_notices, unless_refused, with_newline,
};

/// The examples of `turn`.
pub(crate) const EXAMPLES: &[Example] = &[
    Example::new(
        "spear-capabilities turn --project demo < examples/turn.txt",
        "What a turn is shown, then each line of turn.txt answered as SPEAR would",
    ),
    Example::new(
        "spear-capabilities turn --project demo --command 'spear-capability list'",
        "One command line, answered",
    ),
    Example::new(
        "spear-capabilities turn --project demo --mode auto --json --command 'spear-capability describe notes/get_note'",
        "In auto mode (a `confirm` provider's WRITEs run), as JSON Lines",
    ),
];

/// Print exactly what a turn is shown, then answer each command as SPEAR
/// would (the --command values, else each line of standard input).
///
/// Exit status: 0, 1 when the registry refused an entry (as `check`;
/// said on stderr, or as a `refused` line with --json), 2 when the
/// registry cannot be read or a file named with --capabilities does not
/// exist.
#[derive(Debug, clap::Args)]
#[command(after_help = examples::help(EXAMPLES))]
pub(crate) struct Args {
    #[command(flatten)]
    context: ContextArgs,
    #[command(flatten)]
    permission: PermissionArgs,
    /// A command line the turn types (repeatable).
    #[arg(long = "command", value_name = "CMD")]
    commands: Vec<String>,
    /// Print JSON Lines instead of text.
    #[arg(long)]
    json: bool,
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

impl Args {
    pub(crate) async fn run(self) -> Result<(), Failure> {
        let as_json = self.json;
        let (mode, confirmations) = self.permission.mode();
        let commands = self.commands;
        let Opened {
            session,
            turn,
            registry,
        } = open(&self.context, mode, as_json, Output::Turn, None).await?;
        let body = async {
            let shown = turn.shown();
            if as_json {
                let mut v = serde_json::to_value(shown).unwrap_or_default();
                v["kind"] = json!("shown");
                out::json(&v)?;
                for refused in report::refused_records(&registry) {
                    out::json(&refused)?;
                }
            } else {
                out!(
                    "== what the turn is shown (exposure: {}) ==",
                    shown.exposure
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
                    out::json(&v)?;
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
            unless_refused(&registry, true)
        };
        closing(&session, body).await
    }
}
