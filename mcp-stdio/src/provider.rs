//! [`McpProvider`]: a started, initialized MCP server as a [`Provider`].

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use spear_capabilities::{CallRequest, CallResult, Error, Provider, ProviderInfo, ToolList};
use tokio::sync::Mutex;

use crate::codec::MAX_LINE;
use crate::config::ServerConfig;
use crate::connection::{Cancel, Connection, Stats};
use crate::error::Failure;
use crate::process::ServerProcess;
use crate::tools::{Listing, MAX_LISTING_BYTES, MAX_PAGES, read_page};
use crate::{NAME, content};

/// The only protocol version spoken; a server answering another is refused.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// How long one request may take when the entry gives no timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How a provider is run: its limits and the pace of its shutdown.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// How long one request may take.
    pub timeout: Duration,
    /// How long each request of the start (`initialize`, each `tools/list`
    /// page) may take; `None`: `timeout`.
    pub start_timeout: Option<Duration>,
    /// The longest line accepted from the server.
    pub max_line: usize,
    /// How long shutdown waits for the server to leave after its stdin closes.
    pub grace: Duration,
    /// How long shutdown waits after asking the group to terminate, before
    /// killing it.
    pub term_grace: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            start_timeout: None,
            max_line: MAX_LINE,
            grace: Duration::from_secs(2),
            term_grace: Duration::from_secs(2),
        }
    }
}

impl Options {
    /// Sets the request timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Lets each request of the start take `start_timeout`.
    pub fn with_start_timeout(mut self, start_timeout: Duration) -> Self {
        self.start_timeout = Some(start_timeout);
        self
    }

    /// How long each request of the start may take.
    fn start_timeout(&self) -> Duration {
        self.start_timeout.unwrap_or(self.timeout)
    }

    /// Sets the line bound.
    pub fn with_max_line(mut self, max_line: usize) -> Self {
        self.max_line = max_line;
        self
    }

    /// Sets both shutdown waits.
    pub fn with_grace(mut self, grace: Duration, term_grace: Duration) -> Self {
        self.grace = grace;
        self.term_grace = term_grace;
        self
    }
}

/// A running MCP server over stdio.
///
/// Dropping it without [`Provider::shutdown`] still kills its whole process
/// group (synchronously, with `SIGKILL`).
#[derive(Debug)]
pub struct McpProvider {
    id: String,
    connection: Connection,
    process: Arc<ServerProcess>,
    server: (String, String),
    /// Whether the server declared the `tools` capability: MCP lets a
    /// client use only what was negotiated.
    offers_tools: bool,
    options: Options,
    stopped: Mutex<bool>,
    /// Set as shutdown begins: from then on every use is `ShutDown`, even
    /// of a provider that had failed for another reason before.
    shut_down: AtomicBool,
}

impl McpProvider {
    /// Starts the server `config` names and completes the MCP handshake.
    ///
    /// # Errors
    /// [`Error::Start`] when the command cannot be spawned or refuses to
    /// initialize; [`Error::Protocol`] when it answers another protocol
    /// version or breaks the framing; [`Error::Timeout`] or
    /// [`Error::Crashed`] when it does not answer. The server is stopped:
    /// after a timeout, in a task of its own, so that the error is returned
    /// when the timeout happens (the stop sequence, bounded by the grace,
    /// goes on; if the runtime ends first, the process group is killed).
    ///
    /// # Cancel safety
    /// Dropping the future kills the server's process group.
    pub async fn start(
        id: &str,
        config: &ServerConfig,
        base_dir: &Path,
        options: Options,
    ) -> Result<McpProvider, Error> {
        let (process, pipes) = ServerProcess::spawn(config, base_dir)
            .await
            .map_err(|f| f.into_error(id, "", String::new()))?;
        let process = Arc::new(process);
        let connection = Connection::start(
            pipes,
            Arc::downgrade(&process),
            options.timeout,
            options.max_line,
            id,
        );
        let mut provider = McpProvider {
            id: id.to_owned(),
            connection,
            process,
            server: Default::default(),
            offers_tools: false,
            options,
            stopped: Mutex::new(false),
            shut_down: AtomicBool::new(false),
        };
        match provider.initialize().await {
            Ok((server, offers_tools)) => {
                provider.server = server;
                provider.offers_tools = offers_tools;
                Ok(provider)
            }
            Err(failure @ Failure::Timeout(_)) => {
                // A timeout is said when it happens: the server, still
                // running, gets its whole stop sequence in a task of its own
                // (killed with its group if the runtime ends first).
                let error = failure.into_error(id, "", provider.process.stderr_tail());
                tokio::spawn(async move {
                    let _ = provider.shutdown().await;
                });
                Err(error)
            }
            Err(failure) => {
                // Stopped first, so that the error carries what the server
                // wrote on stderr before the answer that failed the start,
                // however far its drain had got when the answer came. Built
                // from the failure itself: `error` would now call it a
                // shutdown.
                let _ = provider.shutdown().await;
                provider
                    .process
                    .stderr_settled(Duration::from_millis(500))
                    .await;
                Err(failure.into_error(id, "", provider.process.stderr_tail()))
            }
        }
    }

