//! Hostile servers during calls, through the whole gateway: crashes, huge
//! results, wrong and doubled answer ids, chatter, an environment dump.

mod gateway;

use gateway::{Server, assert_nothing_private, bench, bench_with, fixture, invoke};
use serde_json::{Value, json};
use spear_capabilities::AnswerStatus;

fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

/// A server whose tools `names` play `actions[i]`, all with an empty schema.
fn script(calls: &[(&str, Value)]) -> Server {
    let tools: Vec<Value> = calls
        .iter()
        .map(|(n, _)| json!({"name": n, "inputSchema": {"type": "object"}}))
        .collect();
    let table: serde_json::Map<String, Value> = calls
        .iter()
        .map(|(n, a)| ((*n).to_owned(), a.clone()))
        .collect();
    Server::Script(json!({"tools/list": {"": [{"result": {"tools": tools}}]}, "tools/call": table}))
}

#[tokio::test]
async fn a_crash_mid_call_after_a_partial_line_is_unavailable_not_a_hang() {
    let b = bench(
        script(&[(
            "half",
            json!([{"raw": "{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"content\":[{\"ty"},
                   {"stderr": "script: dying mid-line"}, {"exit": 3}]),
        )]),
        20.0,
    );
    let turn = b.turn().await;
    let a = invoke(&turn, "hostile/half", json!({})).await;
    assert_eq!(a.status, AnswerStatus::Unavailable, "{}", a.text);
    assert_eq!(
        a.text,
        "`hostile/half` is unavailable: provider `hostile` is unavailable (crashed) and none of its capabilities can be called in this turn."
    );
    let failure = b.failure();
    assert_eq!(failure["reason"], "crashed");
    let message = failure["message"].as_str().unwrap_or_default();
    assert!(message.contains("exited (exit status: 3)"), "{message}");
    assert!(message.contains("script: dying mid-line"), "{message}");
    let invoked = b.sink.named("capability_invoked");
    assert_eq!(invoked[0]["outcome"], "unavailable");
    b.assert_one_notice("crashed");
    // A crash is not a fault that repeats identically: the next turn starts
    // the server again, and the call that was in flight is not replayed.
    let next = b.turn().await;
    assert!(
        next.shown().text.contains("hostile/half"),
        "{}",
        next.shown().text
    );
    let restarted = b.sink.named("provider_restarted");
    assert_eq!(restarted.len(), 1, "{restarted:?}");
    assert_eq!(restarted[0]["attempt"], 1);
    assert!(
        restarted[0]["previous"]
            .as_str()
            .is_some_and(|m| m.contains("exited (exit status: 3)")),
        "{restarted:?}"
    );
    assert_eq!(b.sink.named("capability_invoked").len(), 1, "no replay");
    b.assert_healthy_answers().await;
    b.session.close().await;
}

#[tokio::test]
async fn a_20_mb_result_is_a_clear_error_at_the_line_bound() {
    let b = bench(
        script(&[("big", json!([{"text_result": 20_000_000}]))]),
        30.0,
    );
    let turn = b.turn().await;
    let a = invoke(&turn, "hostile/big", json!({})).await;
    assert_eq!(a.status, AnswerStatus::Unavailable, "{}", a.text);
    assert_eq!(
        a.text,
        "`hostile/big` is unavailable: provider `hostile` is unavailable (protocol error) and none of its capabilities can be called in this turn."
    );
    let failure = b.failure();
    let message = failure["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("the server sent a line longer than the bound of 16 MiB"),
        "{message}"
    );
    b.assert_one_notice("protocol error");
    b.assert_healthy_answers().await;
    b.session.close().await;
}

#[tokio::test]
async fn a_1_mb_result_is_framed_and_cut_with_a_visible_note() {
    let b = bench(
        script(&[("big", json!([{"text_result": 1_000_000}]))]),
        30.0,
    );
    let turn = b.turn().await;
    let a = invoke(&turn, "hostile/big", json!({})).await;
    assert_eq!(a.status, AnswerStatus::Ok);
    assert!(
        a.text
            .starts_with("External content from provider `hostile`, capability `hostile/big`.")
    );
    // 99 999 characters kept, then the note.
    assert!(a.text.contains(&format!(
        "{}… [900001 more characters not shown]\n",
        "x".repeat(100)
    )));
    assert!(a.text.len() < 100_500, "{} bytes shown", a.text.len());
    b.assert_no_notice();
    b.assert_healthy_answers().await;
    b.session.close().await;
}

#[tokio::test]
async fn answers_under_wrong_ids_are_dropped_and_the_right_one_is_delivered() {
    let line =
        |id: Value, t: &str| json!({"line": {"jsonrpc": "2.0", "id": id, "result": text(t)}});
    let b = bench(
        script(&[(
            "wrong",
            json!([line(json!(987_654), "to nobody"), line(json!("not-ours"), "to nobody either"),
                   line(json!(null), "to null"), {"result": text("the right one")}]),
        )]),
        10.0,
    );
    let turn = b.turn().await;
    let a = invoke(&turn, "hostile/wrong", json!({})).await;
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    assert!(a.text.contains("\nthe right one\n"), "{}", a.text);
    assert!(!a.text.contains("nobody"), "{}", a.text);
    b.assert_no_notice();
    b.assert_healthy_answers().await;
    b.session.close().await;
}

