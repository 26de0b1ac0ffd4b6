//! [`McpProvider`]: a started, initialized MCP server as a [`Provider`].

use std::collections::HashSet;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use spear_capabilities::{CallRequest, CallResult, Error, Provider, ProviderInfo, ToolList};
use tokio::sync::OnceCell;

use crate::codec::{MAX_LINE, members};
use crate::config::ServerConfig;
use crate::connection::{Connection, Stats};
use crate::error::Failure;
use crate::process::ServerProcess;
use crate::tools::{Listing, MAX_LISTING_BYTES, MAX_PAGES, read_page};
use crate::{NAME, content};

/// The only protocol version spoken; a server answering another is refused.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// How long one request of a start may take when the entry gives no timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the failure of a server whose stdout closed waits for its exit
/// and last words on stderr.
const LAST_WORDS: Duration = Duration::from_millis(250);

/// How a provider is run: its limits and the pace of its shutdown.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// How long each request of the start (`initialize`, each page of
    /// `tools/list`) may take; a call's deadline is its caller's.
    pub timeout: Duration,
    /// The longest line accepted from the server.
    pub max_line: usize,
    /// How long shutdown waits for the server to leave once its stdin closes.
    pub grace: Duration,
    /// How long shutdown waits after asking the group to terminate.
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
    pub fn with_timeout(self, timeout: Duration) -> Self {
        Self { timeout, ..self }
    }

    /// Sets the line bound.
    pub fn with_max_line(self, max_line: usize) -> Self {
        Self { max_line, ..self }
    }

    /// Sets both shutdown waits.
    pub fn with_grace(mut self, grace: Duration, term_grace: Duration) -> Self {
        (self.grace, self.term_grace) = (grace, term_grace);
        self
    }
}

/// A string member's text; one no string can hold (a lone surrogate) as
/// it is written, escapes and all.
fn text(raw: Option<&RawValue>) -> Option<String> {
    let raw = raw?.get();
    let written = raw.strip_prefix('"')?.strip_suffix('"')?;
    Some(serde_json::from_str(raw).unwrap_or_else(|_| written.to_owned()))
}

/// A running MCP server over stdio.
///
/// Dropping it without [`Provider::shutdown`] still kills its whole process
/// group (synchronously, with `SIGKILL`).
#[derive(Debug)]
pub struct McpProvider {
    id: String,
    connection: Arc<Connection>,
    process: ServerProcess,
    server: (String, String),
    /// Whether the server declared the `tools` capability (MCP: use only
    /// what was negotiated).
    offers_tools: bool,
    options: Options,
    /// Set as shutdown begins: from then on every use is `ShutDown`.
    shut_down: AtomicBool,
    stopped: OnceCell<()>,
}

impl McpProvider {
    /// Starts the server `config` names and completes the MCP handshake.
    ///
    /// # Errors
    /// [`Error::Start`] when the command cannot be spawned or refuses to
    /// initialize; [`Error::Protocol`] when it answers another protocol
    /// version or breaks the framing; [`Error::Timeout`] or
    /// [`Error::Crashed`] when it does not answer. The server is then ended
    /// at once (SIGKILL to its group).
    ///
    /// # Cancel safety
    /// Dropping the future kills the server's process group.
    pub async fn start(
        id: &str,
        config: &ServerConfig,
        base_dir: &Path,
        options: Options,
    ) -> Result<McpProvider, Error> {
        let spawned = ServerProcess::spawn(config, base_dir).await;
        let (process, stdin, stdout) = spawned.map_err(|f| f.into_error(id, "", String::new()))?;
        let connection = Connection::start(stdin, stdout, options.max_line, id);
        let mut provider = McpProvider {
            id: id.to_owned(),
            connection,
            process,
            server: Default::default(),
            offers_tools: false,
            options,
            shut_down: AtomicBool::new(false),
            stopped: OnceCell::new(),
        };
        let Err(failure) = provider.initialize().await else {
            return Ok(provider);
        };
        // How it ended is read before it is killed, then its stderr to its end.
        let error = provider.failed(failure, "").await;
        provider.process.end(LAST_WORDS).await;
        Err(error)
    }

    /// The handshake.
    async fn initialize(&mut self) -> Result<(), Failure> {
        let client = json!({"name": "spear-capabilities", "version": env!("CARGO_PKG_VERSION")});
        let params =
            json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": client});
        let timeout = Some(self.options.timeout);
        let answer = self
            .connection
            .request("initialize", &params, timeout)
            .await;
        let answer = match answer {
            Err(Failure::Rejected { code, message }) => {
                let why = format!("the server refused to initialize: error {code}: {message}");
                return Err(Failure::Start(why));
            }
            answer => answer?,
        };
        // Only the members used are read, however the others nest
        // (`experimental` is free-form).
        let result = members(answer.get());
        let version = text(result.get("protocolVersion").copied());
        if version.as_deref() != Some(PROTOCOL_VERSION) {
            let version = version.map_or("none".to_owned(), |v| format!("{v:?}"));
            let failure = Failure::Protocol(format!(
                "the server speaks MCP protocol version {version}; only {PROTOCOL_VERSION:?} is supported"
            ));
            self.connection.fail(failure.clone());
            return Err(failure);
        }
        // Before any other request, as the protocol requires.
        self.connection.notify("notifications/initialized", None);
        let inner = |key| members(result.get(key).map_or("", |v| v.get()));
        let (info, capabilities) = (inner("serverInfo"), inner("capabilities"));
        let info = |key| text(info.get(key).copied()).unwrap_or_default();
        self.server = (info("name"), info("version"));
        let tools = capabilities.get("tools");
        self.offers_tools = tools.is_some_and(|t| t.get().starts_with('{'));
        Ok(())
    }

