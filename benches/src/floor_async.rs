//! The async floor: the floor's hand-written JSON-RPC, but over tokio's
//! pipes, waiting on the runtime's event loop instead of in `read`.
//!
//! One request at a time, written and read by the caller itself: no task,
//! channel, map of pending requests or timer. It is what any tokio client
//! pays at the least for waiting on the event loop (a readiness wait through
//! `epoll_wait` before each read), so the distance from the floor to it is
//! the event loop's and the distance from it to a client is the client's.

use std::io;
use std::path::Path;
use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::ECHO_TEXT;
use crate::floor::{echo_params, invalid, result_answer};

/// One server, talked to on the runtime's event loop.
#[derive(Debug)]
pub struct AsyncFloor {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
    out: Vec<u8>,
    next_id: u64,
}

impl AsyncFloor {
    /// Starts the server and completes the handshake.
    ///
    /// # Errors
    /// When it cannot be spawned or answers the handshake wrongly.
    pub async fn start(fixture: &Path, args: &[&str]) -> io::Result<AsyncFloor> {
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
        let mut floor = AsyncFloor {
            _child: child,
            stdin,
            stdout: BufReader::with_capacity(64 * 1024, stdout),
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

    async fn read_answer(&mut self) -> io::Result<Value> {
        self.line.clear();
        if self.stdout.read_until(b'\n', &mut self.line).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed its stdout",
            ));
        }
        result_answer(&self.line)
    }

    /// One `tools/call` of `echo`, waited for; returns the echoed text.
    ///
    /// # Errors
    /// When the pipe fails or the answer is not the echo.
    pub async fn call_echo(&mut self) -> io::Result<String> {
        let id = self.queue("tools/call", echo_params());
        self.flush().await?;
        let answer = self.read_answer().await?;
        if answer["id"] != id {
            return Err(invalid(format!("answer to {} for {id}", answer["id"])));
        }
        match answer["result"]["content"][0]["text"].as_str() {
            Some(text) if text == ECHO_TEXT => Ok(text.to_owned()),
            _ => Err(invalid(format!("not the echo: {answer}"))),
        }
    }
}
