//! Loads a capabilities file and prints which providers reach a turn, and why
//! the others do not: the first half of what SPEAR does for every turn.
//!
//! `cargo run -p spear-examples --bin select-providers -- examples/capabilities.json demo implementation`
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use spear_capabilities::{Audit, TurnContext, TurnKind, audit::JsonLinesSink, selection::select};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file, project, task] = args.as_slice() else {
        eprintln!("usage: select-providers CAPABILITIES_JSON PROJECT implementation|mixed|general");
        return ExitCode::from(2);
    };
    let task: TurnKind = match task.parse() {
        Ok(task) => task,
        Err(e) => {
            eprintln!("unknown task: {e}");
            return ExitCode::from(2);
        }
    };
    // The audit trail goes to stderr as JSON Lines, as a deployment would log it.
    let audit = Audit::new(Arc::new(JsonLinesSink::new(std::io::stderr())));
    let path = PathBuf::from(file);
    let registry = match spear_providers::registry(&path, &audit) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let tree = path.parent().map(PathBuf::from).unwrap_or_default();
    let turn = TurnContext::new(tree, task).with_project(project.as_str());
    let selection = select(
        &registry,
        &turn,
        &audit.for_session("example").for_turn("1"),
    );
    for c in &selection.candidates {
        println!("{:<12} {}", c.provider, c.decision.phrase());
    }
    ExitCode::SUCCESS
}
