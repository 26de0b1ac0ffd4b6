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

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::net::unix::pipe;
use tokio::sync::oneshot;

use crate::codec::{self, Incoming, LineReader, Outcome, ReadError};
use crate::error::Failure;
use crate::outbox::{MAX_UNREAD, Outbox};

/// The `tracing` target of every JSON-RPC line sent and read, one `trace`
/// event a line (`provider`, `direction`: `sent` or `received`, `line`,
/// `cut_at_bytes` when cut): the operator's, never a log's.
pub const WIRE: &str = "spear_mcp_stdio::wire";

/// The most of one line a [`WIRE`] event holds.
pub const TRACE_LINE_KEPT: usize = 64 * 1024;

/// What happened on the connection besides answers to us: the operator's
/// (`Provider::info`), never a turn's.
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
    /// Answers to no pending request (late, or unknown ids).
    pub stray_answers: u64,
}

pub(crate) type Answer = Result<Box<RawValue>, Failure>;

/// One connection to one server, shared with its reader task.
#[derive(Debug)]
pub(crate) struct Connection {
    state: Mutex<State>,
    out: Outbox,
    provider: String,
    next_id: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    pending: HashMap<u64, oneshot::Sender<Answer>>,
    failure: Option<Failure>,
    stats: Stats,
}

impl Connection {
    pub(crate) fn start(
        stdin: pipe::Sender,
        stdout: pipe::Receiver,
        max_line: usize,
        provider: &str,
    ) -> Arc<Self> {
        let connection = Arc::new_cyclic(|me: &Weak<Connection>| {
            let me = Weak::clone(me);
            let closed = move || {
                let failure = Failure::Closed("closed its stdin".into());
                if let Some(connection) = me.upgrade() {
                    connection.fail(failure);
                }
            };
            Connection {
                state: Mutex::default(),
                out: Outbox::start(stdin, closed),
                provider: provider.into(),
                next_id: AtomicU64::new(1),
            }
        });
        tokio::spawn(read_loop(
            LineReader::new(codec::READ_BUFFER, stdout, max_line),
            Arc::clone(&connection),
        ));
        connection
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends one request and waits for its answer, at most `timeout`, after
    /// which it is cancelled and the connection fails.
    ///
    /// # Cancel safety
    /// Dropping the future forgets the request and tells the server so
    /// (never for `initialize`, as MCP says).
    pub(crate) async fn request<P: Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
        timeout: Option<Duration>,
    ) -> Answer {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let unwritable =
            || Failure::Protocol(format!("the {method} request cannot be written as JSON"));
        let line = codec::request(id, method, params).ok_or_else(unwritable)?;
        let (answer, answered) = oneshot::channel();
        {
            let mut state = self.lock();
            if let Some(failure) = &state.failure {
                return Err(failure.clone());
            }
            state.pending.insert(id, answer);
        }
        let cancel = (method != "initialize").then_some("the client stopped waiting");
        let mut pending = Pending(id, self, cancel);
        self.send(line);
        let span = tracing::debug_span!(target: "spear_mcp_stdio", "request", method, id);
        let answered = tracing::Instrument::instrument(answered, span);
        let answer = match timeout {
            None => answered.await,
            Some(after) => match tokio::time::timeout(after, answered).await {
                Ok(answer) => answer,
                Err(_) => {
                    tracing::warn!(target: "spear_mcp_stdio", provider = %self.provider, method, id, ?after, "request timed out");
                    pending.2 = pending.2.and(Some("timed out"));
                    drop(pending);
                    self.fail(Failure::Timeout(after));
                    return Err(self.failure().unwrap_or(Failure::Timeout(after)));
                }
            },
        };
        pending.2 = None;
        // The answer's sender is dropped only with the connection.
        answer.unwrap_or_else(|_| Err(self.failure().unwrap_or(Failure::ShutDown)))
    }

    pub(crate) fn notify(&self, method: &str, params: Option<Value>) {
        self.send(codec::notification(method, params));
    }

    /// Sends `line`; the connection fails when too much waits unread.
    fn send(&self, line: Vec<u8>) {
        wire(&self.provider, "sent", &line);
        if !self.out.send(&line) {
            let most = size(MAX_UNREAD);
            let why = format!(
                "the server does not read what it is sent: more than {most} wait for its stdin"
            );
            self.fail(Failure::Protocol(why));
        }
    }

