//! MCP lifecycle, stdio: a server whose call timed out gets the same stop
//! as any other (the cancellation, stdin closed, a grace, SIGTERM, SIGKILL),
//! without holding the turn's answer, and `Session::close` waits for it.

mod gateway;

use std::time::{Duration, Instant};

use gateway::{bench, fixture, invoke};
use serde_json::json;
use spear_capabilities::AnswerStatus;

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
    let received: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let call = received
        .iter()
        .find(|m| m["method"] == "tools/call" && m["params"]["name"] == "hang")
        .expect("the call was sent");
    assert!(
        received
            .iter()
            .any(|m| m["method"] == "notifications/cancelled"
                && m["params"]["requestId"] == call["id"]),
        "{received:?}"
    );
}
