//! Framing: one JSON-RPC 2.0 message per line, each line bounded in size
//! while it is read, each message read once, through serde.

use std::borrow::Cow;
use std::io;
use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, ReadBuf};

/// The longest line accepted from a server, newline included.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// Reads one line of at most `limit` bytes without buffering more than that.
///
/// Lines are handed out of the read buffer itself, without a copy. The
/// buffer is sized by use: it starts at [`FIRST_READ`] bytes (most answers
/// are far smaller), doubles up to [`MOST_READ`] while reads keep filling
/// it, grows past that only to hold one long line, and goes back to its
/// size once such a line is consumed. An idle connection so holds a few KiB,
/// not a 64 KiB buffer it once needed.
///
/// The buffer lives as long as the reader, so a line that arrives in pieces
/// is never lost, whatever drops the future that waits for it.
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    inner: R,
    /// The read buffer, every byte of it initialised (zeroed when it grows),
    /// so that reads need no unsafe code; `buf[start..end]` is read and not
    /// handed out yet.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// `buf[start..scanned]` holds no newline.
    scanned: usize,
    /// The size the next empty buffer gets.
    want: usize,
    limit: usize,
}

/// The first read buffer's size.
const FIRST_READ: usize = 4 * 1024;
/// The most a read buffer grows to while lines are short.
const MOST_READ: usize = 64 * 1024;
/// Less room than this, and the buffer is compacted (or grown) first.
const LEAST_READ: usize = 512;

/// Why no line could be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The pipe failed.
    Io(io::Error),
    /// A line grew past the bound before its newline came.
    TooLong,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub(crate) fn new(inner: R, limit: usize) -> Self {
        Self {
            inner,
            buf: Vec::new(),
            start: 0,
            end: 0,
            scanned: 0,
            want: FIRST_READ,
            limit,
        }
    }

    /// The longest line accepted.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// The next line without its `\n` (or `\r\n`), or `None` at end of file.
    /// A last line without a newline is still a line.
    ///
    /// # Cancel safety
    /// Dropping the future loses nothing: what was read stays buffered.
    pub(crate) async fn next_line(&mut self) -> Result<Option<&[u8]>, ReadError> {
        let line = std::future::poll_fn(|cx| self.poll_line(cx)).await?;
        Ok(line.map(|line| self.line(line)))
    }

    /// The line at `at`, as [`LineReader::poll_line`] gave it, valid until
    /// the next poll.
    pub(crate) fn line(&self, at: Range<usize>) -> &[u8] {
        without_cr(&self.buf[at])
    }

    /// Where the next line is in the buffer (see [`LineReader::line`]), or
    /// `None` at end of file; `Pending` once everything the pipe held is
    /// read and no line is whole, with `cx`'s waker registered with the
    /// pipe (replacing the waker of whoever polled before).
    pub(crate) fn poll_line(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Range<usize>>, ReadError>> {
        loop {
            if let Some(line) = self.buffered() {
                return Poll::Ready(line.map(Some));
            }
            let pending = self.end - self.start;
            let room = self.room();
            let mut read = ReadBuf::new(&mut self.buf[self.end..self.end + room]);
            ready!(Pin::new(&mut self.inner).poll_read(cx, &mut read)).map_err(ReadError::Io)?;
            let n = read.filled().len();
            if n == 0 {
                if pending == 0 {
                    return Poll::Ready(Ok(None));
                }
                let from = self.start;
                self.start = self.end;
                self.scanned = self.start;
                return Poll::Ready(Ok(Some(from..self.end)));
            }
            self.filled(n, room);
        }
    }

    /// The next whole line in the buffer, or the bound's error; `None` when
    /// more must be read (after which there is room for it).
    fn buffered(&mut self) -> Option<Result<Range<usize>, ReadError>> {
        let unscanned = &self.buf[self.scanned..self.end];
        if let Some(i) = memchr::memchr(b'\n', unscanned) {
            let newline = self.scanned + i;
            if newline + 1 - self.start > self.limit {
                return Some(Err(ReadError::TooLong));
            }
            let from = self.start;
            self.start = newline + 1;
            self.scanned = self.start;
            return Some(Ok(from..newline));
        }
        self.scanned = self.end;
        // Even its newline would not fit.
        if self.end - self.start >= self.limit {
            return Some(Err(ReadError::TooLong));
        }
        self.make_room();
        None
    }

    /// How much the next read may take: what the buffer has room for, and
    /// no more than the line's bound allows.
    fn room(&self) -> usize {
        (self.buf.len() - self.end).min(self.limit - (self.end - self.start))
    }

    /// `n` bytes were read into a room of `room`.
    fn filled(&mut self, n: usize, room: usize) {
        self.end += n;
        if n == room && self.want < MOST_READ {
            // Reads fill the buffer: the next one may take more at once.
            self.want *= 2;
        }
    }

    /// Frees what was handed out, and leaves room for one more read.
    fn make_room(&mut self) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            self.scanned = 0;
            if self.buf.len() > MOST_READ {
                // A long line must not pin its memory for the whole session.
                self.buf = Vec::new();
            }
            if self.buf.len() < self.want {
                self.buf = vec![0; self.want];
            }
        } else if self.buf.len() - self.end < LEAST_READ {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.scanned -= self.start;
                self.start = 0;
            }
            if self.buf.len() - self.end < LEAST_READ {
                // One line longer than the buffer: grow as a Vec does.
                let grown = (self.buf.len() * 2).max(self.end + self.want);
                self.buf.resize(grown, 0);
            }
        }
    }
}