    /// Fails the connection and every pending request, unless it failed,
    /// and closes the server's stdin once what was sent is written.
    pub(crate) fn fail(&self, failure: Failure) {
        let pending = {
            let mut state = self.lock();
            if state.failure.is_some() {
                return;
            }
            state.failure = Some(failure.clone());
            // Under the lock that `request` checks: no request is written after.
            self.out.close();
            std::mem::take(&mut state.pending)
        };
        if failure != Failure::ShutDown {
            tracing::warn!(target: "spear_mcp_stdio", provider = %self.provider, reason = %failure, "connection failed");
        }
        for answer in pending.into_values() {
            let _ = answer.send(Err(failure.clone()));
        }
    }

    pub(crate) fn failure(&self) -> Option<Failure> {
        self.lock().failure.clone()
    }

    pub(crate) fn stats(&self) -> Stats {
        self.lock().stats.clone()
    }
}

/// A request: forgotten if it is given up on, the server told why (the
/// cancellation's reason, unless `None`).
struct Pending<'a>(u64, &'a Connection, Option<&'static str>);

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        let Pending(id, connection, Some(reason)) = *self else {
            return;
        };
        if connection.lock().pending.remove(&id).is_some() {
            let params = json!({"requestId": id, "reason": reason});
            connection.notify("notifications/cancelled", Some(params));
        }
    }
}

/// One line as a [`WIRE`] event, cut at [`TRACE_LINE_KEPT`].
fn wire(provider: &str, direction: &'static str, line: &[u8]) {
    if !tracing::enabled!(target: WIRE, tracing::Level::TRACE) {
        return;
    }
    let (line, cut) = traced(line);
    let (line, cut_at_bytes) = (&*line, cut.then_some(TRACE_LINE_KEPT));
    tracing::trace!(target: WIRE, provider, direction, line, cut_at_bytes);
}

