//! Framing: one JSON-RPC 2.0 message per line, each line bounded in size
//! while it is read, each message read once, through serde.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io;
use std::pin::Pin;

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, BufReader};

/// The longest line accepted from a server, newline included.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// A reader's buffer (as rmcp's), and the most a consumed line keeps.
pub(crate) const READ_BUFFER: usize = 8 * 1024;

/// Reads lines of at most `limit` bytes, each given back once consumed.
pub(crate) struct LineReader<R> {
    inner: BufReader<R>,
    line: Vec<u8>,
    /// `line` was handed out: cleared at the next read.
    handed: bool,
    pub(crate) limit: usize,
}

/// Why no line could be read: the pipe failed, or a line passed the bound.
#[derive(Debug)]
pub(crate) enum ReadError {
    Io(io::Error),
    TooLong,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Reads `inner` through `capacity` bytes ([`READ_BUFFER`] in use).
    pub(crate) fn new(capacity: usize, inner: R, limit: usize) -> Self {
        let inner = BufReader::with_capacity(capacity, inner);
        Self {
            inner,
            line: Vec::new(),
            handed: false,
            limit,
        }
    }

    /// The next line without its `\n` (or `\r\n`), or `None` at its end.
    ///
    /// # Cancel safety
    /// Dropping the future loses nothing: what was read stays buffered.
    pub(crate) async fn next_line(&mut self) -> Result<Option<&[u8]>, ReadError> {
        if std::mem::take(&mut self.handed) {
            self.line.clear();
            if self.line.capacity() > READ_BUFFER {
                self.line = Vec::new();
            }
        }
        loop {
            let buf = self.inner.fill_buf().await.map_err(ReadError::Io)?;
            if buf.is_empty() && self.line.is_empty() {
                return Ok(None);
            } else if buf.is_empty() {
                break;
            }
            let (n, newline) = memchr::memchr(b'\n', buf).map_or((buf.len(), false), |i| (i, true));
            // Even its newline would not fit.
            if self.line.len() + n >= self.limit {
                return Err(ReadError::TooLong);
            }
            self.line.extend_from_slice(&buf[..n]);
            Pin::new(&mut self.inner).consume(n + usize::from(newline));
            if newline {
                break;
            }
        }
        self.handed = true;
        Ok(Some(self.line.strip_suffix(b"\r").unwrap_or(&self.line)))
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Incoming {
    /// An answer: its id when it could be ours (a `u64`), what it says.
    Response {
        id: Option<u64>,
        outcome: Outcome,
    },
    /// A request to us: its id, echoed in our answer, and its method.
    Request {
        id: Box<RawValue>,
        method: String,
    },
    Notification,
    /// A JSON array: a batch, which 2025-06-18 removed.
    Batch,
    /// Not JSON, or JSON that is no JSON-RPC message (servers log to stdout).
    Junk,
}

/// What an answer says: its result as written; a JSON-RPC error; or what
/// makes it unreadable (after "the server's answer to this call").
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    Result(Box<RawValue>),
    Error(i64, String),
    Unreadable(String),
}

/// The members of a message this client reads (one given twice: unreadable).
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

/// A member that is there, `null` included.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

pub(crate) fn decode(line: &[u8]) -> Incoming {
    // JSON text is UTF-8 (RFC 8259).
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => return unreadable(line, format!("it is not UTF-8: {e}")),
    };
    if text.trim_ascii_start().starts_with('[') {
        let batch = serde_json::from_str::<IgnoredAny>(text);
        return batch.map_or(Incoming::Junk, |_| Incoming::Batch);
    }
    let message = match serde_json::from_str::<Envelope<'_>>(text) {
        Ok(message) => message,
        Err(_) if text.starts_with('\u{feff}') => {
            return unreadable(line, "it begins with a byte-order mark".into());
        }
        Err(e) => return unreadable(line, e.to_string()),
    };
    let version = message.jsonrpc.as_deref() == Some("2.0");
    let method = message
        .method
        .and_then(|m| serde_json::from_str::<String>(m.get()).ok());
    if let Some(method) = method {
        return match message
            .id
            .filter(|id| matches!(id.get().as_bytes()[0], b'"' | b'-' | b'0'..=b'9'))
        {
            _ if !version => Incoming::Junk,
            Some(id) => Incoming::Request {
                id: id.to_owned(),
                method,
            },
            None => Incoming::Notification,
        };
    }
    // With neither, no answer at all: a log line that has an `id`.
    if !version && message.result.is_none() && message.error.is_none() {
        return Incoming::Junk;
    }
    let id = message
        .id
        .and_then(|id| serde_json::from_str::<u64>(id.get()).ok());
    let outcome = match (message.result, message.error) {
        _ if !version => malformed("it is not JSON-RPC 2.0"),
        (Some(result), None) => Outcome::Result(result.to_owned()),
        (None, Some(error)) => error_object(error),
        (Some(_), Some(_)) => malformed("it holds both a result and an error"),
        (None, None) => malformed("it holds neither a result nor an error"),
    };
    Incoming::Response { id, outcome }
}

