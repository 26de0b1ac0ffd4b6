//! The async floor: the floor's hand-written JSON-RPC, but over tokio's
//! pipes, waiting on the runtime's event loop instead of in `read`.
//!
//! One request at a time, written and read by the caller itself: no task,
//! channel, map of pending requests or timer. It is what any tokio client
//! pays at the least for waiting on the event loop (a readiness wait through
//! `epoll_wait` before each read), so the distance from the floor to it is
//! the event loop's and the distance from it to a client is the client's.
//!
//! Many calls in flight ([`AsyncFloor::calls_in_flight`]) are the floor's
//! two threads made tokio's: the caller writes, batching into one write
//! every request the credits allow, while one reader task reads the answers
//! and hands back a credit per answer through the cheapest wake there is, a
//! counter and a [`Notify`]. No map (answers come in order), no timer, no
//! parse beyond the id. A tokio client with a reader task cannot do less.

use std::io;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Notify;

use crate::floor::{check_reply, echo_params, invalid, push_echo, result_answer};

/// One server, talked to on the runtime's event loop.
#[derive(Debug)]
pub struct AsyncFloor {
    _child: Child,
    stdin: ChildStdin,
    /// Lent to the reader task while calls are in flight.
    stdout: Option<BufReader<ChildStdout>>,
    line: Vec<u8>,
    out: Vec<u8>,
    next_id: u64,
}

/// Starts the server at `fixture` with `args`, its stdin and stdout piped
/// (stderr dropped), killed when the child is dropped.
///
/// # Errors
/// When it cannot be spawned.
pub(crate) fn spawn_piped(
    fixture: &Path,
    args: &[&str],
) -> io::Result<(Child, ChildStdin, ChildStdout)> {
    let mut child = Command::new(fixture)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(io::Error::other("pipes were not set up"));
    };
    Ok((child, stdin, stdout))
}

impl AsyncFloor {
    /// Starts the server and completes the handshake.
    ///
    /// # Errors
    /// When it cannot be spawned or answers the handshake wrongly.
    pub async fn start(fixture: &Path, args: &[&str]) -> io::Result<AsyncFloor> {
        let (child, stdin, stdout) = spawn_piped(fixture, args)?;
        let mut floor = AsyncFloor {
            _child: child,
            stdin,
            stdout: Some(BufReader::with_capacity(64 * 1024, stdout)),
            line: Vec::with_capacity(1024),
            out: Vec::with_capacity(1024),
            next_id: 1,
        };
        floor.queue(
            "initialize",
            r#"{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"floor","version":"0"}}"#,
        );
        floor.flush().await?;
        let answer = floor.read_answer().await?;
        if answer["result"]["protocolVersion"] != "2025-06-18" {
            return Err(invalid(format!("initialize answered {answer}")));
        }
        floor
            .stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await?;
        Ok(floor)
    }

    fn queue(&mut self, method: &str, params: &str) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        self.out.extend_from_slice(id.to_string().as_bytes());
        self.out.extend_from_slice(b",\"method\":\"");
        self.out.extend_from_slice(method.as_bytes());
        self.out.extend_from_slice(b"\",\"params\":");
        self.out.extend_from_slice(params.as_bytes());
        self.out.extend_from_slice(b"}\n");
        id
    }

    async fn flush(&mut self) -> io::Result<()> {
        self.stdin.write_all(&self.out).await?;
        self.out.clear();
        Ok(())
    }

    async fn read_line(&mut self) -> io::Result<()> {
        let stdout = self
            .stdout
            .as_mut()
            .ok_or_else(|| io::Error::other("stdout is lent out"))?;
        read_line(stdout, &mut self.line).await
    }

    async fn read_answer(&mut self) -> io::Result<Value> {
        self.read_line().await?;
        result_answer(&self.line)
    }

    /// One `tools/call` of `echo`, waited for; checks that its answer is a
    /// result with its id (the floor's check).
    ///
    /// # Errors
    /// When the pipe fails or the answer is not a result for this call.
    pub async fn call_echo(&mut self) -> io::Result<()> {
        let id = self.queue("tools/call", echo_params());
        self.flush().await?;
        self.read_line().await?;
        check_reply(&self.line, id)
    }

    /// `total` echo calls with up to `window` in flight: this future writes,
    /// every request the credits allow in one write, while a reader task
    /// (spawned, so on a worker of a multi-thread runtime, as a client's
    /// reader task is) reads and checks the answers in order and returns one
    /// credit per answer. The writer sleeps until at least one credit is
    /// back, then takes all there are.
    ///
    /// # Errors
    /// When the pipe fails or an answer is not a result for its call.
    pub async fn calls_in_flight(&mut self, total: usize, window: usize) -> io::Result<()> {
        if total == 0 {
            return Ok(());
        }
        let first = self.next_id;
        self.next_id += total as u64;
        let mut stdout = self
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("stdout is lent out"))?;
        let credits = Arc::new(Credits::default());
        let back = Arc::clone(&credits);
        let reader = tokio::spawn(async move {
            let mut line = Vec::with_capacity(1024);
            let mut read = Ok(());
            for id in first..first + total as u64 {
                read = match read_line(&mut stdout, &mut line).await {
                    Ok(()) => check_reply(&line, id),
                    Err(e) => Err(e),
                };
                if read.is_err() {
                    back.failed.store(true, Ordering::Release);
                    back.wake.notify_one();
                    break;
                }
                back.answered.fetch_add(1, Ordering::Release);
                back.wake.notify_one();
            }
            (stdout, read)
        });
        let mut sent = 0;
        let written = loop {
            let answered = credits.answered.load(Ordering::Acquire);
            let room = (answered + window.max(1) - sent).min(total - sent);
            if room == 0 {
                if credits.failed.load(Ordering::Acquire) {
                    break Ok(()); // the reader's error is returned
                }
                credits.wake.notified().await;
                continue;
            }
            for _ in 0..room {
                push_echo(&mut self.out, first + sent as u64);
                sent += 1;
            }
            let wrote = self.flush().await;
            if wrote.is_err() || sent == total {
                break wrote;
            }
        };
        self.out.clear();
        let (stdout, read) = reader
            .await
            .map_err(|e| io::Error::other(format!("the reader task failed: {e}")))?;
        self.stdout = Some(stdout);
        read.and(written)
    }
}

/// What the reader task hands back to the writer.
#[derive(Debug, Default)]
struct Credits {
    /// Answers read and checked so far.
    answered: AtomicUsize,
    /// The reader stopped on an error.
    failed: AtomicBool,
    /// Wakes the writer (a wake with no writer waiting is kept for it).
    wake: Notify,
}

/// Reads one line into `line`.
async fn read_line(stdout: &mut BufReader<ChildStdout>, line: &mut Vec<u8>) -> io::Result<()> {
    line.clear();
    if stdout.read_until(b'\n', line).await? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the server closed its stdout",
        ));
    }
    Ok(())
}