/// A line without its `\r` before the newline, if it has one.
fn without_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// One line from the server, classified.
#[derive(Debug, Clone)]
pub(crate) enum Incoming {
    /// An answer, to one of our requests or not.
    Response {
        /// The id, when it is one of ours could be (an integer of `u64`).
        id: Option<u64>,
        /// What the answer says.
        outcome: Outcome,
    },
    /// A request from the server to us.
    Request {
        /// Its id, echoed in our answer.
        id: Box<RawValue>,
        /// Its method.
        method: String,
    },
    /// A notification from the server.
    Notification,
    /// A JSON array: a batch, which 2025-06-18 removed.
    Batch,
    /// Not JSON, or JSON that is no JSON-RPC message (servers log to stdout).
    Junk,
}

/// What an answer says.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    /// Its result, as the server wrote it, for its caller to read.
    Result(Box<RawValue>),
    /// A JSON-RPC error: code and message.
    Error(i64, String),
    /// An answer that breaks JSON-RPC 2.0, and how.
    Malformed(&'static str),
}

/// The members of a message this client reads; any other is skipped. A
/// member given twice makes the line no message.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// A member that is there, `null` included (an absent one is `None`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Classifies one line.
pub(crate) fn decode(line: &[u8]) -> Incoming {
    // JSON text is UTF-8 (RFC 8259).
    let Ok(line) = std::str::from_utf8(line) else {
        return Incoming::Junk;
    };
    if line.trim_ascii_start().starts_with('[') {
        return match serde_json::from_str::<IgnoredAny>(line) {
            Ok(_) => Incoming::Batch,
            Err(_) => Incoming::Junk,
        };
    }
    let Ok(message) = serde_json::from_str::<Envelope<'_>>(line) else {
        return Incoming::Junk;
    };
    let version = message.jsonrpc.as_deref() == Some("2.0");
    if let Some(method) = message
        .method
        .and_then(|m| serde_json::from_str::<String>(m.get()).ok())
    {
        if !version {
            return Incoming::Junk;
        }
        return match message.id.filter(|id| is_string_or_number(id)) {
            Some(id) => Incoming::Request {
                id: id.to_owned(),
                method,
            },
            None => Incoming::Notification,
        };
    }
    let id = message
        .id
        .and_then(|id| serde_json::from_str::<u64>(id.get()).ok());
    let outcome = match (message.result, message.error) {
        _ if !version => Outcome::Malformed("it is not JSON-RPC 2.0"),
        (Some(result), None) => Outcome::Result(result.to_owned()),
        (None, Some(error)) => error_object(error),
        (Some(_), Some(_)) => Outcome::Malformed("it holds both a result and an error"),
        (None, None) => Outcome::Malformed("it holds neither a result nor an error"),
    };
    Incoming::Response { id, outcome }
}

fn is_string_or_number(id: &RawValue) -> bool {
    matches!(id.get().as_bytes()[0], b'"' | b'-' | b'0'..=b'9')
}

/// A JSON-RPC error object: an integer code, a message (empty if none).
fn error_object(error: &RawValue) -> Outcome {
    let error: Value = serde_json::from_str(error.get()).unwrap_or(Value::Null);
    match error.get("code").and_then(Value::as_i64) {
        Some(code) => {
            let message = error.get("message").and_then(Value::as_str).unwrap_or("");
            Outcome::Error(code, message.to_owned())
        }
        None => Outcome::Malformed("its error has no integer code"),
    }
}

