//! `list`: what a turn would select, started; each provider's state (a
//! ready one with what its server says it is), why the others are left
//! out, the registry's refused entries, hints and warnings, then the
//! capabilities and the exposure.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};
use spear_capabilities::internals::messages::index_line;
use spear_capabilities::selection::{Decision, select};
use spear_capabilities::{Audit, ProviderState, ReadOnly, Registry, exposure::Shown};

use crate::error::Failure;
use crate::examples::{self, Example};
use crate::flags::ContextArgs;
use crate::out::{self, out};
use crate::report;
use crate::session::{Opened, Output, closing, open, unless_refused};
use crate::view::{colour, info_line, read_not_offered, state_json, state_line, status_style};

/// The examples of `list`.
pub(crate) const EXAMPLES: &[Example] = &[
    Example::new(
        "spear-capabilities list --project demo",
        "What a turn in the project demo is offered: each provider's state, then each capability and the exposure",
    ),
    Example::new(
        "spear-capabilities list --project firmware-a --family boards --task general",
        "The same for a general question (READ capabilities only) in firmware-a, of the family boards",
    ),
    Example::new(
        "spear-capabilities list --capabilities examples/capabilities.json --project demo --json | jq '.capabilities[].schema'",
        "All of it as one JSON object, for a script: here each capability's argument schema, a JSON object",
    ),
    Example::new(
        "spear-capabilities list --project demo --wait 120 --trace trace.jsonl",
        "Let a slow first start (an npx or uvx download) finish, and keep every JSON-RPC line each server is sent and says",
    ),
];

/// Start what a turn would select; show each provider's state, each
/// capability and the exposure.
///
/// Exit status: 0, 1 when a selected provider is unavailable or the
/// registry refused an entry (as `check`), 2 when the registry cannot be
/// read or a file named with --capabilities does not exist.
#[derive(Debug, clap::Args)]
#[command(after_help = examples::help(EXAMPLES))]
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

/// A capability's schema `key`, which a turn is shown as text (compact
/// JSON, then a note when it was shortened), as `list --json` gives it: the
/// JSON object under `key` and the note under `<key>_note`; when the text
/// is not whole JSON (a schema cut at the end), `null` under `key` and the
/// text as shown under `<key>_text`.
fn schema_json(capability: &mut Value, key: &str) {
    let Some(text) = capability.get(key).and_then(Value::as_str) else {
        return;
    };
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let (schema, rest) = match values.next() {
        Some(Ok(schema)) => (schema, text[values.byte_offset()..].trim().to_owned()),
        _ => {
            capability[format!("{key}_text")] = json!(text);
            capability[key] = Value::Null;
            return;
        }
    };
    if !rest.is_empty() {
        capability[format!("{key}_note")] = json!(rest);
    }
    capability[key] = schema;
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
                if let Some(capabilities) = v["capabilities"].as_array_mut() {
                    for c in capabilities {
                        schema_json(c, "schema");
                        schema_json(c, "output_schema");
                    }
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_shown_as_text_is_given_as_its_json_object_and_its_note() {
        let mut c = json!({"schema": r#"{"type":"object"}"#});
        schema_json(&mut c, "schema");
        assert_eq!(c, json!({"schema": {"type": "object"}}));
        let mut c =
            json!({"schema": r#"{"type":"object"} … (schema shortened, 5 of 9 characters shown)"#});
        schema_json(&mut c, "schema");
        assert_eq!(
            c,
            json!({"schema": {"type": "object"}, "schema_note": "… (schema shortened, 5 of 9 characters shown)"})
        );
        let mut c = json!({"schema": r#"{"required":["a"],"prop … (cut)"#});
        schema_json(&mut c, "schema");
        assert_eq!(
            c,
            json!({"schema": null, "schema_text": r#"{"required":["a"],"prop … (cut)"#})
        );
        let mut c = json!({"id": "x"});
        schema_json(&mut c, "output_schema");
        assert_eq!(c, json!({"id": "x"}));
    }
}