    /// What the connection saw besides answers.
    pub fn stats(&self) -> Stats {
        self.connection.stats()
    }

    /// The server's pid, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The error for `failure` in a request for `tool` (empty outside
    /// calls): a closed stdout told as how the process ended, if it did.
    async fn failed(&self, failure: Failure, tool: &str) -> Error {
        let status = match failure {
            Failure::Closed(_) => self.process.last_words(LAST_WORDS).await,
            _ => None,
        };
        self.error(failure, tool, status)
    }

    /// As [`McpProvider::failed`], with how the process ended (`status`).
    fn error(&self, failure: Failure, tool: &str, status: Option<ExitStatus>) -> Error {
        let still = |what| format!("it {what} but is still running");
        let failure = match failure {
            _ if self.shut_down.load(Ordering::SeqCst) => Failure::ShutDown,
            Failure::Closed(what) => {
                Failure::Crashed(status.map_or_else(|| still(what), |s| s.to_string()))
            }
            failure => failure,
        };
        failure.into_error(&self.id, tool, self.process.stderr_tail())
    }

    async fn list_pages(&self) -> Result<ToolList, Failure> {
        if !self.offers_tools {
            return Ok(ToolList::declared_none());
        }
        let (mut listing, mut seen, mut bytes) = (Listing::default(), HashSet::new(), 0);
        let (mut params, timeout) = (json!({}), Some(self.options.timeout));
        for _ in 0..MAX_PAGES {
            let raw = self
                .connection
                .request("tools/list", &params, timeout)
                .await?;
            bytes += raw.get().len();
            if bytes > MAX_LISTING_BYTES {
                let most = MAX_LISTING_BYTES >> 20;
                let why = format!("the tools/list pages come to more than {most} MiB");
                return Err(Failure::Protocol(why));
            }
            let Some(next) = read_page(raw.get(), &mut listing).map_err(Failure::Protocol)? else {
                return Ok(listing.list);
            };
            if !seen.insert(next.clone()) {
                let next: String = next.chars().take(64).collect();
                let why = format!("tools/list repeated the cursor {next:?}, which would never end");
                return Err(Failure::Protocol(why));
            }
            params = json!({ "cursor": next });
        }
        let why = format!("tools/list goes on past {MAX_PAGES} pages");
        Err(Failure::Protocol(why))
    }

    async fn call(&self, request: &CallRequest) -> Result<CallResult, Failure> {
        #[derive(serde::Serialize)]
        struct Params<'a> {
            name: &'a str,
            arguments: &'a serde_json::Map<String, Value>,
        }
        let (name, arguments) = (&request.tool, &request.arguments);
        let params = Params { name, arguments };
        let answer = self.connection.request("tools/call", &params, None).await?;
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
        let tools = match self.offers_tools {
            true => "declared",
            false => "not declared: no tools/list is sent",
        };
        let info = ProviderInfo::new(NAME)
            .with_detail("pid", self.pid().to_string())
            .with_detail("server", &self.server.0)
            .with_detail("server_version", &self.server.1)
            .with_detail("protocol", PROTOCOL_VERSION)
            .with_detail("tools_capability", tools)
            .with_detail("junk_lines", stats.junk_lines.to_string())
            .with_detail("notifications", stats.notifications.to_string())
            .with_detail("server_requests", stats.server_requests.to_string())
            .with_detail("stray_answers", stats.stray_answers.to_string());
        let last_junk = stats.last_junk.map(|junk| ("last_junk", junk));
        let failed = self.connection.failure().map(|f| ("failed", f.to_string()));
        let more = last_junk.into_iter().chain(failed);
        more.fold(info, |info, (name, value)| info.with_detail(name, value))
    }

    async fn list_tools(&self) -> Result<ToolList, Error> {
        match self.list_pages().await {
            Ok(list) => Ok(list),
            Err(failure) => Err(self.failed(failure, "").await),
        }
    }

    async fn call_tool(&self, request: CallRequest) -> Result<CallResult, Error> {
        match self.call(&request).await {
            Ok(result) => Ok(result),
            Err(failure) => Err(self.failed(failure, &request.tool).await),
        }
    }

    /// The connection's failure, if it failed.
    fn failure(&self) -> Option<Error> {
        Some(self.error(self.connection.failure()?, "", self.process.status()))
    }

    async fn shutdown(&self) -> Result<(), Error> {
        self.shut_down.store(true, Ordering::SeqCst);
        let (grace, term_grace) = (self.options.grace, self.options.term_grace);
        let stop = async {
            // Closes its stdin: the polite way to ask it to leave.
            self.connection.fail(Failure::ShutDown);
            self.process.stop(grace, term_grace).await;
        };
        self.stopped.get_or_init(|| stop).await;
        Ok(())
    }
}