#[tokio::test]
async fn an_answer_only_under_a_wrong_id_times_out_by_name() {
    // The id as a string ("2" for 2) is another id in JSON-RPC.
    let b = bench(
        script(&[(
            "stringly",
            json!([{"raw": "{\"jsonrpc\":\"2.0\",\"id\":\"$ID\",\"result\":{\"content\":[]}}\n"}]),
        )]),
        1.0,
    );
    let turn = b.turn().await;
    let a = invoke(&turn, "hostile/stringly", json!({})).await;
    assert_eq!(a.status, AnswerStatus::Unavailable, "{}", a.text);
    assert!(
        a.text
            .contains("provider `hostile` is unavailable (timed out)"),
        "{}",
        a.text
    );
    assert_eq!(b.failure()["reason"], "timed_out");
    b.assert_one_notice("timed out");
    b.assert_healthy_answers().await;
    b.session.close().await;
}

#[tokio::test]
async fn a_duplicate_answer_is_dropped_and_the_next_call_is_unharmed() {
    let b = bench(
        script(&[
            (
                "twice",
                json!([{"result": text("once")}, {"result": text("once")}]),
            ),
            ("after", json!([{"result": text("after the duplicate")}])),
        ]),
        10.0,
    );
    let turn = b.turn().await;
    let a = invoke(&turn, "hostile/twice", json!({})).await;
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    let a = invoke(&turn, "hostile/after", json!({})).await;
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    assert!(a.text.contains("\nafter the duplicate\n"), "{}", a.text);
    b.assert_no_notice();
    b.assert_healthy_answers().await;
    b.session.close().await;
}

#[tokio::test]
async fn conflicting_answers_to_one_id_deliver_the_first_only() {
    let b = bench(
        script(&[
            (
                "conflict",
                json!([{"result": text("first")},
                {"line": {"jsonrpc": "2.0", "id": "$ID", "error": {"code": -1, "message": "second"}}}]),
            ),
            ("after", json!([{"result": text("after the conflict")}])),
        ]),
        10.0,
    );
    let turn = b.turn().await;
    let a = invoke(&turn, "hostile/conflict", json!({})).await;
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    assert!(
        a.text.contains("\nfirst\n") && !a.text.contains("second"),
        "{}",
        a.text
    );
    let a = invoke(&turn, "hostile/after", json!({})).await;
    assert!(a.text.contains("\nafter the conflict\n"), "{}", a.text);
    b.assert_no_notice();
    b.session.close().await;
}

#[tokio::test]
async fn interleaved_notifications_and_server_requests_do_not_disturb_calls() {
    let b = bench(fixture(&["--chatty"]), 10.0);
    let turn = b.turn().await;
    let (one, two) = tokio::join!(
        invoke(&turn, "hostile/echo", json!({"text": "one"})),
        invoke(&turn, "hostile/echo", json!({"text": "two"})),
    );
    assert_eq!(one.status, AnswerStatus::Ok, "{}", one.text);
    assert!(one.text.contains("\none\n"), "{}", one.text);
    assert!(two.text.contains("\ntwo\n"), "{}", two.text);
    // The server saw ping answered and roots/list refused (its reply is in
    // structuredContent, which the turn is not shown).
    b.assert_no_notice();
    b.assert_healthy_answers().await;
    b.session.close().await;
}

#[tokio::test]
async fn a_server_that_dumps_its_environment_shows_only_what_it_was_given() {
    let b = bench_with(fixture(&[]), 10.0, json!({"env": {"HOSTILE_GIVEN": "yes"}}));
    let turn = b.turn().await;
    let a = invoke(&turn, "hostile/env", json!({})).await;
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    let dump = a
        .text
        .lines()
        .find(|l| l.starts_with('{'))
        .expect("the dump");
    let vars: serde_json::Map<String, Value> = serde_json::from_str(dump).expect("json");
    let mut keys: Vec<&str> = vars.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["HOME", "HOSTILE_GIVEN", "PATH"]);
    // This process's own variables (cargo sets many) never reach a server.
    assert!(std::env::vars().count() > 3);
    assert_nothing_private(&a.text);
    b.session.close().await;
}

/// A result that cannot be read (a lone surrogate in its text) fails that
/// call with the reason, framed, and is audited as `unreadable`; the
/// provider stays available and its next call is answered.
#[tokio::test]
async fn an_unreadable_result_fails_that_call_and_keeps_the_provider() {
    let b = bench(
        script(&[
            (
                "bad",
                json!([{"raw": "{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\\ud800\"}]}}\n"}]),
            ),
            ("good", json!([{"result": text("fine")}])),
        ]),
        20.0,
    );
    let turn = b.turn().await;
    let a = invoke(&turn, "hostile/bad", json!({})).await;
    assert_eq!(a.status, AnswerStatus::Failed, "{}", a.text);
    assert!(
        a.text
            .starts_with("The result of `hostile/bad` could not be read:\n"),
        "{}",
        a.text
    );
    assert!(
        a.text.contains("content block 0: it cannot be read"),
        "{}",
        a.text
    );
    let invoked = b.sink.named("capability_invoked");
    assert_eq!(invoked[0]["outcome"], "unreadable");
    let good = invoke(&turn, "hostile/good", json!({})).await;
    assert_eq!(good.status, AnswerStatus::Ok, "{}", good.text);
    assert!(good.text.contains("fine"), "{}", good.text);
    assert!(b.sink.named("provider_failed").is_empty());
    b.session.close().await;
}
