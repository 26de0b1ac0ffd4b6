//! The JSON-RPC connection: requests by id, and one reader task that hands
//! each answer to the request waiting for it.
//!
//! A call has no deadline here: its caller keeps it and drops the call's
//! future when it passes (`spear_capabilities::Provider`'s contract), which
//! tells the server the call is cancelled. Only the requests of a start,
//! which no caller can see into, carry a timeout of their own.
//!
//! Every line sent and read is a `tracing` event on [`WIRE`], for an
//! operator who asks for it (`spear-capabilities --trace FILE`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::net::unix::pipe;
use tokio::sync::oneshot;

use crate::codec::{self, Incoming, LineReader, Outcome, ReadError};
use crate::error::Failure;
use crate::outbox::{MAX_UNREAD, Outbox, Unread};

/// The `tracing` target of every JSON-RPC line sent to and read from a
/// server, one event a line at `trace` level, with the fields `provider`,
/// `direction` (`sent` or `received`), `line`, and `cut_at_bytes` when the
/// line was cut. It carries what the servers are sent and say, arguments and
/// results included: it is the operator's, never a log's.
pub const WIRE: &str = "spear_mcp_stdio::wire";

/// The most of one line a [`WIRE`] event holds.
pub const TRACE_LINE_KEPT: usize = 64 * 1024;

/// What happened on the connection that is not an answer to us: kept for the
/// operator (`Provider::info`), never shown to a turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Lines on stdout that were not JSON-RPC messages (logs), skipped.
    pub junk_lines: u64,
    /// The last such line, cut to 200 bytes.
    pub last_junk: Option<String>,
    /// Notifications from the server, dropped.
    pub notifications: u64,
    /// Requests from the server (answered: `ping` with a result, others -32601).
    pub server_requests: u64,
    /// Answers to no pending request (late, after their caller gave up, or
    /// unknown ids).
    pub stray_answers: u64,
}

/// What a request gets: its result as the server wrote it, or why not.
pub(crate) type Answer = Result<Box<RawValue>, Failure>;

/// Whether a request that is given up on is cancelled with the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cancel {
    /// Tell the server (`notifications/cancelled`).
    Notify,
    /// Say nothing: `initialize` must never be cancelled.
    Never,
}

#[derive(Debug, Default)]
struct State {
    pending: HashMap<u64, oneshot::Sender<Answer>>,
    failure: Option<Failure>,
    stats: Stats,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    out: Outbox,
    /// The provider's id, for `tracing` events.
    provider: String,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends `line`, failing the connection when the server leaves too much
    /// of what we send unread.
    fn send(&self, line: Vec<u8>) {
        wire(
            &self.provider,
            "sent",
            line.strip_suffix(b"\n").unwrap_or(&line),
        );
        if let Err(Unread) = self.out.send(line) {
            self.fail(Failure::Protocol(format!(
                "the server does not read what it is sent: more than {} wait for its stdin",
                size(MAX_UNREAD)
            )));
        }
    }

    /// Fails the connection, and every pending request with it, unless it
    /// already failed.
    fn fail(&self, failure: Failure) {
        let pending = {
            let mut state = self.lock();
            if state.failure.is_some() {
                return;
            }
            state.failure = Some(failure.clone());
            std::mem::take(&mut state.pending)
        };
        if failure != Failure::ShutDown {
            tracing::warn!(target: "spear_mcp_stdio", provider = %self.provider, reason = %failure, "connection failed");
        }
        for (_, answer) in pending {
            let _ = answer.send(Err(failure.clone()));
        }
    }
}

/// One line as a [`WIRE`] event, cut at [`TRACE_LINE_KEPT`].
fn wire(provider: &str, direction: &'static str, line: &[u8]) {
    let kept = &line[..line.len().min(TRACE_LINE_KEPT)];
    tracing::trace!(
        target: WIRE,
        provider,
        direction,
        line = &*String::from_utf8_lossy(kept.strip_suffix(b"\r").unwrap_or(kept)),
        cut_at_bytes = (kept.len() < line.len()).then_some(TRACE_LINE_KEPT),
    );
}