/// What a [`WIRE`] event holds of a line: at most [`TRACE_LINE_KEPT`] bytes
/// of text (a byte that is not UTF-8 reads as three), and whether it was cut.
fn traced(line: &[u8]) -> (Cow<'_, str>, bool) {
    // A line read comes without its `\r\n`; one sent, with its `\n`.
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let mut text = String::from_utf8_lossy(&line[..line.len().min(TRACE_LINE_KEPT)]);
    let mut end = text.len().min(TRACE_LINE_KEPT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = line.len() > TRACE_LINE_KEPT || end < text.len();
    if let Cow::Owned(text) = &mut text {
        text.truncate(end);
    }
    (text, cut)
}

async fn read_loop(mut reader: LineReader<pipe::Receiver>, shared: Arc<Connection>) {
    // Fails the connection when this task ends, also if it is dropped
    // first (its runtime shut down).
    let mut end = Ended(shared, None);
    end.1 = Some(loop {
        let line = match reader.next_line().await {
            Ok(Some(line)) => line,
            // At once: how the process ended is read when this is reported.
            Ok(None) => break Failure::Closed("closed its stdout".into()),
            Err(ReadError::Io(e)) => break Failure::Closed(format!("closed its stdout ({e})")),
            Err(ReadError::TooLong) => {
                let bound = size(reader.limit);
                let why = format!("the server sent a line longer than the bound of {bound}");
                break Failure::Protocol(why);
            }
        };
        wire(&end.0.provider, "received", line);
        if let Err(failure) = handle_line(&end.0, line) {
            break failure;
        }
    });
}

struct Ended(Arc<Connection>, Option<Failure>);

impl Drop for Ended {
    fn drop(&mut self) {
        let lost = "its connection is lost: the runtime that ran it has shut down";
        let failure = self.1.take().unwrap_or(Failure::Crashed(lost.into()));
        self.0.fail(failure);
    }
}

fn handle_line(shared: &Connection, line: &[u8]) -> Result<(), Failure> {
    match codec::decode(line) {
        Incoming::Junk => junk(shared, line),
        Incoming::Response { id, outcome } => {
            let waiting = id.and_then(|id| shared.lock().pending.remove(&id));
            let answer = match outcome {
                Outcome::Result(result) => Ok(result),
                Outcome::Error(code, message) => Err(Failure::Rejected { code, message }),
                // MCP: it fails that call at once; the provider stays.
                Outcome::Unreadable(why) => {
                    junk(shared, line);
                    let why = format!("the server's answer to this call {why}");
                    Err(Failure::Unreadable(why))
                }
            };
            match (waiting, answer) {
                (Some(waiting), answer) => drop(waiting.send(answer)),
                (None, Err(Failure::Unreadable(_))) => {} // counted as junk
                (None, _) => stray(shared, id),
            }
        }
        Incoming::Request { id, method } => {
            shared.lock().stats.server_requests += 1;
            let answer = match method.as_str() {
                "ping" => Ok(json!({})),
                _ => Err((-32601, "method not found")),
            };
            shared.send(codec::response(&id, answer));
        }
        Incoming::Notification => shared.lock().stats.notifications += 1,
        Incoming::Batch => {
            let why = "the server sent a JSON-RPC batch, which MCP 2025-06-18 does not allow";
            return Err(Failure::Protocol(why.into()));
        }
    }
    Ok(())
}

/// Counts an answer to no pending request: the first said at info.
fn stray(shared: &Connection, id: Option<u64>) {
    let mut state = shared.lock();
    state.stats.stray_answers += 1;
    let strays = state.stats.stray_answers;
    drop(state);
    if strays == 1 {
        tracing::info!(target: "spear_mcp_stdio", provider = %shared.provider, "the server answers requests that are not pending (counted as stray_answers in the provider's details of `spear-capabilities list --json`)");
    }
    tracing::debug!(target: "spear_mcp_stdio", provider = %shared.provider, id, strays, "stray answer");
}

/// Counts a line that is no message, keeping the last; the first said at info.
fn junk(shared: &Connection, line: &[u8]) {
    let cut = String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
    let mut state = shared.lock();
    state.stats.junk_lines += 1;
    state.stats.last_junk = Some(cut.clone());
    let lines = state.stats.junk_lines;
    drop(state);
    if lines == 1 {
        tracing::info!(target: "spear_mcp_stdio", provider = %shared.provider, "the server writes lines on stdout that are not JSON-RPC (counted as junk_lines in the provider's details of `spear-capabilities list --json`)");
    }
    tracing::debug!(target: "spear_mcp_stdio", provider = %shared.provider, lines, excerpt = ?cut, "junk line");
}

pub(crate) fn size(bytes: usize) -> String {
    match bytes % (1 << 20) {
        0 => format!("{} MiB", bytes >> 20),
        _ => format!("{bytes} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed connection writes nothing more, and closes the server's
    /// stdin once what was sent before is written: a request that passed
    /// the failure check just before the failure is not written after it.
    #[tokio::test]
    async fn a_failed_connection_writes_nothing_more() {
        use tokio::io::AsyncReadExt;
        let (stdin, mut server_reads) = pipe::pipe().expect("a pipe");
        let (_server_writes, stdout) = pipe::pipe().expect("a pipe");
        let connection = Connection::start(stdin, stdout, 1024, "p");
        connection.notify("before", None);
        connection.fail(Failure::Protocol("broken".into()));
        connection.notify("after", None);
        let mut read = Vec::new();
        let closed = server_reads.read_to_end(&mut read);
        tokio::time::timeout(Duration::from_secs(10), closed)
            .await
            .expect("stdin closed")
            .expect("read");
        let before = r#"{"jsonrpc":"2.0","method":"before"}"#;
        assert_eq!(String::from_utf8_lossy(&read), format!("{before}\n"));
    }

    /// A wire event holds at most [`TRACE_LINE_KEPT`] bytes of text, also
    /// of a line whose bytes are not UTF-8 (each read as a three-byte
    /// U+FFFD), and says when it was cut.
    #[test]
    fn a_traced_line_holds_at_most_the_bound_of_text() {
        let exact = vec![b'a'; TRACE_LINE_KEPT];
        let lines: [(&[u8], bool); 4] = [
            (&vec![0xff; 3 * TRACE_LINE_KEPT], true),
            (&vec![0xff; TRACE_LINE_KEPT / 2], true),
            (&exact, false),
            (b"{}\n", false),
        ];
        for (line, cut) in lines {
            let (text, was_cut) = traced(line);
            assert_eq!(was_cut, cut, "{} bytes", line.len());
            assert!(text.len() <= TRACE_LINE_KEPT, "{} bytes", text.len());
            assert!(text.len() > TRACE_LINE_KEPT - 3 || !cut);
        }
        assert_eq!(traced(&exact).0.as_bytes(), exact);
        assert_eq!(traced(b"{}\n").0, "{}");
    }
}
