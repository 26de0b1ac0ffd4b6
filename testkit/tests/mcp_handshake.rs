//! mcp-stdio: starting a server and the MCP handshake.

mod common;

use std::time::{Duration, Instant};

use common::{call, options, received, start, stderr_of, stop, try_start};
use serde_json::json;
use spear_capabilities::{Error, Provider, kind::ConnectRequest};

#[tokio::test]
async fn the_handshake_asks_for_2025_06_18_then_says_initialized_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("in.jsonl");
    let p = start(&["--log", log.to_str().expect("utf-8")]).await;
    p.list_tools().await.expect("listed");
    let pid = p.pid();
    stop(p).await;
    let lines = received(&log);
    assert_eq!(lines[0]["method"], "initialize");
    assert_eq!(lines[0]["params"]["protocolVersion"], "2025-06-18");
    assert_eq!(lines[0]["params"]["capabilities"], json!({}));
    assert_eq!(
        lines[0]["params"]["clientInfo"]["name"],
        "spear-capabilities"
    );
    assert_eq!(
        lines[1],
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    );
    assert_eq!(lines[2]["method"], "tools/list");
    common::assert_gone(pid);
}

#[tokio::test]
async fn another_protocol_version_is_refused_naming_both() {
    let err = try_start(&["--version", "2024-11-05"], options())
        .await
        .expect_err("refused");
    assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.starts_with(
            "provider `fx` broke the protocol: the server speaks MCP protocol version \"2024-11-05\"; only \"2025-06-18\" is supported"
        ),
        "{message}"
    );
    common::assert_gone(common::pid_in(stderr_of(&err)));
}

#[tokio::test]
async fn a_silent_server_times_out() {
    let started = Instant::now();
    let err = try_start(
        &["--silent"],
        options().with_timeout(Duration::from_millis(300)),
    )
    .await
    .expect_err("times out");
    assert!(
        matches!(err, Error::Timeout { after, .. } if after == Duration::from_millis(300)),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    common::assert_gone_soon(common::pid_in(stderr_of(&err))).await;
}

#[tokio::test]
async fn an_initialize_that_times_out_is_never_cancelled() {
    // MCP cancellation: "The initialize request MUST NOT be cancelled by clients".
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("in.jsonl");
    let err = try_start(
        &["--silent", "--log", log.to_str().expect("utf-8")],
        options().with_timeout(Duration::from_millis(300)),
    )
    .await
    .expect_err("times out");
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    // The server is reaped, so it has logged every line the client sent.
    common::assert_gone_soon(common::pid_in(stderr_of(&err))).await;
    let lines = received(&log);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["method"], "initialize");
}

#[tokio::test]
async fn a_server_that_exits_at_start_crashed_with_its_status_and_stderr() {
    let err = try_start(&["--exit-at-start", "7"], options())
        .await
        .expect_err("crashed");
    let Error::Crashed { status, stderr, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(status, "exit status: 7");
    assert!(
        stderr.contains("fixture: exiting at start with 7"),
        "{stderr}"
    );
}

/// Issue 42.12: a server that closes its stdout during the start and lives
/// on is noticed at once, with its stderr; it is ended.
#[tokio::test]
async fn a_server_that_closes_its_stdout_during_the_start_is_noticed_at_once() {
    let config = spear_mcp_stdio::ServerConfig::new([
        "sh",
        "-c",
        "echo 'closing stdout' >&2; exec >&-; exec sleep 5",
    ]);
    let began = Instant::now();
    let err =
        spear_mcp_stdio::McpProvider::start("sh", &config, std::path::Path::new("/"), options())
            .await
            .expect_err("stdout closed");
    let took = began.elapsed();
    let Error::Crashed { status, stderr, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(status, "it closed its stdout but is still running");
    assert_eq!(stderr, "closing stdout\n");
    assert!(took < Duration::from_secs(1), "noticed after {took:?}");
}

#[tokio::test]
async fn a_command_that_cannot_be_spawned_names_the_command_and_the_os_error() {
    let serde_json::Value::Object(settings) =
        json!({"command": ["/nonexistent/mcp-server", "--x"]})
    else {
        unreachable!()
    };
    let kind = &spear_mcp_stdio::KIND;
    let err = (kind.connect)(ConnectRequest::new(
        "gone",
        settings,
        Duration::from_secs(5),
        "/",
    ))
    .await
    .expect_err("no such program");
    assert_eq!(
        err.to_string(),
        "provider `gone` did not start: cannot start `/nonexistent/mcp-server`: No such file or directory (os error 2)"
    );
    let not_executable = tempfile::NamedTempFile::new().expect("file");
    let err = try_start_command(not_executable.path().to_str().expect("utf-8")).await;
    assert!(err.contains("Permission denied"), "{err}");
}

async fn try_start_command(program: &str) -> String {
    let config = spear_mcp_stdio::ServerConfig::new([program]);
    spear_mcp_stdio::McpProvider::start("x", &config, std::path::Path::new("/"), options())
        .await
        .expect_err("not executable")
        .to_string()
}

#[tokio::test]
async fn a_batch_answer_is_a_protocol_fault() {
    let err = try_start(&["--batch"], options())
        .await
        .expect_err("refused");
    assert!(
        err.to_string()
            .contains("the server sent a JSON-RPC batch, which MCP 2025-06-18 does not allow"),
        "{err}"
    );
}

#[tokio::test]
async fn notifications_sent_unasked_after_initialized_are_dropped_and_counted() {
    let p = start(&["--notify-after-init"]).await;
    p.list_tools().await.expect("listed");
    p.call_tool(call("fail")).await.expect("answered");
    assert_eq!(p.stats().notifications, 1);
    assert_eq!(common::detail(&p, "server"), "spear-fixture-server");
    stop(p).await;
}

/// A valid `initialize` result is read whatever else it holds: a
/// capability nested 200 deep (`experimental` is free-form) or a server
/// name no string can hold (a lone surrogate, kept as written) starts the
/// server, which answers its listing; neither is told as a wrong version.
#[tokio::test]
async fn an_initialize_result_is_read_whatever_else_it_holds() {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let cases = [
        (
            format!(r#"{{"tools":{{}},"experimental":{{"x":{deep}}}}}"#),
            "s",
            "s",
        ),
        (r#"{"tools":{}}"#.to_owned(), r"s\ud800", r"s\ud800"),
    ];
    for (capabilities, name, shown) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let result = format!(
            r#"{{"protocolVersion":"2025-06-18","capabilities":{capabilities},"serverInfo":{{"name":"{name}","version":"1"}}}}"#
        );
        let answer = format!("{{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{result}}}\n");
        let tools = json!([{"name": "a", "inputSchema": {"type": "object"}}]);
        let script = json!({
            "initialize": [{"raw": answer}],
            "tools/list": {"": [{"result": {"tools": tools}}]},
        });
        let path = dir.path().join("script.json");
        std::fs::write(&path, script.to_string()).expect("script");
        let script_server = env!("CARGO_BIN_EXE_spear-script-server");
        let config =
            spear_mcp_stdio::ServerConfig::new([script_server, path.to_str().expect("utf-8")]);
        let p = spear_mcp_stdio::McpProvider::start(
            "sc",
            &config,
            std::path::Path::new("/"),
            options(),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(common::detail(&p, "server"), shown);
        assert_eq!(p.list_tools().await.expect("listed").tools.len(), 1);
        stop(p).await;
    }
}
