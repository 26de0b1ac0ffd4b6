//! Shared set-up of the gateway tests: a `mock` kind, a registry from JSON,
//! sessions over `MockConnector`.
#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use spear_capabilities::{
    Audit, PermissionMode, Registry, Session, SessionOptions, Turn, TurnContext, TurnKind,
};
use spear_testkit::{MockConnector, MockHandle, MockProvider, RecordingSink};

/// A registry of `entries` (each gets `"kind": "mock"`), all valid.
pub fn registry(entries: Value) -> Arc<Registry> {
    let mut entries = entries;
    for e in entries.as_array_mut().expect("array") {
        e["kind"] = "mock".into();
    }
    let text = serde_json::json!({ "providers": entries }).to_string();
    let r = Registry::parse(
        text.as_bytes(),
        Path::new("/etc/spear/capabilities.json"),
        &spear_testkit::kinds::mock(),
        &Audit::null(),
    )
    .expect("parses");
    assert!(r.refused().is_empty(), "{:?}", r.refused());
    Arc::new(r)
}

/// A test bench: mock providers, a connector, a recording sink.
pub struct Bench {
    pub connector: Arc<MockConnector>,
    pub sink: Arc<RecordingSink>,
    pub audit: Audit,
    pub registry: Arc<Registry>,
}

impl Bench {
    pub fn new(entries: Value) -> Self {
        let (sink, audit) = RecordingSink::new();
        Self {
            connector: MockConnector::new(),
            sink,
            audit,
            registry: registry(entries),
        }
    }

    /// Adds a mock provider `id` and returns its handle.
    pub fn provider(&self, id: &str) -> MockHandle {
        let (p, h) = MockProvider::new(id);
        self.connector.add(p);
        h
    }

    pub fn session(&self, mode: Arc<dyn PermissionMode>) -> Session {
        Session::open(
            Arc::clone(&self.registry),
            SessionOptions::new("s1", mode)
                .with_audit(self.audit.clone())
                .with_connector(self.connector.clone()),
        )
    }
}

/// An implementation turn in project `fw`.
pub fn implementation() -> TurnContext {
    TurnContext::new("/srv/fw", TurnKind::Implementation).with_project("fw")
}

/// Begins an implementation turn of `session`, which must begin.
pub async fn begin(session: &Session) -> Turn {
    session
        .begin_turn(implementation())
        .await
        .expect("the turn begins")
}

/// A turn of `task` in project `fw`.
pub fn turn(task: TurnKind) -> TurnContext {
    TurnContext::new("/srv/fw", task).with_project("fw")
}

/// The ids of the capabilities `t` is shown, in order.
pub fn shown_ids(t: &Turn) -> Vec<&str> {
    t.shown()
        .capabilities
        .iter()
        .map(|c| c.id.as_str())
        .collect()
}
