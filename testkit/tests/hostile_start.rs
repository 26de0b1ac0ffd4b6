//! Hostile servers at start and listing, through the whole gateway: each
//! scenario is what a user sees (the turn's text, its answer, the session's
//! notice), what the audit trail records, and that the healthy provider
//! beside it still answers.

mod gateway;

use gateway::{
    Bench, assert_nothing_private, assert_unavailable, bench, bench_with, fixture, invoke,
};
use serde_json::json;
use spear_capabilities::{AnswerStatus, exposure::Exposure};
use spear_testkit::ours;

/// The common outcome of a provider left out at start: told by name, once,
/// with its category; the full reason in the audit trail; the other one
/// untouched.
async fn left_out(b: &Bench, category: &str, reason: &str) -> String {
    let turn = b.turn().await;
    assert_unavailable(&turn, "echo", category).await;
    assert_nothing_private(&turn.shown().text);
    assert!(
        turn.shown()
            .capabilities
            .iter()
            .any(|c| c.id == "healthy/echo")
    );
    let failure = b.failure();
    assert_eq!(failure["reason"], reason);
    b.assert_one_notice(category);
    b.assert_healthy_answers().await;
    // Told once: a later turn is shown it unavailable, with no new notice.
    assert_unavailable(&b.turn().await, "echo", category).await;
    b.assert_no_notice();
    failure["message"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn wrong_protocol_version_is_refused_naming_both_versions() {
    let b = bench(fixture(&["--version", "2024-11-05"]), 10.0);
    let message = left_out(&b, "protocol error", "protocol_error").await;
    assert!(
        message.contains(
            "the server speaks MCP protocol version \"2024-11-05\"; only \"2025-06-18\" is supported"
        ),
        "{message}"
    );
    b.session.close().await;
}

#[tokio::test]
async fn no_answer_at_all_times_out_within_the_entry_timeout() {
    let began = std::time::Instant::now();
    // `--linger`: it keeps running when its stdin closes, as a hung server
    // does, so its stop takes the whole grace; the timeout is told and
    // recorded when it happens all the same, not as "starting".
    let b = bench(fixture(&["--silent", "--linger"]), 1.0);
    let message = left_out(&b, "timed out", "timed_out").await;
    assert!(message.contains("timed out after 1 s"), "{message}");
    assert!(began.elapsed().as_secs() < 10, "{:?}", began.elapsed());
    b.session.close().await;
}

/// 3.6.1 "commands and server names are not public material": a server
/// whose command cannot start is named to the turn by its id only; the
/// program, its arguments and its `env` values reach the audit trail's
/// reason, never what the turn is shown or answered.
#[tokio::test]
async fn a_command_that_cannot_start_is_told_to_the_audit_trail_never_to_the_turn() {
    let program = "/nonexistent/deploy-secret/tracker-mcp";
    let b = bench_with(
        fixture(&[]),
        10.0,
        json!({"command": [program, "--token-file", "/etc/deploy-secret/token"],
               "env": {"TRACKER_TOKEN": "s3cr3t-value"}}),
    );
    let message = left_out(&b, "did not start", "did_not_start").await;
    assert!(message.contains(program), "the operator is told: {message}");
    let turn = b.turn().await;
    let mut seen = vec![turn.shown().text.clone()];
    for line in [
        "spear-capability list",
        "spear-capability describe hostile/echo",
        "spear-capability invoke hostile/echo '{}'",
    ] {
        seen.push(ours(&turn, line).await.text);
    }
    for text in seen {
        for private in ["deploy-secret", "tracker-mcp", "--token-file", "s3cr3t"] {
            assert!(!text.contains(private), "{private:?} leaked into {text}");
        }
        assert_nothing_private(&text);
    }
    b.session.close().await;
}

#[tokio::test]
async fn a_batch_answer_is_a_protocol_fault() {
    let b = bench(fixture(&["--batch"]), 10.0);
    let message = left_out(&b, "protocol error", "protocol_error").await;
    assert!(message.contains("JSON-RPC batch"), "{message}");
    b.session.close().await;
}

#[tokio::test]
async fn a_200_mb_line_fails_the_provider_at_the_line_bound() {
    let b = bench(fixture(&["--huge-line", "200000000"]), 30.0);
    let message = left_out(&b, "protocol error", "protocol_error").await;
    assert!(
        message.contains("the server sent a line longer than the bound of 16 MiB"),
        "{message}"
    );
    b.session.close().await;
}

#[tokio::test]
async fn a_cursor_cycle_is_refused_not_followed_forever() {
    let b = bench(fixture(&["--page-size", "2", "--cursor-cycle"]), 10.0);
    let message = left_out(&b, "protocol error", "protocol_error").await;
    assert!(
        message.contains("tools/list repeated the cursor"),
        "{message}"
    );
    b.session.close().await;
}

#[tokio::test]
async fn endless_fresh_cursors_stop_at_the_page_cap() {
    let endless = json!({"tools/list": {"*": [{"line": {"jsonrpc": "2.0", "id": "$ID",
        "result": {"tools": [], "nextCursor": "$FRESH"}}}]}});
    let b = bench(gateway::Server::Script(endless), 30.0);
    let message = left_out(&b, "protocol error", "protocol_error").await;
    assert!(
        message.contains("tools/list goes on past 1000 pages"),
        "{message}"
    );
    b.session.close().await;
}

#[tokio::test]
async fn junk_and_crlf_on_stdout_are_skipped_and_the_provider_works() {
    let b = bench(fixture(&["--junk"]), 10.0);
    let turn = b.turn().await;
    let a = invoke(&turn, "hostile/echo", json!({"text": "through the junk"})).await;
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    assert!(a.text.contains("\nthrough the junk\n"), "{}", a.text);
    assert!(!a.text.contains("fixture log"), "{}", a.text);
    b.assert_no_notice();
    assert!(b.sink.named("provider_failed").is_empty());
    b.assert_healthy_answers().await;
    b.session.close().await;
}

#[tokio::test]
async fn fifty_mb_on_stderr_neither_blocks_nor_reaches_the_turn() {
    let b = bench(fixture(&["--stderr-bytes", "52428800"]), 20.0);
    let turn = b.turn().await;
    let a = invoke(&turn, "hostile/echo", json!({"text": "loud"})).await;
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    // When it then fails, the reason keeps only a bounded tail of stderr.
    let a = invoke(&turn, "hostile/crash", json!({})).await;
    assert_eq!(a.status, AnswerStatus::Unavailable, "{}", a.text);
    assert_eq!(
        a.text,
        "`hostile/crash` is unavailable: provider `hostile` is unavailable (crashed) and none of its capabilities can be called in this turn."
    );
    let failure = b.failure();
    let message = failure["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("exited (exit status: 3)"),
        "{}",
        &message[..200]
    );
    assert!(
        message.ends_with("fixture: crashing on purpose"),
        "{}",
        &message[message.len() - 200..]
    );
    b.assert_one_notice("crashed");
    b.assert_healthy_answers().await;
    b.session.close().await;
}

#[tokio::test]
async fn five_thousand_tools_in_one_page_are_an_index_and_usable() {
    // The fixture's nine tools and 4 991 generated ones.
    let b = bench(fixture(&["--tools", "4991"]), 30.0);
    let turn = b.turn().await;
    let shown = turn.shown();
    assert_eq!(shown.exposure, Exposure::Index);
    let hostile = shown
        .capabilities
        .iter()
        .filter(|c| c.id.starts_with("hostile/"))
        .count();
    assert_eq!(hostile, 5000);
    let line = shown
        .text
        .lines()
        .find(|l| l.trim_start().starts_with("hostile/gen_4990 "))
        .expect("indexed");
    assert!(line.contains("WRITE"), "{line}");
    let a = ours(
        &turn,
        r#"spear-capability invoke hostile/echo '{"text": "x"}'"#,
    )
    .await;
    assert_eq!(a.status, AnswerStatus::Refused, "index: describe first");
    let a = invoke(
        &turn,
        "hostile/echo",
        json!({"text": "one of five thousand"}),
    )
    .await;
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    b.assert_no_notice();
    b.assert_healthy_answers().await;
    b.session.close().await;
}
