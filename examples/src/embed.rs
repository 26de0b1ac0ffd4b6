//! How SPEAR embeds the core: load the registry, open a session, begin a
//! turn, print what it is shown, answer the turn's commands.
//!
//! `cargo run -p spear-examples --bin embed -- "spear-capability invoke notes/get_note '{\"id\": 1}'" ls`
//! (run from the workspace root after `cargo build --workspace`, so that the
//! example MCP server exists).
#![forbid(unsafe_code)]

use std::path::Path;
use std::sync::Arc;

use spear_capabilities::{
    Audit, ReadOnly, Session, SessionOptions, TurnContext, TurnKind, audit::JsonLinesSink,
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Servers run as our user: our memory and environment closed to them.
    spear_providers::set_non_dumpable()?;
    // The audit trail is the deployment's own: here, JSON Lines on stderr.
    let audit = Audit::new(Arc::new(JsonLinesSink::new(std::io::stderr())));
    // The registry, read with the built-in kinds (mcp-stdio).
    let registry = spear_providers::registry(Path::new("examples/capabilities.json"), &audit)?;
    let session = Session::open(
        Arc::new(registry),
        SessionOptions::new("embed-example", Arc::new(ReadOnly)).with_audit(audit),
    );
    let turn = session
        .begin_turn(TurnContext::new("examples", TurnKind::Implementation).with_project("demo"))
        .await?;
    println!("{}", turn.shown().text);
    for notice in session.take_notices() {
        println!("notice: {notice}");
    }
    // Each command line the turn types goes through the gateway first; only
    // what it does not claim reaches the shell.
    for line in std::env::args().skip(1) {
        match turn.answer(&line).await {
            None => println!("$ {line}\n(the shell would run this)"),
            Some(answer) => println!("$ {line}\n{}\n[{:?}]", answer.text, answer.status),
        }
    }
    session.close().await;
    Ok(())
}
