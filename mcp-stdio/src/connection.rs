//! The JSON-RPC connection: requests by id, each with its own deadline, and
//! one reader task that hands each answer to the request waiting for it.
//!
//! An answer counts only if it was read after its request was registered
//! (and so after the server could have seen it): the reader counts its reads
//! under the lock that registering takes, and each request remembers the
//! count it saw. A server that writes the answer to a request it has not
//! been sent yet, guessing the next id, gets a stray answer, never a hit.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::unix::pipe;
use tokio::sync::oneshot;

use crate::codec::{self, Incoming, LineReader, Outcome, ReadError};
use crate::error::Failure;
use crate::outbox::{MAX_UNREAD, Outbox, Unread};
use crate::process::{Pipes, ServerProcess};
use crate::trace::Trace;

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
    /// Answers to no pending request (late, after a timeout, unknown ids,
    /// or written before their request was sent).
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

/// A request sent and not answered.
#[derive(Debug)]
struct Waiting {
    /// The reader's count of reads when the request was registered.
    after: u64,
    answer: oneshot::Sender<Answer>,
}

#[derive(Debug, Default)]
struct State {
    pending: HashMap<u64, Waiting>,
    /// Reads of the server's stdout that returned bytes.
    reads: u64,
    failure: Option<Failure>,
    stats: Stats,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    out: Outbox,
    /// The provider's id, for the trace and for `tracing` events.
    provider: String,
    /// The trace every line goes to, if one is set.
    trace: Option<Arc<Trace>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends `line`, failing the connection when the server leaves too much
    /// of what we send unread.
    fn send(&self, line: &[u8]) {
        self.traced("sent", line.strip_suffix(b"\n").unwrap_or(line));
        if let Err(Unread) = self.out.send(line) {
            self.fail(Failure::Protocol(format!(
                "the server does not read what it is sent: more than {} wait for its stdin",
                size(MAX_UNREAD)
            )));
        }
    }

    fn traced(&self, direction: &str, line: &[u8]) {
        if let Some(trace) = &self.trace {
            trace.line(&self.provider, direction, line);
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
        for (_, waiting) in pending {
            let _ = waiting.answer.send(Err(failure.clone()));
        }
    }
}

/// One connection to one server.
#[derive(Debug)]
pub(crate) struct Connection {
    shared: Arc<Shared>,
    next_id: AtomicU64,
    timeout: Duration,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shared.out.close();
    }
}

impl Connection {
    /// Starts the writer and reader tasks over `pipes` of `provider`; each
    /// request may take `timeout`, each line `max_line` bytes.
    pub(crate) fn start(
        pipes: Pipes,
        process: Weak<ServerProcess>,
        timeout: Duration,
        max_line: usize,
        provider: &str,
    ) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            out: Outbox::start(pipes.stdin),
            provider: provider.to_owned(),
            trace: crate::trace::current(),
        });
        let counted = Counted {
            pipe: pipes.stdout,
            shared: Arc::clone(&shared),
        };
        tokio::spawn(read_loop(
            LineReader::new(counted, max_line),
            Arc::clone(&shared),
            process,
        ));
        Connection {
            shared,
            next_id: AtomicU64::new(1),
            timeout,
        }
    }

    /// Sends one request and waits for its answer, at most the timeout.
    ///
    /// On timeout the server is told the request is cancelled (unless
    /// `cancel` says never) and the whole connection fails: a provider that
    /// times out is left out.
    ///
    /// # Cancel safety
    /// Dropping the future forgets the request and tells the server so
    /// (unless `cancel` says never).
    pub(crate) async fn request<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
        cancel: Cancel,
    ) -> Answer {
        self.request_within(method, params, cancel, self.timeout)
            .await
    }

    /// [`Connection::request`], waiting at most `timeout` (a start's own
    /// requests may be let run longer than a call).
    pub(crate) async fn request_within<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
        cancel: Cancel,
        timeout: Duration,
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
            let after = state.reads;
            state.pending.insert(id, Waiting { after, answer });
        }
        let mut pending = Pending {
            id,
            shared: &self.shared,
            cancel,
            armed: true,
        };
        self.shared.send(&line);
        let span = tracing::debug_span!(target: "spear_mcp_stdio", "request", method, id);
        let answer =
            tracing::Instrument::instrument(tokio::time::timeout(timeout, answered), span).await;
        pending.armed = false;
        match answer {
            Ok(Ok(answer)) => answer,
            // The answer's sender is dropped only with the connection.
            Ok(Err(_)) => Err(self.failure().unwrap_or(Failure::ShutDown)),
            Err(_) => {
                tracing::warn!(target: "spear_mcp_stdio", provider = %self.shared.provider, method, id, after = ?timeout, "request timed out");
                let forgotten = self.shared.lock().pending.remove(&id).is_some();
                if forgotten && cancel == Cancel::Notify {
                    self.shared.send(&cancelled(id, "timed out"));
                }
                self.shared.fail(Failure::Timeout(timeout));
                Err(self.failure().unwrap_or(Failure::Timeout(timeout)))
            }
        }
    }

    /// Sends one notification.
    pub(crate) fn notify(&self, method: &str, params: Option<Value>) {
        self.shared.send(&codec::notification(method, params));
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

/// The `notifications/cancelled` line for request `id`.
fn cancelled(id: u64, reason: &str) -> Vec<u8> {
    codec::notification(
        "notifications/cancelled",
        Some(json!({"requestId": id, "reason": reason})),
    )
}

/// Forgets a request whose future was dropped before its answer came, and
/// tells the server, so that no answer is awaited that nobody reads.
struct Pending<'a> {
    id: u64,
    shared: &'a Shared,
    cancel: Cancel,
    armed: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let forgotten = self.shared.lock().pending.remove(&self.id);
        if forgotten.is_some() && self.cancel == Cancel::Notify {
            self.shared
                .send(&cancelled(self.id, "the client stopped waiting"));
        }
    }
}

