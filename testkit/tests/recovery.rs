//! Providers that come back, through a `Session` with real server
//! processes: a slow start is ready for a later turn, a crash is started
//! again for a later turn with a growing pause and a cap, a fault that
//! would repeat is never retried, no call is replayed, and the person hears
//! once that a provider is gone and once that it is back.

mod gateway;

use std::time::Duration;

use gateway::{Bench, bench, fixture, invoke};
use serde_json::{Value, json};
use spear_capabilities::{AnswerStatus, ProviderState, Turn, UnavailableReason};

/// Whether `turn` offers `hostile/echo`.
fn offers_hostile(turn: &Turn) -> bool {
    turn.shown()
        .capabilities
        .iter()
        .any(|c| c.id == "hostile/echo")
}

/// `hostile`'s audit records, by event name, in order.
fn hostile_events(b: &Bench) -> Vec<String> {
    b.sink
        .json()
        .into_iter()
        .filter(|r| {
            r["provider"] == "hostile"
                || r["capability"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("hostile/"))
        })
        .map(|r| r["event"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The notices about `hostile` said so far.
fn hostile_notices(b: &Bench) -> Vec<String> {
    b.session
        .take_notices()
        .into_iter()
        .filter(|n| n.provider() == Some("hostile"))
        .map(|n| n.text())
        .collect()
}

/// Waits up to 30 s for `hostile` to be in a state `done` accepts.
async fn until(b: &Bench, done: impl Fn(&ProviderState) -> bool) -> ProviderState {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let states = b.session.provider_states();
        if let Some((_, state)) = states.iter().find(|(id, _)| id == "hostile") {
            if done(state) || tokio::time::Instant::now() > deadline {
                return state.clone();
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A file beside the test's session, for the fixture to write.
fn file(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).display().to_string()
}

/// How many times the fixture started, by its `--starts` file.
fn starts(path: &str) -> usize {
    std::fs::read_to_string(path).map_or(0, |s| s.lines().count())
}

/// Six pages of 0.8 s each under a 1 s timeout: every page is in time, the
/// listing is not. The first turn cannot wait for all of it and is told
/// the provider is starting; the start goes on, and a later turn has it.
#[tokio::test]
async fn a_slow_listing_is_not_a_timeout_and_is_ready_for_a_later_turn() {
    let b = bench(
        fixture(&["--tools", "51", "--page-size", "10", "--page-delay", "800"]),
        1.0,
    );
    let first = b.turn().await;
    assert!(!offers_hostile(&first));
    assert_eq!(
        first.shown().unavailable[0].reason,
        UnavailableReason::Starting
    );
    assert!(
        first
            .shown()
            .text
            .contains("Provider `hostile` is unavailable (starting)"),
        "{}",
        first.shown().text
    );
    let ready = until(&b, |s| !matches!(s, ProviderState::Starting { .. })).await;
    assert!(matches!(ready, ProviderState::Ready { .. }), "{ready:?}");
    let later = b.turn().await;
    assert!(offers_hostile(&later), "{}", later.shown().text);
    let a = invoke(&later, "hostile/echo", json!({"text": "in time"})).await;
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    assert!(b.sink.named("provider_failed").is_empty());
    assert_eq!(
        hostile_notices(&b),
        [
            "External capability provider `hostile` is still starting; the session goes on without it until it is ready.",
            "External capability provider `hostile` is available now."
        ]
    );
    b.session.close().await;
}

/// Pages that each come in time but never end are stopped by the start
/// budget: the whole start is bounded, not only each page.
#[tokio::test]
async fn a_server_that_trickles_pages_is_stopped_at_the_start_budget() {
    let b = bench(
        fixture(&["--tools", "200", "--page-size", "1", "--page-delay", "300"]),
        0.5,
    );
    let began = tokio::time::Instant::now();
    b.turn().await;
    let failed = until(&b, |s| matches!(s, ProviderState::Unavailable { .. })).await;
    let budget = spear_capabilities::internals::session::start_budget(Duration::from_millis(500));
    assert_eq!(budget, Duration::from_secs(5));
    assert!(
        matches!(
            &failed,
            ProviderState::Unavailable {
                reason: UnavailableReason::TimedOut,
                message,
            } if message.contains("timed out after 5 s")
        ),
        "{failed:?}"
    );
    assert!(began.elapsed() >= budget);
    b.session.close().await;
}

/// A crash mid-call: that turn is told the provider is unavailable, the
/// next one has it back from a new process, and the call that was in
/// flight is never sent again.
#[tokio::test]
async fn a_crash_is_started_again_for_the_next_turn_and_no_call_is_replayed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (starts_at, log) = (file(&dir, "starts"), file(&dir, "received.jsonl"));
    let b = bench(
        fixture(&[
            "--starts",
            &starts_at,
            "--crash-on-start",
            "1",
            "--log",
            &log,
        ]),
        10.0,
    );
    let first = b.turn().await;
    let a = invoke(&first, "hostile/echo", json!({"text": "first"})).await;
    assert_eq!(a.status, AnswerStatus::Unavailable, "{}", a.text);
    let next = b.turn().await;
    assert!(offers_hostile(&next), "{}", next.shown().text);
    let a = invoke(&next, "hostile/echo", json!({"text": "second"})).await;
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    assert!(a.text.contains("\nsecond\n"), "{}", a.text);
    let restarted = b.sink.named("provider_restarted");
    assert_eq!(restarted.len(), 1);
    assert_eq!(restarted[0]["attempt"], 1);
    assert_eq!(restarted[0]["turn"], "2");
    let received = std::fs::read_to_string(&log).expect("the log");
    assert_eq!(
        received.matches("\"first\"").count(),
        1,
        "replayed:\n{received}"
    );
    assert_eq!(received.matches("\"second\"").count(), 1);
    assert_eq!(
        hostile_events(&b),
        [
            "provider_registered",
            "provider_started",
            "capability_described",
            "write_approved",
            "provider_failed",
            "capability_invoked",
            "provider_restarted",
            "provider_started",
            "capability_described",
            "write_approved",
            "capability_invoked",
        ]
    );
    assert_eq!(
        hostile_notices(&b),
        [
            "External capability provider `hostile` is unavailable (crashed); the session goes on without it.",
            "External capability provider `hostile` is available now."
        ]
    );
    b.session.close().await;
}

/// A fault that would repeat identically is never retried.
#[tokio::test]
async fn a_server_of_another_protocol_version_is_never_started_again() {
    let b = bench(fixture(&["--version", "2024-11-05"]), 10.0);
    for _ in 0..6 {
        let turn = b.turn().await;
        assert!(!offers_hostile(&turn));
        assert_eq!(
            turn.shown().unavailable[0].reason,
            UnavailableReason::ProtocolError
        );
    }
    assert!(b.sink.named("provider_restarted").is_empty());
    assert_eq!(b.sink.named("provider_failed").len(), 1);
    assert_eq!(hostile_notices(&b).len(), 1);
    b.session.close().await;
}

/// A server that crashes on every start comes back the next turn, then two
/// turns on, then four, and not after the third restart.
#[tokio::test]
async fn restarts_wait_longer_each_time_and_stop_at_the_cap() {
    let dir = tempfile::tempdir().expect("tempdir");
    let starts_at = file(&dir, "starts");
    let b = bench(
        fixture(&["--starts", &starts_at, "--crash-from-start", "1"]),
        10.0,
    );
    let mut offered = Vec::new();
    for n in 1..=12u64 {
        let turn = b.turn().await;
        if offers_hostile(&turn) {
            offered.push(n);
            let a = invoke(&turn, "hostile/echo", json!({"text": "x"})).await;
            assert_eq!(a.status, AnswerStatus::Unavailable, "turn {n}: {}", a.text);
        }
    }
    assert_eq!(offered, [1, 2, 4, 8]);
    let attempts: Vec<Value> = b
        .sink
        .named("provider_restarted")
        .iter()
        .map(|r| r["attempt"].clone())
        .collect();
    assert_eq!(attempts, [json!(1), json!(2), json!(3)]);
    assert_eq!(starts(&starts_at), 4);
    assert_eq!(b.sink.named("provider_failed").len(), 4, "every failure");
    // Said once that it is gone, once that it is back.
    assert_eq!(hostile_notices(&b).len(), 2);
    b.session.close().await;
}

/// A server that dies between turns is found out by the next turn, which
/// is told it is unavailable; the turn after has it back.
#[tokio::test]
async fn a_server_that_dies_between_turns_is_reported_then_started_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = file(&dir, "pid");
    let b = bench(fixture(&["--pid-file", &pid_file]), 10.0);
    let first = b.turn().await;
    assert!(offers_hostile(&first));
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("pid file")
        .trim()
        .parse()
        .expect("a pid");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    // The client notices the end of its stdout in its own time.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let told = loop {
        let turn = b.turn().await;
        if !offers_hostile(&turn) {
            break turn;
        }
        assert!(tokio::time::Instant::now() < deadline, "never noticed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(
        told.shown().unavailable[0].reason,
        UnavailableReason::Crashed
    );
    let back = b.turn().await;
    assert!(offers_hostile(&back), "{}", back.shown().text);
    let a = invoke(&back, "hostile/echo", json!({"text": "back"})).await;
    assert_eq!(a.status, AnswerStatus::Ok, "{}", a.text);
    assert_eq!(b.sink.named("capability_invoked").len(), 1);
    b.session.close().await;
}
