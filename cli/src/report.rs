//! What every subcommand says of the registry besides what a turn is
//! shown: the entries it refused, and why no provider reaches a turn
//! without `--project`. Nothing of the registry is dropped without a word.
//!
//! A refused entry is the deployment's own business: a turn never learns of
//! it, so `turn` and `invoke` say it on standard error (text) or beside the
//! turn's view (`--json`), never inside what the turn is shown.

use std::path::Path;

use serde_json::{Value, json};
use spear_capabilities::registry::RefusedEntry;
use spear_capabilities::selection::{self, Decision};
use spear_capabilities::{Audit, Registry, TurnContext};

use crate::flags::ContextArgs;
use crate::out::tell;
use crate::view::status_style;

/// The refused entries as `check` prints them: `  refused  <entry>`, then
/// each problem on a line of its own under it, in the status column of
/// `list`, where it is in the file first (`capabilities.json:3:5: key
/// ...`, as a compiler says it); the word `refused` in colour when
/// `colour`.
pub(crate) fn refused_lines(registry: &Registry, colour: bool) -> Vec<String> {
    let file = registry.file().unwrap_or(Path::new(""));
    registry
        .refused()
        .iter()
        .flat_map(|r| refused_entry_lines(r, Some(file), colour))
        .collect()
}

/// One refused entry of the registry `file` as [`refused_lines`] prints
/// it; without places when there is no file to point into (`None`: an
/// edit's entry, refused before it was written).
pub(crate) fn refused_entry_lines(
    r: &RefusedEntry,
    file: Option<&Path>,
    colour: bool,
) -> Vec<String> {
    let style = status_style("refused", colour);
    let mut lines = vec![format!("  {style}refused{style:#}  {}", r.label())];
    lines.extend(r.problems.iter().map(|p| match (file, p.position) {
        (Some(file), Some(at)) => format!("           {}:{at}: {p}", file.display()),
        _ => format!("           {p}"),
    }));
    lines
}

/// An edit's refusal of the entry it would write: `head`, then the entry
/// as `check` prints it (without places: the text is not on disk).
pub(crate) fn refused_edit(head: String, refused: &RefusedEntry) -> String {
    let mut said = head;
    for line in refused_entry_lines(refused, None, false) {
        said.push('\n');
        said.push_str(&line);
    }
    said
}

/// The refused entries as JSON, `check --json`'s `refused`: one object
/// each, in file order ([`entry_json`]).
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

/// One refused entry as JSON: `{"entry", "id", "index", "line", "column",
/// "problems"}`, each problem `{"key", "kind", "message", "line",
/// "column", "text"}` in file order (`text` as the problem line of text
/// reads, without the place).
pub(crate) fn entry_json(r: &RefusedEntry) -> Value {
    let problems: Vec<Value> = r
        .problems
        .iter()
        .map(|p| {
            json!({
                "key": p.key,
                "kind": p.kind.as_str(),
                "message": p.message,
                "line": p.position.map(|at| at.line),
                "column": p.position.map(|at| at.column),
                "text": p.to_string(),
            })
        })
        .collect();
    json!({
        "entry": r.label(),
        "id": r.id,
        "index": r.index,
        "line": r.position.map(|at| at.line),
        "column": r.position.map(|at| at.column),
        "problems": problems,
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