/// A request line: one JSON object and its newline, as every line we write
/// is (some SDKs end the session on a blank line). `None` when `params`
/// cannot be written as JSON, so that no half line is ever sent.
pub(crate) fn request<P: Serialize + ?Sized>(id: u64, method: &str, params: &P) -> Option<Vec<u8>> {
    #[derive(Serialize)]
    struct Request<'a, P: ?Sized> {
        jsonrpc: &'static str,
        id: u64,
        method: &'a str,
        params: &'a P,
    }
    let mut line = serde_json::to_vec(&Request {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
    .ok()?;
    line.push(b'\n');
    Some(line)
}

/// A notification line.
pub(crate) fn notification(method: &str, params: Option<Value>) -> Vec<u8> {
    match params {
        Some(params) => line(&json!({"jsonrpc": "2.0", "method": method, "params": params})),
        None => line(&json!({"jsonrpc": "2.0", "method": method})),
    }
}

/// The answer to a server request: a result, or a JSON-RPC error.
pub(crate) fn response(id: &RawValue, outcome: Result<Value, (i64, &str)>) -> Vec<u8> {
    match outcome {
        Ok(result) => line(&json!({"jsonrpc": "2.0", "id": id, "result": result})),
        Err((code, message)) => line(&json!({
            "jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}
        })),
    }
}

fn line(message: &Value) -> Vec<u8> {
    // Serialising a Value cannot fail, and compact JSON escapes every newline.
    let mut out = serde_json::to_vec(message).unwrap_or_default();
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], limit: usize) -> Vec<Result<Vec<u8>, String>> {
        let mut reader = LineReader::new(tokio::io::BufReader::with_capacity(4, input), limit);
        let mut out = Vec::new();
        loop {
            match reader.next_line().await {
                Ok(Some(l)) => out.push(Ok(l.to_vec())),
                Ok(None) => return out,
                Err(ReadError::TooLong) => {
                    out.push(Err("too long".into()));
                    return out;
                }
                Err(ReadError::Io(e)) => panic!("{e}"),
            }
        }
    }

    #[tokio::test]
    async fn lines_split_on_newline_and_drop_a_trailing_cr() {
        let got = lines(b"one\r\ntwo\n\nthree", 100).await;
        let want: Vec<Result<Vec<u8>, String>> = vec![
            Ok(b"one".to_vec()),
            Ok(b"two".to_vec()),
            Ok(b"".to_vec()),
            Ok(b"three".to_vec()),
        ];
        assert_eq!(got, want);
    }

    #[tokio::test]
    async fn a_line_past_the_bound_is_refused_before_it_is_buffered() {
        let got = lines(b"12345678\n123456789\nnext\n", 9).await;
        assert_eq!(got, vec![Ok(b"12345678".to_vec()), Err("too long".into())]);
        let mut reader = LineReader::new(&b"0123456789abcdef"[..], 8);
        assert!(matches!(reader.next_line().await, Err(ReadError::TooLong)));
        assert!(reader.end <= 8, "buffered {}", reader.end);
    }

    /// A line many buffers long is whole; once it and the lines read with
    /// it are consumed the buffer is back to at most [`MOST_READ`]; a reader
    /// that read one small answer holds [`FIRST_READ`].
    #[tokio::test]
    async fn buffers_are_sized_by_use() {
        let long = vec![b'a'; 300 * 1024];
        let mut input = long.clone();
        input.extend_from_slice(b"\r\nshort\n");
        for _ in 0..2000 {
            input.extend_from_slice(b"0123456789abcdefghijklmnopqrstuvwxyz0123456789\n");
        }
        let mut reader = LineReader::new(&input[..], 1 << 20);
        assert_eq!(reader.next_line().await.expect("read"), Some(&long[..]));
        assert!(reader.buf.len() >= long.len());
        assert_eq!(reader.next_line().await.expect("read"), Some(&b"short"[..]));
        let mut n = 0;
        while let Some(line) = reader.next_line().await.expect("read") {
            assert_eq!(line.len(), 46);
            n += 1;
        }
        assert_eq!(n, 2000);
        // Everything consumed: the long line's memory is given back.
        assert!(reader.buf.len() <= MOST_READ, "{}", reader.buf.len());
        let mut idle = LineReader::new(&b"{}\n"[..], 1 << 20);
        assert_eq!(idle.next_line().await.expect("read"), Some(&b"{}"[..]));
        assert_eq!(idle.buf.len(), FIRST_READ);
    }

    fn raw(json: &str) -> Box<RawValue> {
        RawValue::from_string(json.to_owned()).expect("valid JSON")
    }

    /// What a classification says, to compare (raw JSON compares as text).
    fn same(incoming: &Incoming) -> String {
        format!("{incoming:?}")
    }

    fn answer(id: u64, outcome: Outcome) -> Incoming {
        Incoming::Response {
            id: Some(id),
            outcome,
        }
    }

    #[test]
    fn messages_are_classified() {
        use Outcome::{Error, Malformed, Result};
        let cases: Vec<(&str, Incoming)> = vec![
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"a":1},"extra":true}"#,
                answer(1, Result(raw(r#"{"a":1}"#))),
            ),
            (
                r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"nope"}}"#,
                Incoming::Response {
                    id: None,
                    outcome: Error(-32601, "nope".into()),
                },
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
                Incoming::Request {
                    id: raw("7"),
                    method: "ping".into(),
                },
            ),
            (
                r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
                Incoming::Notification,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#,
                Incoming::Notification,
            ),
            (r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#, Incoming::Batch),
            ("starting server on stdio...", Incoming::Junk),
            (
                r#"{"level":"info","msg":"hello"}"#,
                Incoming::Response {
                    id: None,
                    outcome: Malformed("it is not JSON-RPC 2.0"),
                },
            ),
            (
                r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
                answer(1, Malformed("it is not JSON-RPC 2.0")),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1}"#,
                answer(1, Malformed("it holds neither a result nor an error")),
            ),
            (r#""just a string""#, Incoming::Junk),
            (r#"["2.0", 1, "ping"]"#, Incoming::Batch),
            (r#"  [1, 2"#, Incoming::Junk),
            (
                r#"{"jsonrpc":"2.0","id":2,"result":null}"#,
                answer(2, Result(raw("null"))),
            ),
            (
                r#"{"method":5,"jsonrpc":"2.0","id":3,"result":[]}"#,
                answer(3, Result(raw("[]"))),
            ),
            (r#"{"jsonrpc":2.0,"id":1,"result":{}}"#, Incoming::Junk),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1}}"#,
                answer(1, Malformed("it holds both a result and an error")),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5}}"#,
                answer(1, Malformed("its error has no integer code")),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{}}"#,
                Incoming::Junk,
            ),
            ("", Incoming::Junk),
            (
                r#"{"jsonrpc":"2\u002e0","id":4,"result":{}}"#,
                answer(4, Result(raw("{}"))),
            ),
            (
                r#"{"jsonrpc":null,"id":1,"result":{}}"#,
                answer(1, Malformed("it is not JSON-RPC 2.0")),
            ),
            (
                r#"{"jsonrpc":"2.0","id":-1,"result":{}}"#,
                Incoming::Response {
                    id: None,
                    outcome: Result(raw("{}")),
                },
            ),
        ];
        for (line, want) in cases {
            assert_eq!(same(&decode(line.as_bytes())), same(&want), "{line}");
        }
        // JSON text is UTF-8: a line that is not is no message, wherever
        // the stray byte is.
        let stray = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"x\":\"\xff\"}";
        assert_eq!(same(&decode(stray)), same(&Incoming::Junk));
    }

    /// A result that serde_json's `Value` cannot hold (a lone surrogate, a
    /// depth past its limit) is still an answer: its caller learns it
    /// cannot read it, and nothing else does.
    #[test]
    fn a_result_is_kept_as_written_however_it_reads() {
        let deep = format!("{}{}", "[".repeat(400), "]".repeat(400));
        for result in [
            r#"{"content":[{"type":"text","text":"\ud800"}]}"#,
            deep.as_str(),
        ] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":9,"result":{result}}}"#);
            assert_eq!(
                same(&decode(line.as_bytes())),
                same(&answer(9, Outcome::Result(raw(result))))
            );
        }
    }

    #[test]
    fn written_lines_are_one_object_and_a_newline() {
        let params = json!({"name": "echo", "arguments": {"text": "a\nb"}});
        let lines = [
            request(3, "tools/call", &params).expect("written"),
            notification("notifications/initialized", None),
            response(&raw("\"x\""), Ok(json!({}))),
            response(&raw("7"), Err((-32601, "method not found"))),
        ];
        for line in &lines {
            let (body, rest) = line.split_at(line.len() - 1);
            assert_eq!(rest, b"\n");
            assert!(!body.contains(&b'\n'));
            let v: Value = serde_json::from_slice(body).expect("JSON");
            assert_eq!(v["jsonrpc"], "2.0");
        }
        let sent: Value = serde_json::from_slice(&lines[0]).expect("JSON");
        assert_eq!(
            sent,
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params})
        );
        let answered: Value = serde_json::from_slice(&lines[3]).expect("JSON");
        assert_eq!(answered["id"], 7);
        assert_eq!(answered["error"]["code"], -32601);
    }
}
