//! A server that floods us with `ping` requests carrying 1 MiB ids and never
//! reads its stdin: our answers wait for it only up to the outbox bound, then
//! the provider fails with a clear reason. Alone in its binary, so that the
//! peak resident memory it asserts is its own.

mod gateway;

use std::time::Instant;

use gateway::{bench, fixture};
use spear_testkit::procfs;

#[tokio::test]
async fn a_server_that_never_reads_is_failed_at_the_outbox_bound() {
    let before = procfs::peak_rss().expect("VmHWM");
    let started = Instant::now();
    // The timeout is long: the bound, not the clock, must end this (a
    // timeout would be told as one, not as the message asserted below).
    let b = bench(fixture(&["--ping-flood"]), 60.0);
    let turn = b.turn().await;
    assert!(
        turn.shown()
            .text
            .contains("Provider `hostile` is unavailable (protocol error)"),
        "{}",
        turn.shown().text
    );
    let took = started.elapsed();
    let failure = b.failure();
    let message = failure["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(
            "the server does not read what it is sent: more than 16 MiB wait for its stdin"
        ),
        "{message}"
    );
    let grew = procfs::peak_rss().expect("VmHWM").saturating_sub(before);
    eprintln!(
        "figures: failed after {took:?}; peak resident memory grew by {} MiB",
        grew >> 20
    );
    assert!(grew < 160 << 20, "peak memory grew by {} MiB", grew >> 20);
    b.assert_healthy_answers().await;
    b.session.close().await;
}