    /// The handshake; returns the server's name and version, and whether it
    /// declared the `tools` capability.
    async fn initialize(&self) -> Result<((String, String), bool), Failure> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "spear-capabilities", "version": env!("CARGO_PKG_VERSION")},
        });
        // MCP: the client must never cancel its initialize request.
        let answer = self
            .connection
            .request_within(
                "initialize",
                &params,
                Cancel::Never,
                self.options.start_timeout(),
            )
            .await;
        let answer: Value = match answer {
            Err(Failure::Rejected { code, message }) => {
                return Err(Failure::Start(format!(
                    "the server refused to initialize: error {code}: {message}"
                )));
            }
            answer => serde_json::from_str(answer?.get()).unwrap_or(Value::Null),
        };
        let version = answer.get("protocolVersion").and_then(Value::as_str);
        if version != Some(PROTOCOL_VERSION) {
            let version = version.map_or("none".to_owned(), |v| format!("{v:?}"));
            let failure = Failure::Protocol(format!(
                "the server speaks MCP protocol version {version}; only {PROTOCOL_VERSION:?} is supported"
            ));
            self.connection.fail(failure.clone());
            return Err(failure);
        }
        // Before any other request, as the protocol requires.
        self.connection.notify("notifications/initialized", None);
        let info = &answer["serverInfo"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        let offers_tools = answer["capabilities"]["tools"].is_object();
        Ok(((text(&info["name"]), text(&info["version"])), offers_tools))
    }

    /// What the connection saw besides answers: junk lines, notifications,
    /// server requests, stray answers.
    pub fn stats(&self) -> Stats {
        self.connection.stats()
    }

    /// The server's pid, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    fn error(&self, failure: Failure, tool: &str) -> Error {
        let failure = if self.shut_down.load(Ordering::SeqCst) {
            Failure::ShutDown
        } else {
            failure
        };
        failure.into_error(&self.id, tool, self.process.stderr_tail())
    }

    async fn list_pages(&self) -> Result<ToolList, Failure> {
        if !self.offers_tools {
            return Ok(ToolList::declared_none());
        }
        let mut listing = Listing::default();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        let mut bytes = 0;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let raw = self
                .connection
                .request_within(
                    "tools/list",
                    &params,
                    Cancel::Notify,
                    self.options.start_timeout(),
                )
                .await?;
            bytes += raw.get().len();
            if bytes > MAX_LISTING_BYTES {
                return Err(Failure::Protocol(format!(
                    "the tools/list pages come to more than {} MiB",
                    MAX_LISTING_BYTES >> 20
                )));
            }
            cursor = match read_page(raw.get(), &mut listing).map_err(Failure::Protocol)? {
                None => return Ok(listing.finish()),
                Some(next) => Some(next),
            };
            if let Some(next) = &cursor
                && !seen.insert(next.clone())
            {
                return Err(Failure::Protocol(format!(
                    "tools/list repeated the cursor {:?}, which would never end",
                    next.chars().take(64).collect::<String>()
                )));
            }
        }
        Err(Failure::Protocol(format!(
            "tools/list goes on past {MAX_PAGES} pages"
        )))
    }

    async fn call(&self, request: &CallRequest) -> Result<CallResult, Failure> {
        #[derive(serde::Serialize)]
        struct Params<'a> {
            name: &'a str,
            arguments: &'a serde_json::Map<String, Value>,
        }
        let params = Params {
            name: &request.tool,
            arguments: &request.arguments,
        };
        let answer = self
            .connection
            .request("tools/call", &params, Cancel::Notify)
            .await?;
        content::call_result(&answer).map_err(Failure::Unreadable)
    }
}

#[async_trait]
impl Provider for McpProvider {
    fn id(&self) -> &str {
        &self.id
    }

    fn info(&self) -> ProviderInfo {
        let stats = self.stats();
        let mut info = ProviderInfo::new(NAME)
            .with_detail("pid", self.pid().to_string())
            .with_detail("server", &self.server.0)
            .with_detail("server_version", &self.server.1)
            .with_detail("protocol", PROTOCOL_VERSION)
            .with_detail(
                "tools_capability",
                if self.offers_tools {
                    "declared"
                } else {
                    "not declared: no tools/list is sent"
                },
            )
            .with_detail("junk_lines", stats.junk_lines.to_string())
            .with_detail("notifications", stats.notifications.to_string())
            .with_detail("server_requests", stats.server_requests.to_string())
            .with_detail("stray_answers", stats.stray_answers.to_string());
        if let Some(junk) = stats.last_junk {
            info = info.with_detail("last_junk", junk);
        }
        if let Some(failure) = self.connection.failure() {
            info = info.with_detail("failed", failure.to_string());
        }
        info
    }

    async fn list_tools(&self) -> Result<ToolList, Error> {
        self.list_pages().await.map_err(|f| self.error(f, ""))
    }

    async fn call_tool(&self, request: CallRequest) -> Result<CallResult, Error> {
        self.call(&request)
            .await
            .map_err(|f| self.error(f, &request.tool))
    }

    /// The connection's failure, if it failed: the server exited or closed
    /// its stdout, broke the protocol, or a request timed out.
    fn failure(&self) -> Option<Error> {
        let failure = self.connection.failure()?;
        Some(self.error(failure, ""))
    }

    async fn shutdown(&self) -> Result<(), Error> {
        self.shut_down.store(true, Ordering::SeqCst);
        let mut stopped = self.stopped.lock().await;
        if !*stopped {
            self.connection.fail(Failure::ShutDown);
            self.connection.close();
            self.process
                .stop(self.options.grace, self.options.term_grace)
                .await;
            *stopped = true;
        }
        Ok(())
    }
}