/// One connection to one server.
#[derive(Debug)]
pub(crate) struct Connection {
    shared: Arc<Shared>,
    next_id: AtomicU64,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shared.out.close();
    }
}

impl Connection {
    /// Starts the writer and reader tasks over the server's `stdin` and
    /// `stdout`; each line may be `max_line` bytes.
    pub(crate) fn start(
        stdin: pipe::Sender,
        stdout: pipe::Receiver,
        max_line: usize,
        provider: &str,
    ) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            out: Outbox::start(stdin),
            provider: provider.to_owned(),
        });
        let reader = LineReader::new(stdout, max_line);
        tokio::spawn(read_loop(reader, Arc::clone(&shared)));
        Connection {
            shared,
            next_id: AtomicU64::new(1),
        }
    }

    /// Sends one request and waits for its answer; at most `timeout` if one
    /// is given, after which the server is told the request is cancelled
    /// (unless `cancel` says never) and the whole connection fails.
    ///
    /// # Cancel safety
    /// Dropping the future forgets the request and tells the server so
    /// (unless `cancel` says never); the connection is unharmed.
    pub(crate) async fn request<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
        cancel: Cancel,
        timeout: Option<Duration>,
    ) -> Answer {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let Some(line) = codec::request(id, method, params) else {
            return Err(Failure::Protocol(format!(
                "the {method} request cannot be written as JSON"
            )));
        };
        let (answer, answered) = oneshot::channel();
        {
            let mut state = self.shared.lock();
            if let Some(failure) = &state.failure {
                return Err(failure.clone());
            }
            state.pending.insert(id, answer);
        }
        let mut pending = Pending {
            id,
            shared: &self.shared,
            cancel,
            armed: true,
            reason: "the client stopped waiting",
        };
        self.shared.send(line);
        let span = tracing::debug_span!(target: "spear_mcp_stdio", "request", method, id);
        let answered = tracing::Instrument::instrument(answered, span);
        let answer = match timeout {
            None => answered.await,
            Some(timeout) => match tokio::time::timeout(timeout, answered).await {
                Ok(answer) => answer,
                Err(_) => {
                    tracing::warn!(target: "spear_mcp_stdio", provider = %self.shared.provider, method, id, after = ?timeout, "request timed out");
                    pending.reason = "timed out";
                    drop(pending);
                    self.shared.fail(Failure::Timeout(timeout));
                    return Err(self.failure().unwrap_or(Failure::Timeout(timeout)));
                }
            },
        };
        pending.armed = false;
        // The answer's sender is dropped only with the connection.
        answer.unwrap_or_else(|_| Err(self.failure().unwrap_or(Failure::ShutDown)))
    }

    /// Sends one notification.
    pub(crate) fn notify(&self, method: &str, params: Option<Value>) {
        self.shared.send(codec::notification(method, params));
    }

    /// Fails the connection, and every pending request with it, unless it
    /// already failed.
    pub(crate) fn fail(&self, failure: Failure) {
        self.shared.fail(failure);
    }

    /// Why the connection failed, if it did.
    pub(crate) fn failure(&self) -> Option<Failure> {
        self.shared.lock().failure.clone()
    }

    /// Closes the server's stdin, the polite way to ask it to leave.
    pub(crate) fn close(&self) {
        self.shared.out.close();
    }

    /// A snapshot of the counters.
    pub(crate) fn stats(&self) -> Stats {
        self.shared.lock().stats.clone()
    }
}

/// Forgets a request whose future was dropped (or timed out) before its
/// answer came, and tells the server, so that no answer is awaited that
/// nobody reads.
struct Pending<'a> {
    id: u64,
    shared: &'a Shared,
    cancel: Cancel,
    armed: bool,
    /// What the cancellation tells the server.
    reason: &'static str,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let forgotten = self.shared.lock().pending.remove(&self.id);
        if forgotten.is_some() && self.cancel == Cancel::Notify {
            let params = json!({"requestId": self.id, "reason": self.reason});
            self.shared
                .send(codec::notification("notifications/cancelled", Some(params)));
        }
    }
}

