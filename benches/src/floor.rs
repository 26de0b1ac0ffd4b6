//! The floor: a hand-written JSON-RPC client over the child's pipes with
//! blocking I/O and no framework, as fast as talking to this server gets.
//!
//! It does what any client must and nothing more: writes request lines,
//! reads answer lines, parses each answer as JSON and checks it.

use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::Value;

use crate::ECHO_TEXT;

/// One server, talked to with blocking reads and writes.
#[derive(Debug)]
pub struct Floor {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
    out: Vec<u8>,
    next_id: u64,
}

pub(crate) fn invalid(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

impl Floor {
    /// Starts the server; no request is sent yet.
    ///
    /// # Errors
    /// When it cannot be spawned.
    pub fn spawn(fixture: &Path, args: &[&str]) -> io::Result<Floor> {
        let mut child = Command::new(fixture)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(io::Error::other("pipes were not set up"));
        };
        Ok(Floor {
            child,
            stdin,
            stdout: BufReader::with_capacity(64 * 1024, stdout),
            line: Vec::with_capacity(1024),
            out: Vec::with_capacity(64 * 1024),
            next_id: 1,
        })
    }

    /// Starts the server and completes the handshake.
    ///
    /// # Errors
    /// When it cannot be spawned or answers the handshake wrongly.
    pub fn start(fixture: &Path, args: &[&str]) -> io::Result<Floor> {
        let mut floor = Floor::spawn(fixture, args)?;
        floor.send_initialize()?;
        floor.finish_initialize()?;
        Ok(floor)
    }

    /// Sends `initialize` (the first half of [`Floor::start`]).
    ///
    /// # Errors
    /// When the pipe fails.
    pub fn send_initialize(&mut self) -> io::Result<()> {
        self.queue(
            "initialize",
            r#"{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"floor","version":"0"}}"#,
        );
        self.flush()
    }

    /// Reads the answer to `initialize` and says `initialized` (the second
    /// half of [`Floor::start`]).
    ///
    /// # Errors
    /// When the answer is not a 2025-06-18 initialize result.
    pub fn finish_initialize(&mut self) -> io::Result<()> {
        let answer = self.read_answer()?;
        if answer["result"]["protocolVersion"] != "2025-06-18" {
            return Err(invalid(format!("initialize answered {answer}")));
        }
        self.stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
    }

    /// Appends one request to the output buffer and returns its id.
    fn queue(&mut self, method: &str, params: &str) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let _ = write!(
            self.out,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
        );
        self.out.push(b'\n');
        id
    }

    fn queue_echo(&mut self) -> u64 {
        self.queue("tools/call", echo_params())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stdin.write_all(&self.out)?;
        self.out.clear();
        Ok(())
    }

    /// Reads one line and parses it; it must be an answer with a result.
    fn read_answer(&mut self) -> io::Result<Value> {
        self.line.clear();
        if self.stdout.read_until(b'\n', &mut self.line)? == 0 {
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
    pub fn call_echo(&mut self) -> io::Result<String> {
        let id = self.queue_echo();
        self.flush()?;
        let answer = self.read_answer()?;
        if answer["id"] != id {
            return Err(invalid(format!("answer to {} for {id}", answer["id"])));
        }
        match answer["result"]["content"][0]["text"].as_str() {
            Some(text) => Ok(text.to_owned()),
            None => Err(invalid(format!("no text in {answer}"))),
        }
    }

    /// `total` echo calls with up to `window` in flight: once it has read
    /// every answer it holds and at most half the window is still in flight,
    /// it tops the window up in one write, so each write and each read
    /// carries many messages.
    ///
    /// # Errors
    /// When the pipe fails or an answer is not a result.
    pub fn calls_in_flight(&mut self, total: usize, window: usize) -> io::Result<()> {
        let window = window.max(1);
        let (mut sent, mut done) = (0, 0);
        while done < total {
            // Refilling at half the window batches many requests per write
            // without letting the server run dry.
            if self.stdout.buffer().is_empty() && sent - done <= window / 2 {
                let room = window - (sent - done);
                for _ in 0..room.min(total - sent) {
                    self.queue_echo();
                    sent += 1;
                }
                self.flush()?;
            }
            self.read_answer()?;
            done += 1;
        }
        Ok(())
    }

    /// Every tool, following `nextCursor` to the end.
    ///
    /// # Errors
    /// When the pipe fails or a page has no tools.
    pub fn list_all(&mut self) -> io::Result<Vec<Value>> {
        self.send_list(None)?;
        self.read_pages()
    }

    /// Sends the first `tools/list` (for starting many servers at once).
    ///
    /// # Errors
    /// When the pipe fails.
    pub fn send_list(&mut self, cursor: Option<&str>) -> io::Result<()> {
        let params = match cursor {
            Some(c) => serde_json::json!({ "cursor": c }).to_string(),
            None => "{}".to_owned(),
        };
        self.queue("tools/list", &params);
        self.flush()
    }

    /// Reads the answer to a sent `tools/list` and follows its pages.
    ///
    /// # Errors
    /// When the pipe fails or a page has no tools.
    pub fn read_pages(&mut self) -> io::Result<Vec<Value>> {
        let mut tools = Vec::new();
        loop {
            let mut page = self.read_answer()?;
            let Some(Value::Array(batch)) = page["result"].get_mut("tools").map(Value::take) else {
                return Err(invalid("a page has no tools"));
            };
            tools.extend(batch);
            match page["result"]["nextCursor"].as_str() {
                Some(next) => {
                    let next = next.to_owned();
                    self.send_list(Some(&next))?;
                }
                None => return Ok(tools),
            }
        }
    }
}

/// An answer line parsed; it must be an answer with a result.
pub(crate) fn result_answer(line: &[u8]) -> io::Result<Value> {
    let answer: Value = serde_json::from_slice(line)?;
    if answer.get("result").is_none() {
        return Err(invalid(format!("not a result: {answer}")));
    }
    Ok(answer)
}

/// The params of an echo call, written once.
pub(crate) fn echo_params() -> &'static str {
    static PARAMS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PARAMS.get_or_init(|| {
        serde_json::json!({"name": "echo", "arguments": {"text": ECHO_TEXT}}).to_string()
    })
}

impl Drop for Floor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
