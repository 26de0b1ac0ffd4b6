//! The official Rust MCP SDK, `rmcp`, as a client over a child process,
//! with the protocol version pinned to 2025-06-18.

use std::path::Path;
use std::process::Stdio;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, Tool,
};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientCacheConfig, RoleClient, ServiceExt};

use crate::ECHO_TEXT;
use crate::ours::echo_arguments;

/// A running `rmcp` client.
pub type Client = RunningService<RoleClient, ClientConfig>;

/// Spawns the fixture and completes rmcp's handshake. Its response cache is
/// turned off: the fixture sends no TTL, so it would only add work.
///
/// # Errors
/// When the server cannot be spawned or initialized.
pub async fn start(fixture: &Path, args: &[&str]) -> Result<Client, String> {
    let mut command = tokio::process::Command::new(fixture);
    command.args(args);
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("spear-benches", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::V_2025_06_18);
    let client = info.serve(transport).await.map_err(|e| e.to_string())?;
    client
        .peer()
        .set_response_cache_config(ClientCacheConfig::disabled())
        .await;
    Ok(client)
}

/// One echo call; checks the answer.
///
/// # Errors
/// When the call fails or the text is not the echo.
pub async fn call_echo(client: &Client) -> Result<(), String> {
    let result = client
        .call_tool(CallToolRequestParams::new("echo").with_arguments(echo_arguments()))
        .await
        .map_err(|e| e.to_string())?;
    let text = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.as_str());
    if text == Some(ECHO_TEXT) {
        Ok(())
    } else {
        Err(format!("unexpected echo answer {:?}", result.content))
    }
}

/// Every tool, following every page.
///
/// # Errors
/// When a request fails.
pub async fn list_all(client: &Client) -> Result<Vec<Tool>, String> {
    client.list_all_tools().await.map_err(|e| e.to_string())
}

/// Stops the client and its server.
pub async fn close(client: Client) {
    let _ = client.cancel().await;
}
