//! [`McpProvider`]: a started, initialized MCP server as a [`Provider`].

use std::collections::HashSet;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use spear_capabilities::{CallRequest, CallResult, Error, Provider, ProviderInfo, ToolList};
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::codec::MAX_LINE;
use crate::config::ServerConfig;
use crate::connection::{Cancel, Connection, Stats};
use crate::error::Failure;
use crate::process::ServerProcess;
use crate::tools::{Listing, MAX_LISTING_BYTES, MAX_PAGES, read_page};
use crate::{NAME, content};

/// The only protocol version spoken; a server answering another is refused.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// How long one request of a start may take when the entry gives no timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a failure of a server whose stdout closed waits for the
/// server's exit and last words on stderr (a dying server's come a moment
/// after its stdout closed).
const LAST_WORDS: Duration = Duration::from_millis(250);

/// How a provider is run: its limits and the pace of its shutdown.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// How long each request of the start (`initialize`, each `tools/list`
    /// page) may take. A call has no timeout here: its caller keeps it
    /// (`Provider`'s contract).
    pub timeout: Duration,
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
            max_line: MAX_LINE,
            grace: Duration::from_secs(2),
            term_grace: Duration::from_secs(2),
        }
    }
}

impl Options {
    /// Sets how long each request of the start may take.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
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
    process: ServerProcess,
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
    /// [`Error::Crashed`] when it does not answer. A server whose start
    /// failed is ended at once (SIGKILL to its group), so that the error is
    /// returned when the failure happens, with what the server wrote on
    /// stderr.
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
        let connection = Connection::start(pipes.stdin, pipes.stdout, options.max_line, id);
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
            Err(failure) => {
                // How a server whose stdout closed ended is read before it
                // is killed; then the error carries what it wrote on stderr
                // before the answer that failed the start, however far the
                // drain had got when the answer came.
                let process = &provider.process;
                let status = match failure {
                    Failure::Closed(_) => process.last_words(LAST_WORDS).await,
                    _ => None,
                };
                process.end(Instant::now() + LAST_WORDS).await;
                let failure = provider.ended(failure, status);
                Err(failure.into_error(id, "", process.stderr_tail()))
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
            .request(
                "initialize",
                &params,
                Cancel::Never,
                Some(self.options.timeout),
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

    /// `failure` as it is told: a shutdown once shutdown began; a closed
    /// stdout as how the process ended (`status`), if it did.
    fn ended(&self, failure: Failure, status: Option<ExitStatus>) -> Failure {
        match failure {
            _ if self.shut_down.load(Ordering::SeqCst) => Failure::ShutDown,
            Failure::Closed(what) => Failure::Crashed(status.map_or_else(
                || format!("it {what} but is still running"),
                |status| status.to_string(),
            )),
            failure => failure,
        }
    }

    /// The error for `failure` during a request for `tool` (empty outside
    /// calls), read as it is reported: a server whose stdout closed is given
    /// a moment for its exit and its last words.
    async fn report(&self, failure: Failure, tool: &str) -> Error {
        let status = match failure {
            Failure::Closed(_) => self.process.last_words(LAST_WORDS).await,
            _ => None,
        };
        let failure = self.ended(failure, status);
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
            let timeout = Some(self.options.timeout);
            let raw = self
                .connection
                .request("tools/list", &params, Cancel::Notify, timeout)
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
            .request("tools/call", &params, Cancel::Notify, None)
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
        match self.list_pages().await {
            Ok(list) => Ok(list),
            Err(failure) => Err(self.report(failure, "").await),
        }
    }

    async fn call_tool(&self, request: CallRequest) -> Result<CallResult, Error> {
        match self.call(&request).await {
            Ok(result) => Ok(result),
            Err(failure) => Err(self.report(failure, &request.tool).await),
        }
    }

    /// The connection's failure, if it failed: the server exited or closed
    /// its stdout, broke the protocol, or a request of its start timed out.
    fn failure(&self) -> Option<Error> {
        let failure = self.ended(self.connection.failure()?, self.process.status());
        Some(failure.into_error(&self.id, "", self.process.stderr_tail()))
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
