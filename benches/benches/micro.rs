//! Micro rows: what a turn is shown when its family holds 5 000 capabilities.
//!
//! `cargo bench -p spear-benches --bench micro`. Target: a turn of 5 000
//! capabilities is built in under 20 ms. The recognizer's rows are
//! `cargo bench -p spear-capabilities --bench recognizer`.

// `criterion_group!` defines an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::json;
use spear_capabilities::exposure::expose;
use spear_capabilities::{
    Audit, Auto, EstimatedTokens, Registry, Session, SessionOptions, ToolSpec, TurnContext,
    TurnKind,
    exposure::{CapabilityClass, Limits, ShownCapability},
};
use spear_testkit::{MockConnector, MockProvider};

const PROVIDERS: usize = 10;
const TOOLS_EACH: usize = 500;

/// A tool shaped like a real one: a sentence of description, three
/// properties, one required.
fn tool(i: usize) -> ToolSpec {
    ToolSpec::new(
        format!("tool_{i}"),
        json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "What to search for"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100},
            "state": {"type": "string", "enum": ["open", "closed", "all"]}
        }, "required": ["query"]}),
    )
    .with_description(format!(
        "Searches the issues of project number {i} and returns the matching ones, newest first."
    ))
}

fn exposure(c: &mut Criterion) {
    let caps: Vec<ShownCapability> = (0..PROVIDERS * TOOLS_EACH)
        .map(|i| {
            let t = tool(i);
            ShownCapability::new(
                format!("p{}/{}", i / TOOLS_EACH, t.name),
                if i % 3 == 0 {
                    CapabilityClass::Read
                } else {
                    CapabilityClass::Write
                },
                None,
                t.description.as_deref(),
                &t.input_schema,
            )
        })
        .collect();
    c.bench_function("expose 5000 capabilities", |b| {
        b.iter_batched(
            || caps.clone(),
            |caps| expose(caps, Vec::new(), &Limits::default(), &EstimatedTokens),
            BatchSize::LargeInput,
        )
    });
}

fn turn(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let connector = MockConnector::new();
    let mut entries = Vec::new();
    for p in 0..PROVIDERS {
        let (provider, script) = MockProvider::new(format!("p{p}"));
        for i in 0..TOOLS_EACH {
            script.add_tool(tool(p * TOOLS_EACH + i));
        }
        connector.add(provider);
        entries.push(json!({"id": format!("p{p}"), "kind": "mock", "scope": "global"}));
    }
    let file = json!({ "providers": entries }).to_string();
    let registry = Registry::parse(
        file.as_bytes(),
        Path::new("/bench/capabilities.json"),
        &spear_testkit::kinds::mock(),
        &Audit::null(),
    )
    .expect("parses");
    let session = Session::open(
        Arc::new(registry),
        SessionOptions::new("bench", Arc::new(Auto)).with_connector(connector),
    );
    let context = TurnContext::new("/bench/tree", TurnKind::Implementation).with_project("p");
    // The first turn starts the providers; the ones measured reuse them.
    let first = rt
        .block_on(session.begin_turn(context.clone()))
        .expect("the turn begins");
    assert_eq!(first.shown().capabilities.len(), PROVIDERS * TOOLS_EACH);
    c.bench_function("turn shown, 5000 capabilities", |b| {
        b.iter(|| black_box(rt.block_on(session.begin_turn(black_box(context.clone())))))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = exposure, turn
}
criterion_main!(benches);