/// The server's stdout, counting its reads under the state's lock (see the
/// module's documentation).
struct Counted {
    pipe: pipe::Receiver,
    shared: Arc<Shared>,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        let mut state = this.shared.lock();
        let before = buf.filled().len();
        let read = Pin::new(&mut this.pipe).poll_read(cx, buf);
        if buf.filled().len() > before {
            state.reads += 1;
        }
        read
    }
}

async fn read_loop(
    mut reader: LineReader<Counted>,
    shared: Arc<Shared>,
    // Weak: the provider's drop must reach the process (and kill its group)
    // while this task still waits for the end of stdout.
    process: Weak<ServerProcess>,
) {
    // Fails the connection if this task is dropped before its end: the
    // runtime that ran it shut down, and nothing reads the server any more.
    let mut gone = ReaderGone {
        shared: Some(Arc::clone(&shared)),
    };
    let failure = loop {
        match reader.next_line().await {
            Ok(Some(line)) => {
                shared.traced("received", line);
                if let Err(failure) = handle_line(&shared, line) {
                    break failure;
                }
            }
            Ok(None) => break crashed(&process, "closed its stdout").await,
            Err(ReadError::Io(e)) => break crashed(&process, &format!("stdout failed: {e}")).await,
            Err(ReadError::TooLong) => {
                break Failure::Protocol(format!(
                    "the server sent a line longer than the bound of {}",
                    size(reader.limit())
                ));
            }
        }
    };
    gone.shared = None;
    shared.fail(failure);
}

/// Hands one line from the server to whom it is for.
fn handle_line(shared: &Shared, line: &[u8]) -> Result<(), Failure> {
    match codec::decode(line) {
        Incoming::Junk => junk(shared, line),
        Incoming::Response { id, outcome } => {
            let waiting = {
                let mut state = shared.lock();
                let reads = state.reads;
                match id.map(|id| state.pending.entry(id)) {
                    Some(Entry::Occupied(entry)) if entry.get().after < reads => {
                        Some(entry.remove())
                    }
                    _ => None,
                }
            };
            let answer = match outcome {
                Outcome::Result(result) => Ok(result),
                Outcome::Error(code, message) => Err(Failure::Rejected { code, message }),
                Outcome::Malformed(why) => {
                    junk(shared, line);
                    // MCP: a broken answer to a pending call fails that call
                    // at once, not at its timeout; the provider stays.
                    Err(Failure::Unreadable(format!(
                        "the server's answer to this call is not valid JSON-RPC: {why}"
                    )))
                }
            };
            match (waiting, answer) {
                (Some(waiting), answer) => {
                    let _ = waiting.answer.send(answer);
                }
                // Counted as junk above.
                (None, Err(Failure::Unreadable(_))) => {}
                (None, _) => {
                    let strays = {
                        let mut state = shared.lock();
                        state.stats.stray_answers += 1;
                        state.stats.stray_answers
                    };
                    // Said once at info; each one at debug.
                    if strays == 1 {
                        tracing::info!(target: "spear_mcp_stdio", provider = %shared.provider, "the server answers requests that are not pending (counted as stray answers in describe)");
                    }
                    tracing::debug!(target: "spear_mcp_stdio", provider = %shared.provider, id, strays, "stray answer");
                }
            }
        }
        Incoming::Request { id, method } => {
            shared.lock().stats.server_requests += 1;
            let answer = if method == "ping" {
                Ok(json!({}))
            } else {
                Err((-32601, "method not found"))
            };
            shared.send(&codec::response(&id, answer));
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
        tracing::info!(target: "spear_mcp_stdio", provider = %shared.provider, "the server writes lines on stdout that are not JSON-RPC (counted as junk lines in describe)");
    }
    tracing::debug!(target: "spear_mcp_stdio", provider = %shared.provider, lines, excerpt = ?cut, "junk line");
}

/// Armed while the reader task runs: dropped armed, it fails the connection.
struct ReaderGone {
    shared: Option<Arc<Shared>>,
}

impl Drop for ReaderGone {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.take() {
            shared.fail(Failure::Crashed(
                "its connection is lost: the runtime that ran it has shut down".into(),
            ));
        }
    }
}

pub(crate) fn size(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// The failure of a server whose stdout ended: how its process ended, if it
/// did within a moment, after its stderr had a moment to drain.
async fn crashed(process: &Weak<ServerProcess>, what: &str) -> Failure {
    let Some(process) = process.upgrade() else {
        return Failure::ShutDown;
    };
    let status = process.exit_status(Duration::from_secs(2)).await;
    process.stderr_settled(Duration::from_millis(500)).await;
    match status {
        Some(status) => Failure::Crashed(status.to_string()),
        None => Failure::Crashed(format!("it {what} but is still running")),
    }
}
