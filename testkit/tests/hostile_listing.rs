//! A listing of many large pages, each under the line bound: the whole
//! listing is bounded too, so memory stays bounded and the provider fails
//! with a clear reason. Alone in its binary, so that the peak resident
//! memory it asserts is its own.

mod gateway;

use gateway::{bench, fixture};
use spear_testkit::procfs;

#[tokio::test]
async fn many_pages_of_fifteen_mib_stop_at_the_listing_bound() {
    let before = procfs::peak_rss().expect("VmHWM");
    // 1 000 pages of 15 MB: 15 GB in all, were they kept.
    let b = bench(
        fixture(&[
            "--tools",
            "1000",
            "--page-size",
            "1",
            "--page-pad",
            "15000000",
        ]),
        60.0,
    );
    let turn = b.turn().await;
    assert!(
        turn.shown()
            .text
            .contains("Provider `hostile` is unavailable (protocol error)"),
        "{}",
        turn.shown().text
    );
    let failure = b.failure();
    let message = failure["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("the tools/list pages come to more than 32 MiB"),
        "{message}"
    );
    let grew = procfs::peak_rss().expect("VmHWM").saturating_sub(before);
    eprintln!("figures: peak resident memory grew by {} MiB", grew >> 20);
    assert!(grew < 256 << 20, "peak memory grew by {} MiB", grew >> 20);
    b.session.close().await;
}
