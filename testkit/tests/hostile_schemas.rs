//! Schemas as real servers write them, and schemas written to cost us,
//! through the whole gateway with a real server process: arguments a schema
//! declares other than by its top-level `properties` are accepted, what it
//! forbids is refused before the server; a schema over a budget is never
//! offered, with its reason audited; a check that cannot finish in time
//! refuses the call, never sends it unchecked.

mod gateway;

use std::time::{Duration, Instant};

use gateway::{Server, bench, invoke};
use serde_json::{Map, Value, json};
use spear_capabilities::AnswerStatus;
use spear_capabilities::internals::session::TIMEOUT_GRACE;
use spear_capabilities::internals::vetting::MAX_SCHEMA_NODES;
use spear_testkit::schemas::doubling_defs;

/// A server offering `tools` whose every call answers `ok`.
fn listing(tools: Vec<Value>) -> Server {
    Server::Script(json!({"tools/list": {"": [{"result": {"tools": tools}}]},
                          "tools/call": {"*": [{"result": {"content": [{"type": "text", "text": "ok"}]}}]}}))
}

/// The `tool_rejected` records of `hostile`, as (tool, reason).
fn rejected(b: &gateway::Bench) -> Vec<(String, String)> {
    b.sink
        .named("tool_rejected")
        .iter()
        .filter(|r| r["provider"] == "hostile")
        .map(|r| {
            let text = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (text("tool"), text("reason"))
        })
        .collect()
}

/// The schema of issue 18.1: `levels` levels under a top-level `$ref`, each
/// referring twice to the next, so that following every `$ref` doubles per
/// level.
fn doubling(levels: usize) -> Value {
    json!({"type": "object", "$ref": "#/$defs/d0", "$defs": doubling_defs(levels)})
}

/// Issue 13.1's table, through a `Session`: each row's call reaches the
/// server; each forbidden variant is refused before it.
#[tokio::test]
async fn arguments_a_schema_declares_or_admits_reach_the_server_and_forbidden_ones_do_not() {
    let tools = vec![
        json!({"name": "all_of", "inputSchema": {"type": "object", "allOf": [
            {"properties": {"query": {"type": "string"}}, "required": ["query"]},
            {"properties": {"limit": {"type": "integer"}}}]}}),
        json!({"name": "open", "inputSchema": {"type": "object", "properties": {},
            "additionalProperties": {"type": "string"}}}),
        json!({"name": "pattern", "inputSchema": {"type": "object",
            "patternProperties": {"^x_": {"type": "integer"}}, "additionalProperties": false}}),
        json!({"name": "referred", "inputSchema": {"type": "object", "$ref": "#/$defs/args",
            "$defs": {"args": {"type": "object", "properties": {"id": {"type": "integer"}}}}}}),
        json!({"name": "plain", "inputSchema": {"type": "object", "properties": {"a": {}}}}),
    ];
    let b = bench(listing(tools), 10.0);
    let turn = b.turn().await;
    assert_eq!(rejected(&b), []);
    for (tool, arguments) in [
        ("all_of", json!({"query": "x", "limit": 3})),
        ("open", json!({"env": "prod"})),
        ("pattern", json!({"x_count": 3})),
        ("referred", json!({"id": 4})),
        ("plain", json!({"a": 1})),
    ] {
        let a = invoke(&turn, &format!("hostile/{tool}"), arguments).await;
        assert_eq!(a.status, AnswerStatus::Ok, "{tool}: {}", a.text);
        assert!(a.text.contains("\nok\n"), "{tool}: {}", a.text);
    }
    for (tool, arguments, said) in [
        (
            "all_of",
            json!({"limit": 3}),
            r#""query" is a required property"#,
        ),
        ("all_of", json!({"query": 5}), "at /query: "),
        (
            "all_of",
            json!({"query": "x", "other": 1}),
            r#"unknown argument "other"; declared: limit, query"#,
        ),
        ("open", json!({"env": 1}), "at /env: "),
        (
            "pattern",
            json!({"count": 3}),
            r#"unknown argument "count""#,
        ),
        ("pattern", json!({"x_count": "3"}), "at /x_count: "),
        ("referred", json!({"id": "4"}), "at /id: "),
        (
            "plain",
            json!({"b": 1}),
            r#"unknown argument "b"; declared: a"#,
        ),
    ] {
        let a = invoke(&turn, &format!("hostile/{tool}"), arguments.clone()).await;
        assert_eq!(
            a.status,
            AnswerStatus::Refused,
            "{tool} {arguments}: {}",
            a.text
        );
        assert!(
            a.text.starts_with(&format!(
                "The arguments do not fit the schema of `hostile/{tool}`:"
            )) && a.text.contains(said),
            "{tool} {arguments}: {}",
            a.text
        );
    }
    let sent = b.sink.named("capability_invoked");
    let hostile_sent = sent
        .iter()
        .filter(|r| {
            r["capability"]
                .as_str()
                .unwrap_or_default()
                .starts_with("hostile/")
        })
        .count();
    assert_eq!(hostile_sent, 5, "only the accepted calls were sent");
    b.session.close().await;
}

