//! The floor: a hand-written JSON-RPC client over the child's pipes with
//! blocking I/O and no framework, as fast as talking to this server gets.
//!
//! It does what any client must and nothing more: writes request lines,
//! reads answer lines and checks each answer's id and that it is a result,
//! reading nothing else of it (the shared yardstick's floor, `/work/shared/perf`,
//! does the same, so that the rows they share have the same floor). With
//! many calls in flight it works as that floor does too: the calling thread
//! writes, batching into one `write` every request the answers read so far
//! allow, while a reader thread reads the answers and hands back one credit
//! per answer.

use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

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

    /// One `tools/call` of `echo`, waited for; checks that its answer is a
    /// result with its id.
    ///
    /// # Errors
    /// When the pipe fails or the answer is not a result for this call.
    pub fn call_echo(&mut self) -> io::Result<()> {
        let id = self.queue_echo();
        self.flush()?;
        self.read_line()?;
        check_reply(&self.line, id)
    }

    /// `total` echo calls with up to `window` in flight, as the yardstick's
    /// floor makes them: this thread writes, every request the credits
    /// allow in one `write`, while a reader thread reads and checks the
    /// answers in order and hands back one credit per answer over a
    /// channel; the writer waits for one credit, then takes every other one
    /// already there.
    ///
    /// # Errors
    /// When the pipe fails or an answer is not a result for its call.
    pub fn calls_in_flight(&mut self, total: usize, window: usize) -> io::Result<()> {
        if total == 0 {
            return Ok(());
        }
        let first = self.next_id;
        self.next_id += total as u64;
        let (stdin, stdout, out) = (&mut self.stdin, &mut self.stdout, &mut self.out);
        let (credit_tx, credit_rx) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let reading = s.spawn(move || -> io::Result<()> {
                let mut line = Vec::with_capacity(1024);
                for id in first..first + total as u64 {
                    read_line(stdout, &mut line)?;
                    check_reply(&line, id)?;
                    // The writer may be done already: a closed channel is fine.
                    let _ = credit_tx.send(());
                }
                Ok(())
            });
            let mut sent = 0;
            let mut credits = window.max(1).min(total);
            let written = loop {
                out.clear();
                for _ in 0..credits {
                    push_echo(out, first + sent as u64);
                    sent += 1;
                }
                if let Err(e) = stdin.write_all(out) {
                    break Err(e);
                }
                if sent == total {
                    break Ok(());
                }
                // One answer, then every other one read already.
                if credit_rx.recv().is_err() {
                    break Ok(()); // the reader failed: its error is returned
                }
                credits = 1 + credit_rx.try_iter().count();
                credits = credits.min(total - sent);
            };
            out.clear();
            let read = reading
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the reader thread panicked")));
            read.and(written)
        })
    }

    fn read_line(&mut self) -> io::Result<()> {
        read_line(&mut self.stdout, &mut self.line)
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

/// Reads one line into `line`.
fn read_line(stdout: &mut BufReader<ChildStdout>, line: &mut Vec<u8>) -> io::Result<()> {
    line.clear();
    if stdout.read_until(b'\n', line)? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the server closed its stdout",
        ));
    }
    Ok(())
}

/// Just enough of an answer: its id, and whether a result or an error came
/// back, each kept as unparsed JSON text.
#[derive(Deserialize)]
struct Reply<'a> {
    id: u64,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// Checks that `line` is a result (not an error) for request `id`, reading
/// no more of it than that: the yardstick floor's check.
pub fn check_reply(line: &[u8], id: u64) -> io::Result<()> {
    let reply: Reply<'_> = serde_json::from_slice(line).map_err(|e| {
        invalid(format!(
            "answer to {id}: {e}: {}",
            String::from_utf8_lossy(line)
        ))
    })?;
    if reply.id != id || reply.error.is_some() || reply.result.is_none() {
        return Err(invalid(format!(
            "not a result for {id}: {}",
            String::from_utf8_lossy(line)
        )));
    }
    Ok(())
}

/// Appends one echo request with `id` to `out`.
pub(crate) fn push_echo(out: &mut Vec<u8>, id: u64) {
    let _ = writeln!(
        out,
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{}}}"#,
        echo_params()
    );
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
