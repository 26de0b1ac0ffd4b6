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

#[tokio::test]
async fn unusable_tools_are_reported_with_their_reason_and_the_rest_kept() {
    let p = start(&["--bad-tools"]).await;
    let list = p.list_tools().await.expect("listed");
    assert_eq!(list.tools.len(), BASE_TOOLS);
    let rejected: Vec<(&str, &str)> = list
        .rejected
        .iter()
        .map(|r| (r.name.as_str(), r.reason.as_str()))
        .collect();
    assert_eq!(rejected.len(), 5, "{rejected:?}");
    assert_eq!(
        rejected[0],
        (
            "bad name!",
            "its name is not 1 to 128 characters of A-Z, a-z, 0-9, '_', '.' and '-'"
        )
    );
    assert_eq!(
        rejected[1],
        ("twice", "the server offers 2 tools of this name")
    );
    assert_eq!(rejected[2], rejected[1]);
    assert_eq!(
        rejected[3],
        ("array_schema", "the input schema is not of type \"object\"")
    );
    assert_eq!(rejected[4].0, "remote_ref");
    assert!(
        rejected[4]
            .1
            .starts_with("the input schema does not compile"),
        "{}",
        rejected[4].1
    );
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
