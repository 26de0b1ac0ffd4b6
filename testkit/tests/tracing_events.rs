//! What the library crates tell an embedder's `tracing` subscriber: a
//! provider's start, failure, restart and stop, through a `Session` with a
//! real server process, and never an environment value or an argument.

mod gateway;

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use gateway::{bench_with, fixture, invoke};
use serde_json::json;
use spear_capabilities::AnswerStatus;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::{Layer, registry::LookupSpan};

/// Every event and span, as `target level name: field=value ...`.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<String>>>);

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Captured {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let m = event.metadata();
        let mut fields = Fields(format!("{} {} event:", m.target(), m.level()));
        event.record(&mut fields);
        self.0.lock().expect("lock").push(fields.0);
    }

    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: Context<'_, S>,
    ) {
        let m = attrs.metadata();
        let mut fields = Fields(format!("{} {} span {}:", m.target(), m.level(), m.name()));
        attrs.record(&mut fields);
        self.0.lock().expect("lock").push(fields.0);
    }
}

/// A provider that crashes in its first call, is started again for the next
/// turn and then stopped: each step is an event of its own, and no field of
/// any event or span, at any level, holds the entry's environment value or
/// a call's argument, but on `spear_mcp_stdio::wire`: the trace, which an
/// operator asks for by its target, and which holds every line whole.
#[tokio::test]
async fn a_providers_life_is_traced_without_its_environment_or_arguments() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::registry().with(
        captured
            .clone()
            .with_filter(tracing_subscriber::filter::LevelFilter::TRACE),
    );
    // Global: the start runs in tasks and the spawn on a thread of its own.
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");

    let dir = tempfile::tempdir().expect("tempdir");
    let starts = dir.path().join("starts").display().to_string();
    let b = bench_with(
        fixture(&["--starts", &starts, "--crash-on-start", "1"]),
        10.0,
        json!({"env": {"SPEAR_TEST_SECRET": "env-value-7731"}}),
    );
    let first = b.turn().await;
    let a = invoke(&first, "hostile/echo", json!({"text": "arg-value-4492"})).await;
    assert_eq!(a.status, AnswerStatus::Unavailable, "{}", a.text);
    let next = b.turn().await;
    let a = invoke(&next, "hostile/echo", json!({"text": "arg-value-4492"})).await;
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    b.session.close().await;

    let lines = captured.0.lock().expect("lock").clone();
    let hostile: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("provider=\"hostile\"") || l.contains("provider=hostile"))
        .collect();
    let seen = |level: &str, what: &str| {
        hostile
            .iter()
            .filter(|l| l.contains(&format!(" {level} ")) && l.contains(what))
            .count()
    };
    assert_eq!(
        seen("INFO", "message=provider starting "),
        2,
        "{hostile:#?}"
    );
    assert_eq!(seen("INFO", "message=provider ready "), 2, "{hostile:#?}");
    assert_eq!(seen("WARN", "message=provider failed "), 1, "{hostile:#?}");
    assert!(
        hostile.iter().any(|l| l.contains("reason=\"crashed\"")),
        "{hostile:#?}"
    );
    assert_eq!(
        seen("INFO", "message=provider restarting "),
        1,
        "{hostile:#?}"
    );
    assert_eq!(seen("INFO", "message=provider stopped "), 1, "{hostile:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("message=server stopped ") && l.contains("how=")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("span call:") && l.contains("hostile/echo")),
        "{lines:#?}"
    );
    let wire = format!("{} TRACE event:", spear_mcp_stdio::WIRE);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&wire) && l.contains("arg-value-4492")),
        "{lines:#?}"
    );
    for line in lines.iter().filter(|l| !l.starts_with(&wire)) {
        assert!(
            !line.contains("env-value-7731"),
            "an environment value: {line}"
        );
        assert!(!line.contains("arg-value-4492"), "an argument: {line}");
    }
}