fn malformed(how: &str) -> Outcome {
    Outcome::Unreadable(format!("is not valid JSON-RPC: {how}"))
}

/// A line that cannot be read (`why`): read leniently, an answer under an
/// id fails its request at once; anything else is junk.
fn unreadable(line: &[u8], why: String) -> Incoming {
    let text = String::from_utf8_lossy(line);
    let text = text
        .trim_start_matches('\u{feff}')
        .replace(|c: char| c.is_control(), " ");
    let message = members(&text);
    let has = |key| message.contains_key(key);
    match message
        .get("id")
        .and_then(|id| serde_json::from_str(id.get()).ok())
    {
        Some(id) if !has("method") && (has("result") || has("error")) => {
            let outcome = Outcome::Unreadable(format!("cannot be read: {why}"));
            Incoming::Response {
                id: Some(id),
                outcome,
            }
        }
        _ => Incoming::Junk,
    }
}

/// The members of a JSON object, each kept as written (the last of two),
/// so that what one holds cannot make the others unreadable (a lone
/// surrogate, a number past any float, a deep nesting); none for what is
/// no object.
pub(crate) fn members(object: &str) -> HashMap<String, &RawValue> {
    serde_json::from_str(object).unwrap_or_default()
}

fn error_object(error: &RawValue) -> Outcome {
    let error: Value = serde_json::from_str(error.get()).unwrap_or(Value::Null);
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    match error.get("code").and_then(Value::as_i64) {
        Some(code) => Outcome::Error(code, message.to_owned()),
        None => malformed("its error has no integer code"),
    }
}

/// A request line: one JSON object and its newline (some SDKs end the
/// session on a blank line); `None`, never half a line, for bad `params`.
pub(crate) fn request<P: Serialize + ?Sized>(id: u64, method: &str, params: &P) -> Option<Vec<u8>> {
    let method = serde_json::to_string(method).ok()?;
    let mut line =
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":{method},"params":"#).into_bytes();
    serde_json::to_writer(&mut line, params).ok()?;
    line.extend_from_slice(b"}\n");
    Some(line)
}

pub(crate) fn notification(method: &str, params: Option<Value>) -> Vec<u8> {
    match params {
        Some(params) => line(&json!({"jsonrpc": "2.0", "method": method, "params": params})),
        None => line(&json!({"jsonrpc": "2.0", "method": method})),
    }
}