async fn read_loop(mut reader: LineReader<pipe::Receiver>, shared: Arc<Shared>) {
    // Fails the connection if this task is dropped before its end: the
    // runtime that ran it shut down, and nothing reads the server any more.
    let mut gone = ReaderGone(Some(Arc::clone(&shared)));
    let failure = loop {
        match reader.next_line().await {
            Ok(Some(line)) => {
                wire(&shared.provider, "received", line);
                if let Err(failure) = handle_line(&shared, line) {
                    break failure;
                }
            }
            // At once: how the process ended is read when this is reported.
            Ok(None) => break Failure::Closed("closed its stdout".into()),
            Err(ReadError::Io(e)) => {
                break Failure::Closed(format!("failed to read its stdout ({e})"));
            }
            Err(ReadError::TooLong) => {
                break Failure::Protocol(format!(
                    "the server sent a line longer than the bound of {}",
                    size(reader.limit())
                ));
            }
        }
    };
    gone.0 = None;
    shared.fail(failure);
}

/// Hands one line from the server to whom it is for.
fn handle_line(shared: &Shared, line: &[u8]) -> Result<(), Failure> {
    match codec::decode(line) {
        Incoming::Junk => junk(shared, line),
        Incoming::Response { id, outcome } => {
            let waiting = id.and_then(|id| shared.lock().pending.remove(&id));
            let answer = match outcome {
                Outcome::Result(result) => Ok(result),
                Outcome::Error(code, message) => Err(Failure::Rejected { code, message }),
                // MCP: a broken answer to a pending call fails that call at
                // once, not at its caller's deadline; the provider stays.
                Outcome::Unreadable(why) => {
                    junk(shared, line);
                    Err(Failure::Unreadable(format!(
                        "the server's answer to this call {why}"
                    )))
                }
            };
            match (waiting, answer) {
                (Some(waiting), answer) => {
                    let _ = waiting.send(answer);
                }
                // Counted as junk above.
                (None, Err(Failure::Unreadable(_))) => {}
                (None, _) => stray(shared, id),
            }
        }
        Incoming::Request { id, method } => {
            shared.lock().stats.server_requests += 1;
            let answer = if method == "ping" {
                Ok(json!({}))
            } else {
                Err((-32601, "method not found"))
            };
            shared.send(codec::response(&id, answer));
        }
        Incoming::Notification => shared.lock().stats.notifications += 1,
        Incoming::Batch => {
            return Err(Failure::Protocol(
                "the server sent a JSON-RPC batch, which MCP 2025-06-18 does not allow".into(),
            ));
        }
    }
    Ok(())
}

/// Counts an answer to no pending request.
fn stray(shared: &Shared, id: Option<u64>) {
    let strays = {
        let mut state = shared.lock();
        state.stats.stray_answers += 1;
        state.stats.stray_answers
    };
    // Said once at info; each one at debug.
    if strays == 1 {
        tracing::info!(target: "spear_mcp_stdio", provider = %shared.provider, "the server answers requests that are not pending (counted as stray_answers in the provider's info)");
    }
    tracing::debug!(target: "spear_mcp_stdio", provider = %shared.provider, id, strays, "stray answer");
}

/// Counts a line that is no message for us, keeping the last one for the
/// operator.
fn junk(shared: &Shared, line: &[u8]) {
    let cut = String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
    let lines = {
        let mut state = shared.lock();
        state.stats.junk_lines += 1;
        state.stats.last_junk = Some(cut.clone());
        state.stats.junk_lines
    };
    // Said once at info; each line at debug, cut and escaped.
    if lines == 1 {
        tracing::info!(target: "spear_mcp_stdio", provider = %shared.provider, "the server writes lines on stdout that are not JSON-RPC (counted as junk_lines in the provider's info)");
    }
    tracing::debug!(target: "spear_mcp_stdio", provider = %shared.provider, lines, excerpt = ?cut, "junk line");
}

/// Armed while the reader task runs: dropped armed, it fails the connection.
struct ReaderGone(Option<Arc<Shared>>);

impl Drop for ReaderGone {
    fn drop(&mut self) {
        if let Some(shared) = self.0.take() {
            shared.fail(Failure::Crashed(
                "its connection is lost: the runtime that ran it has shut down".into(),
            ));
        }
    }
}

/// `bytes` for a message: whole MiB when it is some.
pub(crate) fn size(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}
