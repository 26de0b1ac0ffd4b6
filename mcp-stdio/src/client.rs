//! The JSON-RPC connection: one writer task, one reader task, requests
//! multiplexed by id, each under the entry's timeout.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::codec::{self, Incoming, LineReader, ReadError};
use crate::error::Failure;
use crate::process::{Pipes, ServerProcess};

/// What happened on the connection that is not an answer to us: kept for the
/// operator (`describe`), never shown to a turn.
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
    /// Answers to no pending request (late, after a timeout, or unknown ids).
    pub stray_answers: u64,
}

type Answer = Result<Value, Failure>;

#[derive(Debug, Default)]
struct Shared {
    pending: HashMap<u64, oneshot::Sender<Answer>>,
    failure: Option<Failure>,
    stats: Stats,
}

/// A line for the writer task, or the order to close the server's stdin.
#[derive(Debug)]
enum Out {
    Line(Vec<u8>),
    Close,
}

/// One connection to one server.
#[derive(Debug)]
pub(crate) struct Connection {
    shared: Arc<Mutex<Shared>>,
    out: mpsc::UnboundedSender<Out>,
    next_id: AtomicU64,
    timeout: Duration,
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

impl Connection {
    /// Starts the writer and reader tasks over `pipes`.
    pub(crate) fn start(
        pipes: Pipes,
        process: Arc<ServerProcess>,
        timeout: Duration,
        max_line: usize,
    ) -> Self {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (out, rx) = mpsc::unbounded_channel();
        tokio::spawn(write_loop(pipes.stdin, rx));
        let reader = LineReader::new(BufReader::with_capacity(64 * 1024, pipes.stdout), max_line);
        tokio::spawn(read_loop(
            reader,
            Arc::clone(&shared),
            out.clone(),
            Arc::downgrade(&process),
        ));
        Connection {
            shared,
            out,
            next_id: AtomicU64::new(1),
            timeout,
        }
    }

    /// Sends one request and waits for its answer, at most the timeout.
    ///
    /// On timeout the server is told the request is cancelled and the whole
    /// connection fails: a provider that times out is left out.
    pub(crate) async fn request<P: serde::Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Answer {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut shared = lock(&self.shared);
            if let Some(failure) = &shared.failure {
                return Err(failure.clone());
            }
            shared.pending.insert(id, tx);
        }
        let mut guard = Pending {
            id,
            connection: self,
            armed: true,
            reason: "the client stopped waiting",
        };
        let _ = self.out.send(Out::Line(codec::request(id, method, params)));
        let mut rx = rx;
        match tokio::time::timeout(self.timeout, &mut rx).await {
            Ok(answer) => {
                guard.armed = false;
                // A dropped sender means the reader ended without answering.
                answer.unwrap_or_else(|_| Err(self.failure().unwrap_or(Failure::ShutDown)))
            }
            Err(_) => {
                guard.reason = "timed out";
                drop(guard);
                // The answer may have come in the same instant the time ran
                // out: then it was taken from `pending` and is waiting here.
                if let Ok(answer) = rx.try_recv() {
                    return answer;
                }
                let failure = Failure::Timeout(self.timeout);
                self.fail(failure.clone());
                Err(failure)
            }
        }
    }

    /// Sends one notification.
    pub(crate) fn notify(&self, method: &str, params: Option<Value>) {
        let _ = self
            .out
            .send(Out::Line(codec::notification(method, params)));
    }

    /// Fails the connection, and every pending request with it, unless it
    /// already failed.
    pub(crate) fn fail(&self, failure: Failure) {
        fail(&self.shared, failure);
    }

    /// Why the connection failed, if it did.
    pub(crate) fn failure(&self) -> Option<Failure> {
        lock(&self.shared).failure.clone()
    }

    /// Closes the server's stdin, the polite way to ask it to leave.
    pub(crate) fn close(&self) {
        let _ = self.out.send(Out::Close);
    }

    /// A snapshot of the counters.
    pub(crate) fn stats(&self) -> Stats {
        lock(&self.shared).stats.clone()
    }
}

