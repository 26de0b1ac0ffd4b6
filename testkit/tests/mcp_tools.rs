//! mcp-stdio: tools/list, its pages, its guards, and unusable tools.

mod common;

use common::{received, start, stop};
use spear_capabilities::{Error, Provider};
use spear_mcp_stdio::{MAX_PAGES, MAX_TOOLS};

/// The fixture's own tools besides the generated ones.
const BASE_TOOLS: usize = 9;

#[tokio::test]
async fn ten_thousand_tools_over_many_pages_are_all_listed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("in.jsonl");
    let generated = (MAX_TOOLS - BASE_TOOLS).to_string();
    let p = start(&[
        "--tools",
        &generated,
        "--page-size",
        "97",
        "--log",
        log.to_str().expect("utf-8"),
    ])
    .await;
    let list = p.list_tools().await.expect("listed");
    assert_eq!(list.tools.len(), MAX_TOOLS);
    assert!(list.rejected.is_empty());
    assert_eq!(list.tools[0].name, "echo");
    assert_eq!(
        list.tools[MAX_TOOLS - 1].name,
        format!("gen_{}", MAX_TOOLS - BASE_TOOLS - 1)
    );
    stop(p).await;
    let cursors: Vec<_> = received(&log)
        .into_iter()
        .filter(|m| m["method"] == "tools/list")
        .map(|m| m["params"]["cursor"].clone())
        .collect();
    assert_eq!(cursors.len(), MAX_TOOLS.div_ceil(97));
    assert!(cursors[0].is_null());
    assert_eq!(cursors[1], "page-97");
}

#[tokio::test]
async fn more_than_ten_thousand_tools_is_an_error() {
    let generated = (MAX_TOOLS - BASE_TOOLS + 1).to_string();
    let p = start(&["--tools", &generated, "--page-size", "500"]).await;
    let err = p.list_tools().await.expect_err("too many");
    assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("the server offers more than 10000 tools"),
        "{err}"
    );
    stop(p).await;
}

#[tokio::test]
async fn a_cursor_cycle_is_an_error_not_a_loop() {
    let p = start(&["--page-size", "2", "--cursor-cycle"]).await;
    let err = p.list_tools().await.expect_err("cycle");
    assert!(
        err.to_string()
            .contains("tools/list repeated the cursor \"page-2\", which would never end"),
        "{err}"
    );
    stop(p).await;
}

#[tokio::test]
async fn more_than_a_thousand_pages_is_an_error() {
    let generated = (MAX_PAGES - BASE_TOOLS + 1).to_string();
    let p = start(&["--tools", &generated, "--page-size", "1"]).await;
    let err = p.list_tools().await.expect_err("too many pages");
    assert!(
        err.to_string()
            .contains("tools/list goes on past 1000 pages"),
        "{err}"
    );
    stop(p).await;
    let exactly = (MAX_PAGES - BASE_TOOLS).to_string();
    let p = start(&["--tools", &exactly, "--page-size", "1"]).await;
    assert_eq!(
        p.list_tools().await.expect("1000 pages").tools.len(),
        MAX_PAGES
    );
    stop(p).await;
}

/// The client reports what the server offered, as offered: judging names,
/// duplicates and schemas is the gateway's (`hostile_tools.rs` pins it).
#[tokio::test]
async fn every_offered_tool_is_reported_as_offered() {
    let p = start(&["--bad-tools"]).await;
    let list = p.list_tools().await.expect("listed");
    assert_eq!(list.tools.len(), BASE_TOOLS + 5);
    let names: Vec<&str> = list.tools[BASE_TOOLS..]
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["bad name!", "twice", "twice", "array_schema", "remote_ref"]
    );
    assert!(list.rejected.is_empty(), "{:?}", list.rejected);
    stop(p).await;
}

#[tokio::test]
async fn each_listing_asks_the_server_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("in.jsonl");
    let p = start(&["--log", log.to_str().expect("utf-8")]).await;
    let first = p.list_tools().await.expect("first");
    let second = p.list_tools().await.expect("second");
    assert_eq!(first, second);
    stop(p).await;
    let lists = received(&log)
        .iter()
        .filter(|m| m["method"] == "tools/list")
        .count();
    assert_eq!(lists, 2);
}
