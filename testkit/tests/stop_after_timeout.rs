//! MCP lifecycle, stdio: a server whose call timed out gets the same stop
//! as any other (the cancellation, stdin closed, a grace, SIGTERM, SIGKILL),
//! without holding the turn's answer, and `Session::close` waits for it.

mod gateway;

use std::time::{Duration, Instant};

use gateway::{bench, fixture, invoke};
use serde_json::json;
use spear_capabilities::AnswerStatus;
use spear_capabilities::internals::session::TIMEOUT_GRACE;

#[tokio::test]
async fn a_server_that_timed_out_gets_its_whole_stop_before_close_returns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("stopped");
    let log = dir.path().join("received.jsonl");
    let b = bench(
        fixture(&[
            "--on-eof",
            marker.to_str().expect("utf-8"),
            "--log",
            log.to_str().expect("utf-8"),
        ]),
        1.0,
    );
    let turn = b.turn().await;
    let began = Instant::now();
    let a = invoke(&turn, "hostile/hang", json!({})).await;
    assert_eq!(a.status, AnswerStatus::Unavailable, "{}", a.text);
    // The answer does not wait for the stop: the server takes 300 ms to
    // leave once its stdin closes.
    assert!(!marker.exists(), "the answer waited for the stop");
    assert!(began.elapsed() < Duration::from_secs(10));
    b.session.close().await;
    assert_eq!(
        std::fs::read_to_string(&marker).ok().as_deref(),
        Some("stopped cleanly\n"),
        "close returned before the server that timed out had left"
    );
    assert_eq!(b.session.stops_pending(), 0);
    let received = std::fs::read_to_string(&log).expect("log");
    assert!(
        received.contains("\"notifications/cancelled\""),
        "{received}"
    );
}

/// Issue 32.2: a call in flight when the session closes is answered at once
/// as sent with its outcome unknown, and its server is told it is cancelled
/// before its stdin closes.
#[tokio::test]
async fn a_close_cancels_a_call_in_flight_with_the_server_and_says_its_outcome_is_unknown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("received.jsonl");
    let b = bench(fixture(&["--log", log.to_str().expect("utf-8")]), 20.0);
    let turn = b.turn().await;
    let began = Instant::now();
    let (a, ()) = tokio::join!(invoke(&turn, "hostile/hang", json!({})), async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        b.session.clone().close().await;
    });
    assert_eq!(a.status, AnswerStatus::OutcomeUnknown, "{}", a.text);
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
    let invoked = b.sink.named("capability_invoked");
    assert_eq!(invoked.len(), 1, "{invoked:?}");
    assert_eq!(invoked[0]["outcome"], "closed");
    let received = received(&log);
    hang_was_sent_then_cancelled(&received);
}

/// A call's deadline is its caller's (`Provider`'s contract): past the
/// entry's timeout the gateway drops the call, which tells the server it is
/// cancelled; the turn is told the call timed out, the provider is left out
/// of the turn, and nothing more is sent to it. (Moved here from the
/// provider's own tests when the provider's timer on calls went, issue 42.11.)
#[tokio::test]
async fn a_call_that_times_out_is_cancelled_and_fails_the_provider() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("received.jsonl");
    let b = bench(fixture(&["--log", log.to_str().expect("utf-8")]), 1.0);
    let turn = b.turn().await;
    let a = invoke(&turn, "hostile/hang", json!({})).await;
    assert_eq!(a.status, AnswerStatus::Unavailable, "{}", a.text);
    assert!(
        a.text.starts_with(
            "`hostile/hang` took longer than its 1 s timeout; provider `hostile` is unavailable (timed out)"
        ),
        "{}",
        a.text
    );
    assert_eq!(b.failure()["reason"], "timed_out");
    let later = invoke(&turn, "hostile/fail", json!({})).await;
    assert_eq!(later.status, AnswerStatus::Unavailable, "{}", later.text);
    b.session.close().await;
    let received = received(&log);
    hang_was_sent_then_cancelled(&received);
    assert!(
        !received.iter().any(|m| m["params"]["name"] == "fail"),
        "sent after the provider failed"
    );
}

/// Each call gets the whole timeout from when it is sent: calls that keep
/// answering across several timeouts never time out, and one made after the
/// provider sat idle for most of a timeout still gets a whole one (and the
/// gateway's grace), no more.
#[tokio::test]
async fn each_call_gets_the_whole_timeout_from_when_it_is_sent() {
    let timeout = Duration::from_secs(1);
    let b = bench(fixture(&[]), 1.0);
    let turn = b.turn().await;
    let busy = Instant::now();
    while busy.elapsed() < timeout * 3 {
        let a = invoke(&turn, "hostile/fail", json!({})).await;
        assert_eq!(a.status, AnswerStatus::Failed, "{}", a.text);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(timeout * 2 / 3).await;
    let sent = Instant::now();
    let a = invoke(&turn, "hostile/hang", json!({})).await;
    let waited = sent.elapsed();
    assert_eq!(a.status, AnswerStatus::Unavailable, "{}", a.text);
    assert!(
        waited >= timeout,
        "gave up after {waited:?}, before {timeout:?}"
    );
    assert!(
        waited < timeout * 2 + TIMEOUT_GRACE,
        "gave up after {waited:?}, long after {timeout:?}"
    );
    b.session.close().await;
}

/// The fixture was sent a call of `hang`, then told it was cancelled.
fn hang_was_sent_then_cancelled(received: &[serde_json::Value]) {
    let call = received
        .iter()
        .find(|m| m["method"] == "tools/call" && m["params"]["name"] == "hang")
        .expect("the call of hang was sent");
    assert!(
        received
            .iter()
            .any(|m| m["method"] == "notifications/cancelled"
                && m["params"]["requestId"] == call["id"]),
        "{received:?}"
    );
}

/// Every JSON line the fixture received (`--log`).
fn received(log: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(log).expect("log");
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}
