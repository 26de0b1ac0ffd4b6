//! mcp-stdio: lines, junk on stdout, a flood on stderr.

mod common;

use std::time::{Duration, Instant};

use common::{call, received, start, stop, text_args};
use spear_capabilities::{CallRequest, Error, Provider};
use spear_mcp_stdio::STDERR_KEPT;

#[tokio::test]
async fn junk_lines_on_stdout_are_skipped_and_counted() {
    // Logs, JSON that is not JSON-RPC and blank lines before every message,
    // and every message ends with CRLF.
    let p = start(&["--junk"]).await;
    let list = p.list_tools().await.expect("listed despite the junk");
    assert!(list.tools.iter().any(|t| t.name == "echo"));
    let r = p
        .call_tool(CallRequest::new("echo", text_args("clean")))
        .await
        .expect("called");
    assert_eq!(r.joined_text(), "clean");
    let stats = p.stats();
    // Three junk lines before each of initialize, tools/list, tools/call.
    assert_eq!(stats.junk_lines, 9, "{stats:?}");
    assert_eq!(stats.last_junk.as_deref(), Some(""));
    assert_eq!(common::detail(&p, "junk_lines"), "9");
    stop(p).await;
}

#[tokio::test]
async fn fifty_mb_on_stderr_neither_deadlocks_nor_grows_the_error() {
    let started = Instant::now();
    let p = start(&["--stderr-bytes", "50000000"]).await;
    let setup = started.elapsed();
    p.list_tools().await.expect("listed");
    let err = p.call_tool(call("crash")).await.expect_err("crashed");
    let Error::Crashed { status, stderr, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(status, "exit status: 3");
    assert!(stderr.len() <= STDERR_KEPT, "{}", stderr.len());
    assert!(
        stderr.ends_with("fixture: stderr spew done\nfixture: crashing on purpose\n"),
        "{}",
        &stderr[stderr.len().saturating_sub(100)..]
    );
    assert!(setup < Duration::from_secs(15), "{setup:?}");
    stop(p).await;
}

#[tokio::test]
async fn no_blank_line_is_ever_written_to_the_server() {
    // The fixture exits on a blank line, as some SDKs do; it must see none
    // through a session that uses every kind of line we write.
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("in.jsonl");
    let p = start(&["--chatty", "--log", log.to_str().expect("utf-8")]).await;
    p.list_tools().await.expect("listed");
    p.call_tool(CallRequest::new("echo", text_args("a\n\nb")))
        .await
        .expect("called");
    let hung = tokio::time::timeout(Duration::from_millis(200), p.call_tool(call("hang"))).await;
    assert!(hung.is_err(), "hang answered");
    p.call_tool(call("fail")).await.expect("still alive");
    stop(p).await;
    let raw = std::fs::read_to_string(&log).expect("log");
    assert!(raw.ends_with('\n'));
    for line in raw.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("one JSON value a line");
        assert!(v.is_object(), "{line}");
    }
    let methods: Vec<_> = received(&log)
        .iter()
        .map(|m| m["method"].as_str().unwrap_or("(answer)").to_owned())
        .collect();
    assert!(
        methods.contains(&"notifications/cancelled".to_owned()),
        "{methods:?}"
    );
    assert!(methods.contains(&"(answer)".to_owned()), "{methods:?}");
}

#[tokio::test]
async fn the_line_bound_is_configurable_and_named_in_the_error() {
    let p = common::try_start(
        &["--huge-line", "5000"],
        common::options().with_max_line(4096),
    )
    .await
    .expect("the handshake fits in 4 KiB");
    let err = p.list_tools().await.expect_err("refused");
    assert!(
        err.to_string()
            .contains("the server sent a line longer than the bound of 4096 bytes"),
        "{err}"
    );
    stop(p).await;
}
