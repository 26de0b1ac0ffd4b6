//! Our side: the `mcp-stdio` client alone, and the full gateway path
//! (recognize, check the schema, call, frame) through a [`Session`].

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use spear_capabilities::{
    AnswerStatus, Audit, Auto, CallRequest, Content, Provider, Registry, Session, SessionOptions,
    Turn, TurnContext, TurnKind,
};
use spear_mcp_stdio::{McpProvider, Options, ServerConfig};

use crate::ECHO_TEXT;

fn config(fixture: &Path, args: &[&str]) -> ServerConfig {
    let mut command = vec![fixture.display().to_string()];
    command.extend(args.iter().map(|a| (*a).to_owned()));
    let Value::Object(settings) = json!({ "command": command }) else {
        unreachable!("a json object literal")
    };
    // The fixture's command line is always valid.
    ServerConfig::from_settings(&settings).unwrap_or_else(|p| panic!("{p:?}"))
}

/// Starts the fixture as an [`McpProvider`] (spawn and initialize).
///
/// # Errors
/// As [`McpProvider::start`].
pub async fn start(fixture: &Path, args: &[&str]) -> Result<McpProvider, String> {
    McpProvider::start(
        "bench",
        &config(fixture, args),
        Path::new("/"),
        Options::default(),
    )
    .await
    .map_err(|e| e.to_string())
}

/// The arguments of every echo call.
pub fn echo_arguments() -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("text".into(), ECHO_TEXT.into());
    args
}

/// One echo call through the provider; checks the answer.
///
/// # Errors
/// When the call fails or the text is not the echo.
pub async fn call_echo(provider: &McpProvider) -> Result<(), String> {
    let result = provider
        .call_tool(CallRequest::new("echo", echo_arguments()))
        .await
        .map_err(|e| e.to_string())?;
    match result.content.first() {
        Some(Content::Text { text }) if text == ECHO_TEXT => Ok(()),
        other => Err(format!("unexpected echo answer {other:?}")),
    }
}

/// The invoke command a turn types for one echo call.
pub fn invoke_line() -> String {
    format!(
        "spear-capability invoke fx/echo '{}'",
        json!({ "text": ECHO_TEXT })
    )
}

/// A session and one turn in it whose family is the fixture as provider
/// `fx`, with `echo` READ and already described (the fixture's 9 tools are
/// shown as an index), so each invoke goes the whole way.
#[derive(Debug)]
pub struct Gateway {
    /// The session, closed by [`Gateway::close`].
    pub session: Session,
    /// The turn commands are answered in.
    pub turn: Turn,
}

impl Gateway {
    /// Opens the session and its turn, starting the fixture.
    ///
    /// # Errors
    /// When the registry does not parse or the provider does not start.
    pub async fn open(fixture: &Path, args: &[&str]) -> Result<Gateway, String> {
        let mut command = vec![fixture.display().to_string()];
        command.extend(args.iter().map(|a| (*a).to_owned()));
        let file = json!({"providers": [{
            "id": "fx", "command": command, "scope": "global", "read": ["echo"]
        }]});
        let registry = Registry::parse(
            file.to_string().as_bytes(),
            // Its folder is where the server runs: one that exists.
            &fixture.with_file_name("capabilities.json"),
            &spear_providers::kinds().expect("built-in kinds"),
            &Audit::null(),
        )
        .map_err(|e| e.to_string())?;
        let session = Session::open(
            Arc::new(registry),
            SessionOptions::new("bench", Arc::new(Auto)),
        );
        let turn = session
            .begin_turn(TurnContext::new("/bench/tree", TurnKind::Implementation).with_project("p"))
            .await
            .map_err(|e| e.to_string())?;
        if let Some(notice) = session.take_notices().first() {
            return Err(notice.text());
        }
        let described = turn
            .answer("spear-capability describe fx/echo")
            .await
            .ok_or("describe was not recognized")?;
        if described.status != AnswerStatus::Ok {
            return Err(described.text);
        }
        Ok(Gateway { session, turn })
    }

    /// One echo call as a turn types it; checks the framed answer.
    ///
    /// # Errors
    /// When it is not answered with the echo.
    pub async fn call_echo(&self, line: &str) -> Result<(), String> {
        match self.turn.answer(line).await {
            Some(a) if a.status == AnswerStatus::Ok && a.text.contains(ECHO_TEXT) => Ok(()),
            other => Err(format!("unexpected gateway answer {other:?}")),
        }
    }

    /// Closes the session, stopping the provider.
    pub async fn close(self) {
        drop(self.turn);
        self.session.close().await;
    }
}
