//! 3.6 "Nothing is discovered: a provider SPEAR has not been told about does
//! not exist to it", through the whole path: the registry SPEAR locates
//! beside projects.json, a session with every linked kind, real processes.
//!
//! What the test can show is the forms discovery would take on this machine:
//! MCP configurations of other tools (`.mcp.json`, `.vscode/mcp.json`,
//! `.cursor/mcp.json`, `mcp.json`) and a `capabilities.json` in the turn's
//! tree, the same configurations beside projects.json, each naming a real
//! server that says when it starts. None of them is read and none starts.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use spear_capabilities::{
    AnswerStatus, Auto, Registry, Session, SessionOptions, TurnContext, TurnKind,
    exposure::Exposure,
};
use spear_testkit::{RecordingSink, ours};

const FIXTURE: &str = env!("CARGO_BIN_EXE_spear-fixture-server");

/// Writes, in `dir`, every configuration a discovering client might read,
/// each naming the fixture server, which writes `marker` when it starts.
fn decoys(dir: &Path, marker: &Path) {
    let command = [FIXTURE, "--pid-file", marker.to_str().expect("utf-8")];
    let ours = json!({"providers": [{"id": "decoy", "command": command, "scope": "global"}]});
    let theirs = json!({"mcpServers": {"decoy": {"command": FIXTURE, "args": &command[1..]}}});
    for (path, body) in [
        ("capabilities.json", &ours),
        (".mcp.json", &theirs),
        ("mcp.json", &theirs),
        (
            ".vscode/mcp.json",
            &json!({"servers": theirs["mcpServers"]}),
        ),
        (".cursor/mcp.json", &theirs),
    ] {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("folder");
        std::fs::write(path, body.to_string()).expect("decoy");
    }
}

#[tokio::test]
async fn a_provider_spear_was_not_told_about_does_not_exist_to_it() {
    let root = tempfile::tempdir().expect("tempdir");
    let (admin, tree) = (root.path().join("srv"), root.path().join("tree"));
    let marker = root.path().join("a-decoy-started");
    decoys(&tree, &marker);
    // Beside projects.json: everything but the file SPEAR reads.
    decoys(&admin, &marker);
    std::fs::remove_file(admin.join("capabilities.json")).expect("removed");
    std::fs::write(admin.join("projects.json"), r#"{"projects": {}}"#).expect("projects");

    let file = Registry::locate(&admin.join("projects.json"), None);
    let (sink, audit) = RecordingSink::new();
    let kinds = spear_providers::kinds().expect("built-in kinds");
    let registry = Registry::load(&file, &kinds, &audit).expect("a missing file is no providers");
    assert!(registry.entries().is_empty(), "{:?}", registry.entries());
    let session = Session::open(
        Arc::new(registry),
        SessionOptions::new("discovery", Arc::new(Auto)).with_audit(audit),
    );
    let context = TurnContext::new(tree.clone(), TurnKind::Implementation).with_project("p");
    let turn = session.begin_turn(context).await.expect("the turn begins");
    assert_eq!(turn.shown().exposure, Exposure::None);
    assert!(turn.shown().capabilities.is_empty());
    assert!(turn.shown().unavailable.is_empty());
    // Not "unavailable": it does not exist.
    let a = ours(
        &turn,
        "spear-capability invoke decoy/echo '{\"text\": \"x\"}'",
    )
    .await;
    assert_eq!(a.status, AnswerStatus::Refused, "{}", a.text);
    assert!(
        a.text.starts_with("No capability `decoy/echo`"),
        "{}",
        a.text
    );
    session.close().await;
    assert!(sink.named("provider_registered").is_empty());
    assert!(!marker.exists(), "a server nobody registered was started");
}
