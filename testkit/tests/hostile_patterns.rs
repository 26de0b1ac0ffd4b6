//! Listings of costly regular expressions (issue 18.1): every pattern is
//! compiled once at listing under the regex size budget, so the start stays
//! bounded in time and memory and a pattern over the budget is left out
//! with its reason. Alone in its binary, so that the peak resident memory it
//! asserts is its own.

mod gateway;

use std::time::{Duration, Instant};

use gateway::{Bench, Server, bench};
use serde_json::{Value, json};
use spear_capabilities::internals::vetting::{MAX_LISTING_PATTERN_BYTES, MAX_PATTERN_SIZE};
use spear_testkit::procfs;

/// A server offering one tool per pattern, each pattern on an argument.
fn listing(patterns: impl Iterator<Item = String>) -> Server {
    let tools: Vec<Value> = patterns
        .enumerate()
        .map(|(i, p)| {
            json!({"name": format!("t{i}"), "inputSchema": {"type": "object",
                "properties": {"a": {"type": "string", "pattern": p}}}})
        })
        .collect();
    Server::Script(json!({"tools/list": {"": [{"result": {"tools": tools}}]}}))
}

/// Starts `server` and returns the bench, how long the first turn took,
/// and how many of its tools were offered.
async fn start(server: Server) -> (Bench, Duration, usize) {
    let b = bench(server, 30.0);
    let began = Instant::now();
    let turn = b.turn().await;
    let took = began.elapsed();
    let offered = turn
        .shown()
        .capabilities
        .iter()
        .filter(|c| c.id.starts_with("hostile/"))
        .count();
    (b, took, offered)
}

#[tokio::test]
async fn a_thousand_costly_patterns_start_in_bounded_time_and_memory() {
    let before = procfs::peak_rss().expect("VmHWM");
    // Distinct patterns of about 17 KiB compiled each: the listing's budget
    // takes some 240 of them, the others are left out saying so.
    let (b, took, offered) = start(listing((0..1000).map(|i| format!(r"^\w{{300}}{i}$")))).await;
    eprintln!("figures: 1000 patterns of 17 KiB: {offered} offered in {took:?}");
    assert!((200..280).contains(&offered), "{offered}");
    assert!(took < Duration::from_secs(10), "start took {took:?}");
    let rejected = b.sink.named("tool_rejected");
    assert_eq!(rejected.len(), 1000 - offered);
    for r in &rejected {
        assert_eq!(
            r["reason"],
            format!(
                "the provider's patterns come to more than the budget of {MAX_LISTING_PATTERN_BYTES} bytes compiled in all"
            )
        );
    }
    b.assert_no_notice();
    b.session.close().await;

    // Distinct patterns that would compile to about 1.3 MiB each (issue
    // 18.1), and patterns just over the budget: none is offered, each left
    // out with its reason.
    let huge = (0..500).map(|i| format!(r"^[\p{{L}}\p{{N}}_-]{{1,75}}{i}$"));
    let just_over = (0..500).map(|i| format!(r"^\w{{{}}}{i}$", MAX_PATTERN_SIZE / 50));
    let (b, took, offered) = start(listing(huge.chain(just_over))).await;
    eprintln!("figures: 1000 patterns over the budget: {offered} offered in {took:?}");
    assert_eq!(offered, 0);
    assert!(took < Duration::from_secs(10), "start took {took:?}");
    let rejected = b.sink.named("tool_rejected");
    assert_eq!(rejected.len(), 1000);
    assert_eq!(
        rejected[0]["reason"],
        format!(
            r#"the input schema's pattern "^[\\p{{L}}\\p{{N}}_-]{{1,75}}0$" does not compile: it is invalid, or larger than the budget of {MAX_PATTERN_SIZE} bytes"#
        )
    );
    assert!(
        rejected[999]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("budget")),
        "{}",
        rejected[999]
    );
    b.assert_no_notice();
    b.session.close().await;

    let grew = procfs::peak_rss().expect("VmHWM").saturating_sub(before);
    eprintln!("figures: peak resident memory grew by {} MiB", grew >> 20);
    assert!(grew < 300 << 20, "peak memory grew by {} MiB", grew >> 20);
}
