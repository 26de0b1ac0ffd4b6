//! What every subcommand says of the registry besides what a turn is
//! shown: the entries it refused, and why no provider reaches a turn
//! without `--project`. Nothing of the registry is dropped without a word.
//!
//! A refused entry is the deployment's own business: a turn never learns of
//! it, so `turn` and `invoke` say it on standard error (text) or beside the
//! turn's view (`--json`), never inside what the turn is shown.

use serde_json::{Value, json};
use spear_capabilities::internals::registry::RefusedEntry;
use spear_capabilities::internals::selection::{self, Decision};
use spear_capabilities::{Audit, Registry, TurnContext};

use crate::flags::ContextArgs;
use crate::out::tell;
use crate::view::status_style;

/// The refused entries as `check` prints them: `  refused  <entry>`, then
/// each problem on a line of its own under it, in the status column of
/// `list`; the word `refused` in colour when `colour`.
pub(crate) fn refused_lines(registry: &Registry, colour: bool) -> Vec<String> {
    registry
        .refused()
        .iter()
        .flat_map(|r| refused_entry_lines(r, colour))
        .collect()
}

/// One refused entry as [`refused_lines`] prints it.
pub(crate) fn refused_entry_lines(r: &RefusedEntry, colour: bool) -> Vec<String> {
    let style = status_style("refused", colour);
    let mut lines = vec![format!("  {style}refused{style:#}  {}", r.label())];
    lines.extend(r.problems.iter().map(|p| format!("           {p}")));
    lines
}

/// The refused entries as JSON, `check --json`'s `refused`: one
/// `{"entry", "problems"}` object each, in file order.
pub(crate) fn refused_json(registry: &Registry) -> Value {
    registry.refused().iter().map(entry_json).collect()
}

/// `turn --json`'s line for each refused entry: `{"kind": "refused",
/// "entry", "problems"}`, written after the `shown` line.
pub(crate) fn refused_records(registry: &Registry) -> Vec<Value> {
    registry
        .refused()
        .iter()
        .map(|r| {
            let mut v = entry_json(r);
            v["kind"] = json!("refused");
            v
        })
        .collect()
}

fn entry_json(r: &RefusedEntry) -> Value {
    json!({
        "entry": r.label(),
        "problems": r.problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
    })
}

/// Says the refused entries on standard error, with a line that says what
/// they are, for the subcommands whose standard output is a turn's.
pub(crate) fn say_refused(registry: &Registry) {
    let n = registry.refused().len();
    if n == 0 {
        return;
    }
    let entries = if n == 1 { "entry" } else { "entries" };
    tell(format_args!(
        "the registry refused {n} {entries}, which no turn gets (`spear-capabilities check` says the same):"
    ));
    for line in refused_lines(registry, false) {
        eprintln!("{line}");
    }
}

/// Says [`project_hint`] on standard error, when there is one.
pub(crate) fn say_project_hint(registry: &Registry, turn: &TurnContext) {
    if let Some(hint) = project_hint(registry, turn) {
        tell(format_args!("hint: {hint}"));
    }
}

/// What to pass when the turn has no project and so no provider reaches
/// it (each is "not selected: the turn's tree is not a registered
/// project"); `None` when that is not why.
pub(crate) fn project_hint(registry: &Registry, turn: &TurnContext) -> Option<String> {
    let unregistered = selection::select(registry, turn, &Audit::null())
        .candidates
        .iter()
        .any(|c| c.decision == Decision::UnregisteredTree);
    unregistered.then(|| {
        format!(
            "no provider reaches a turn outside a registered project: pass `{}` to act as a turn in one",
            ContextArgs::project_flag()
        )
    })
}
