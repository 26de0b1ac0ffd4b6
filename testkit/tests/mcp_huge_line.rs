//! mcp-stdio: a 200 MB line is refused while memory stays bounded.
//!
//! Its own test binary, so that the peak memory it measures is its own.

mod common;

use spear_capabilities::{Error, Provider};
use spear_mcp_stdio::MAX_LINE;
use spear_testkit::procfs::peak_rss;

#[tokio::test]
async fn a_200_mb_line_is_refused_with_bounded_memory() {
    let p = common::start(&["--huge-line", "200000000"]).await;
    let before = peak_rss().expect("VmHWM");
    let err = p.list_tools().await.expect_err("refused");
    let after = peak_rss().expect("VmHWM");
    assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("the server sent a line longer than the bound of 16 MiB"),
        "{err}"
    );
    let grown = after.saturating_sub(before);
    eprintln!(
        "peak memory grew by {} MiB reading a 200 MB line",
        grown >> 20
    );
    // The line buffer may reach the bound, and its growth may copy once.
    assert!(grown < 3 * MAX_LINE as u64, "grew by {grown} bytes");
    // The provider is failed: later requests fail at once with the same fault.
    let again = p.list_tools().await.expect_err("still failed");
    assert!(matches!(again, Error::Protocol { .. }), "{again:?}");
    common::stop(p).await;
}