fn fail(shared: &Mutex<Shared>, failure: Failure) {
    let pending = {
        let mut shared = lock(shared);
        if shared.failure.is_some() {
            return;
        }
        shared.failure = Some(failure.clone());
        std::mem::take(&mut shared.pending)
    };
    for (_, tx) in pending {
        let _ = tx.send(Err(failure.clone()));
    }
}

/// Removes an abandoned request (its future was dropped, or it timed out)
/// and tells the server, so that no answer is awaited that nobody reads.
struct Pending<'a> {
    id: u64,
    connection: &'a Connection,
    armed: bool,
    reason: &'static str,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let removed = lock(&self.connection.shared)
            .pending
            .remove(&self.id)
            .is_some();
        if removed {
            self.connection.notify(
                "notifications/cancelled",
                Some(json!({"requestId": self.id, "reason": self.reason})),
            );
        }
    }
}

async fn write_loop(mut stdin: tokio::process::ChildStdin, mut rx: mpsc::UnboundedReceiver<Out>) {
    // Lines queued together go out in one write: many calls in flight then
    // cost one system call, not one each.
    let mut batch = Vec::new();
    let mut close = false;
    while !close {
        match rx.recv().await {
            Some(Out::Line(line)) => batch.extend_from_slice(&line),
            Some(Out::Close) | None => break,
        }
        while batch.len() < 1024 * 1024 {
            match rx.try_recv() {
                Ok(Out::Line(line)) => batch.extend_from_slice(&line),
                Ok(Out::Close) => {
                    close = true;
                    break;
                }
                Err(_) => break,
            }
        }
        // A server that stopped reading shows up on the reader side as EOF
        // or a timeout; here there is nothing more to do than stop.
        if stdin.write_all(&batch).await.is_err() || stdin.flush().await.is_err() {
            return;
        }
        batch.clear();
    }
    // Closed, or the connection is gone: dropping stdin closes it.
}

async fn read_loop(
    mut reader: LineReader<BufReader<tokio::process::ChildStdout>>,
    shared: Arc<Mutex<Shared>>,
    out: mpsc::UnboundedSender<Out>,
    // Weak: the provider's drop must reach the process (and kill its group)
    // while this task still waits for the end of stdout.
    process: Weak<ServerProcess>,
) {
    let failure = loop {
        let incoming = match reader.next_line().await {
            Ok(Some(line)) => match codec::decode(line) {
                Incoming::Junk => {
                    let mut shared = lock(&shared);
                    shared.stats.junk_lines += 1;
                    let cut = &line[..line.len().min(200)];
                    shared.stats.last_junk = Some(String::from_utf8_lossy(cut).into_owned());
                    continue;
                }
                incoming => incoming,
            },
            Ok(None) => break crashed(&process, "closed its stdout").await,
            Err(ReadError::Io(e)) => break crashed(&process, &format!("stdout failed: {e}")).await,
            Err(ReadError::TooLong) => {
                break Failure::Protocol(format!(
                    "the server sent a line longer than the bound of {}",
                    size(reader.limit())
                ));
            }
        };
        match incoming {
            Incoming::Response { id, outcome } => {
                let waiter = {
                    let mut shared = lock(&shared);
                    let waiter = id.as_u64().and_then(|id| shared.pending.remove(&id));
                    if waiter.is_none() {
                        shared.stats.stray_answers += 1;
                    }
                    waiter
                };
                if let Some(tx) = waiter {
                    let answer =
                        outcome.map_err(|(code, message)| Failure::Rejected { code, message });
                    let _ = tx.send(answer);
                }
            }
            Incoming::Request { id, method } => {
                lock(&shared).stats.server_requests += 1;
                let answer = if method == "ping" {
                    Ok(json!({}))
                } else {
                    Err((-32601, "method not found"))
                };
                let _ = out.send(Out::Line(codec::response(id, answer)));
            }
            Incoming::Notification => lock(&shared).stats.notifications += 1,
            Incoming::Batch => {
                break Failure::Protocol(
                    "the server sent a JSON-RPC batch, which MCP 2025-06-18 does not allow".into(),
                );
            }
            Incoming::Junk => {}
        }
    };
    fail(&shared, failure);
}

fn size(bytes: usize) -> String {
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