pub(crate) fn response(id: &RawValue, outcome: Result<Value, (i64, &str)>) -> Vec<u8> {
    match outcome {
        Ok(result) => line(&json!({"jsonrpc": "2.0", "id": id, "result": result})),
        Err((code, message)) => {
            let error = json!({"code": code, "message": message});
            line(&json!({"jsonrpc": "2.0", "id": id, "error": error}))
        }
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
        // A buffer of 4 bytes: lines arrive in pieces.
        let mut reader = LineReader::new(4, input, limit);
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
        let want: Vec<Result<Vec<u8>, String>> = vec![
            Ok(b"one".to_vec()),
            Ok(b"two".to_vec()),
            Ok(b"".to_vec()),
            Ok(b"three".to_vec()),
        ];
        assert_eq!(lines(b"one\r\ntwo\n\nthree", 100).await, want);
        let mut whole = LineReader::new(READ_BUFFER, &b"one\r\ntwo\n\nthree"[..], 100);
        for line in want {
            assert_eq!(
                whole.next_line().await.expect("read").map(<[u8]>::to_vec),
                line.ok()
            );
        }
        assert_eq!(whole.next_line().await.expect("read"), None);
    }

    #[tokio::test]
    async fn a_line_past_the_bound_is_refused_before_it_is_buffered() {
        let got = lines(b"12345678\n123456789\nnext\n", 9).await;
        assert_eq!(got, vec![Ok(b"12345678".to_vec()), Err("too long".into())]);
        let mut reader = LineReader::new(4, &b"0123456789abcdef"[..], 8);
        assert!(matches!(reader.next_line().await, Err(ReadError::TooLong)));
        assert!(reader.line.len() < 8, "gathered {}", reader.line.len());
    }

    /// A line many buffers long is whole; once it is consumed its memory is
    /// given back.
    #[tokio::test]
    async fn a_long_line_leaves_no_long_buffer_behind() {
        let long = vec![b'a'; 300 * 1024];
        let mut input = long.clone();
        input.extend_from_slice(b"\r\nshort\n");
        for _ in 0..2000 {
            input.extend_from_slice(b"0123456789abcdefghijklmnopqrstuvwxyz0123456789\n");
        }
        let mut reader = LineReader::new(READ_BUFFER, &input[..], 1 << 20);
        assert_eq!(reader.next_line().await.expect("read"), Some(&long[..]));
        assert!(reader.line.capacity() >= long.len());
        assert_eq!(reader.next_line().await.expect("read"), Some(&b"short"[..]));
        assert!(
            reader.line.capacity() < 1024,
            "the long line's memory is given back"
        );
        let mut n = 0;
        while let Some(line) = reader.next_line().await.expect("read") {
            assert_eq!(line.len(), 46);
            n += 1;
        }
        assert_eq!(n, 2000);
        assert!(
            reader.line.capacity() <= READ_BUFFER,
            "{}",
            reader.line.capacity()
        );
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
        use Outcome::{Error, Result};
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
            (r#"{"level":"info","msg":"hello"}"#, Incoming::Junk),
            (
                r#"{"level":"info","msg":"handling","id":2}"#,
                Incoming::Junk,
            ),
            (
                r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
                answer(1, malformed("it is not JSON-RPC 2.0")),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1}"#,
                answer(1, malformed("it holds neither a result nor an error")),
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
            (
                r#"{"jsonrpc":2.0,"id":1,"result":{}}"#,
                answer(
                    1,
                    unreadable(
                        "invalid type: floating point `2.0`, expected a string at line 1 column 14",
                    ),
                ),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1}}"#,
                answer(1, malformed("it holds both a result and an error")),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5}}"#,
                answer(1, malformed("its error has no integer code")),
            ),
            // A member given twice is no message; an answer, read as its
            // last, fails the request it names.
            (
                r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{}}"#,
                answer(2, unreadable("duplicate field `id` at line 1 column 28")),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"x","method":"y"}"#,
                Incoming::Junk,
            ),
            ("", Incoming::Junk),
            (
                r#"{"jsonrpc":"2\u002e0","id":4,"result":{}}"#,
                answer(4, Result(raw("{}"))),
            ),
            (
                r#"{"jsonrpc":null,"id":1,"result":{}}"#,
                answer(1, malformed("it is not JSON-RPC 2.0")),
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
        // JSON text is UTF-8, without a byte-order mark or a raw control
        // character: an answer that breaks it is still its request's, which
        // fails at once.
        let deep = format!(
            "\u{feff}{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}{}}}",
            "[".repeat(200),
            "]".repeat(200)
        );
        let bytes: [(&[u8], &str); 6] = [
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"x\":\"\xff\"}",
                "it is not UTF-8: invalid utf-8 sequence of 1 bytes from index 41",
            ),
            // What makes it unreadable, and in another member what a `Value`
            // cannot hold: still its request's.
            (
                br#"{"jsonrpc":"2.0","id":1,"result":{"t":"\ud800"},"result":{}}"#,
                "duplicate field `result` at line 1 column 56",
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"n\":1e400},\"x\":\"\xff\"}",
                "it is not UTF-8: invalid utf-8 sequence of 1 bytes from index 50",
            ),
            (deep.as_bytes(), "it begins with a byte-order mark"),
            (
                "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}".as_bytes(),
                "it begins with a byte-order mark",
            ),
            (
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"a\0b\"}}",
                "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 40",
            ),
        ];
        for (line, why) in bytes {
            let Incoming::Response {
                id: Some(1),
                outcome: Outcome::Unreadable(got),
            } = decode(line)
            else {
                panic!("{:?}", decode(line))
            };
            assert!(
                got.starts_with("cannot be read: ") && got.ends_with(why),
                "{got}"
            );
        }
        // Not an answer, or under no id: junk.
        for line in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}"[..],
            b"\xff\xfe",
            b"{\"id\":\"\xff\",\"result\":{}}",
        ] {
            assert_eq!(same(&decode(line)), same(&Incoming::Junk));
        }
    }

    fn unreadable(why: &str) -> Outcome {
        Outcome::Unreadable(format!("cannot be read: {why}"))
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