/// The exponential schema of issue 18.1 is never offered, its reason
/// audited; the same shape just under the expansion budget is offered and
/// its call answered within the provider's timeout and the grace.
#[tokio::test]
async fn a_schema_over_the_ref_expansion_budget_is_left_out_and_one_under_it_answers_in_time() {
    let tools = vec![
        json!({"name": "exponential", "inputSchema": doubling(32)}),
        json!({"name": "under", "inputSchema": doubling(14)}),
    ];
    let b = bench(listing(tools), 2.0);
    let turn = b.turn().await;
    let r = rejected(&b);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].0, "exponential");
    assert_eq!(
        r[0].1,
        format!(
            "the input schema reaches more than the budget of {MAX_SCHEMA_NODES} schema nodes when its $refs are followed"
        )
    );
    let began = Instant::now();
    let a = invoke(&turn, "hostile/under", json!({})).await;
    let took = began.elapsed();
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    assert!(
        took < Duration::from_secs(2) + TIMEOUT_GRACE,
        "answered after {took:?}"
    );
    eprintln!("figures: a schema of 2^14 expansion answered in {took:?}");
    let a = invoke(&turn, "hostile/exponential", json!({})).await;
    assert_eq!(a.status, AnswerStatus::Refused, "{}", a.text);
    b.session.close().await;
}

/// Arguments whose check takes longer than the provider's timeout: the call
/// is refused once the timeout is up, with a clear message, and never sent.
#[tokio::test]
async fn a_check_that_cannot_finish_in_time_refuses_the_call_and_never_sends_it() {
    let schema = json!({"type": "object",
        "additionalProperties": {"$ref": "#/$defs/d0"},
        "$defs": doubling(12)["$defs"].clone()});
    let b = bench(
        listing(vec![json!({"name": "slow", "inputSchema": schema})]),
        1.0,
    );
    let turn = b.turn().await;
    // Each value reaches about 2^14 schema nodes: 3 000 of them took about
    // a second to check on a quiet machine, too close to the timeout; 12 000
    // take several.
    let many: Map<String, Value> = (0..12_000).map(|i| (format!("k{i}"), json!({}))).collect();
    let began = Instant::now();
    let a = invoke(&turn, "hostile/slow", Value::Object(many)).await;
    let took = began.elapsed();
    assert_eq!(a.status, AnswerStatus::Refused, "{}", a.text);
    assert_eq!(
        a.text,
        "The arguments of `hostile/slow` could not be checked against its schema within 1 s (the provider's timeout); the call was not sent."
    );
    assert!(
        took < Duration::from_secs(1) + TIMEOUT_GRACE,
        "after {took:?}"
    );
    assert!(
        b.sink
            .named("capability_invoked")
            .iter()
            .all(|r| r["capability"] != "hostile/slow"),
        "never sent"
    );
    // A small call of the same tool is checked and sent.
    let a = invoke(&turn, "hostile/slow", json!({"k": {}})).await;
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    b.session.close().await;
}

/// A schema vetting passes but the full compile refuses (an embedded `$id`
/// moves its `$ref` outside the document): the first call is refused with
/// the reason, which is audited once, and the tool stays refused.
#[tokio::test]
async fn a_schema_that_fails_its_first_use_compile_refuses_the_call_and_stays_refused() {
    let schema = json!({"type": "object",
        "properties": {"a": {"$id": "http://x.invalid/y", "$ref": "#/$defs/z"}},
        "$defs": {"z": {}}});
    let b = bench(
        listing(vec![json!({"name": "late", "inputSchema": schema})]),
        5.0,
    );
    let turn = b.turn().await;
    assert_eq!(rejected(&b), [], "vetting passes it");
    for _ in 0..2 {
        let a = invoke(&turn, "hostile/late", json!({})).await;
        assert_eq!(a.status, AnswerStatus::Refused, "{}", a.text);
        assert!(
            a.text.starts_with(
                "`hostile/late` cannot be called in this session: its input schema cannot be used:\n"
            ) && a.text.contains("the input schema does not compile"),
            "{}",
            a.text
        );
    }
    let r = rejected(&b);
    assert_eq!(r.len(), 1, "audited once: {r:?}");
    assert!(r[0].0 == "late" && r[0].1.starts_with("the input schema does not compile"));
    let turn = b.turn().await;
    let a = invoke(&turn, "hostile/late", json!({})).await;
    assert_eq!(
        a.status,
        AnswerStatus::Refused,
        "a later turn too: {}",
        a.text
    );
    b.session.close().await;
}
