//! `list`: what a turn would select, started; each provider's state (a
//! ready one with what its server says it is), why the others are left
//! out, the registry's refused entries, hints and warnings, then the
//! capabilities and the exposure.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::json;
use spear_capabilities::internals::messages::index_line;
use spear_capabilities::internals::selection::{Decision, select};
use spear_capabilities::{Audit, ProviderState, ReadOnly, Registry, Shown};

use crate::error::Failure;
use crate::flags::ContextArgs;
use crate::out::{self, out};
use crate::report;
use crate::session::{Opened, Output, closing, open, unless_refused};
use crate::view::{colour, info_line, read_not_offered, state_json, state_line, status_style};

/// Start what a turn would select; show each provider's state, each
/// capability and the exposure.
///
/// Exit status: 0, 1 when a selected provider is unavailable or the
/// registry refused an entry (as `check`), 2 when the registry cannot be
/// read or a file named with --capabilities does not exist.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  spear-capabilities list --project demo
  spear-capabilities list --project firmware-a --family boards --task general
  spear-capabilities list --capabilities examples/capabilities.json --project demo --json")]
pub(crate) struct Args {
    #[command(flatten)]
    context: ContextArgs,
    /// Print the `shown` JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// The `read` names of each started provider that its server does not
/// offer: such a tool stays a WRITE, which the operator should know.
fn read_warnings(
    registry: &Registry,
    states: &[(String, ProviderState)],
    shown: &Shown,
) -> Vec<String> {
    let offered: BTreeSet<&str> = shown.capabilities.iter().map(|c| c.id.as_str()).collect();
    let mut warnings = Vec::new();
    for (id, state) in states {
        let (ProviderState::Ready { .. }, Some(entry)) = (state, registry.entry(id)) else {
            continue;
        };
        for name in &entry.read {
            if !offered.contains(format!("{id}/{name}").as_str()) {
                warnings.push(format!("`{id}`: {}", read_not_offered(name)));
            }
        }
    }
    warnings
}

impl Args {
    /// Exits 1 when a selected provider is unavailable (or still
    /// starting), or the registry refused an entry.
    pub(crate) async fn run(self) -> Result<(), Failure> {
        let ctx = &self.context;
        let Opened {
            session,
            turn,
            registry,
        } = open(ctx, Arc::new(ReadOnly), self.json, Output::List, None).await?;
        let body = async {
            let shown = turn.shown();
            let states = session.provider_states();
            let selection = select(&registry, &ctx.turn(), &Audit::null());
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
            if self.json {
                let mut v = serde_json::to_value(shown).unwrap_or_default();
                v["kind"] = json!("shown");
                v["providers"] = states.iter().map(|(id, s)| state_json(id, s)).collect();
                v["not_selected"] = left_out
                    .iter()
                    .map(|(id, why)| json!({"provider": id, "reason": why}))
                    .collect();
                v["refused"] = report::refused_json(&registry);
                v["warnings"] = json!(warnings);
                v["hints"] = json!(hints);
                out::json(&v)?;
                return unless_refused(&registry, all_ok);
            }
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
                shown.exposure,
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
                out!("{}", index_line(c, width))?;
            }
            unless_refused(&registry, all_ok)
        };
        closing(&session, body).await
    }
}
