//! Framing: one JSON-RPC 2.0 message per line, each line bounded in size.

use std::borrow::Cow;
use std::io;

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The longest line accepted from a server, newline included.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// One line from the server, classified.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Incoming {
    /// An answer to one of our requests.
    Response {
        /// The id as the server sent it.
        id: Value,
        /// The result, still as JSON text, or the JSON-RPC error
        /// `(code, message)`.
        outcome: Result<Raw, (i64, String)>,
    },
    /// A request from the server to us.
    Request {
        /// Its id, echoed in our answer.
        id: Value,
        /// Its method.
        method: String,
    },
    /// A notification from the server.
    Notification,
    /// A JSON array: a batch, which 2025-06-18 removed.
    Batch,
    /// Not JSON, or JSON that is not JSON-RPC 2.0 (servers log to stdout).
    Junk,
}

/// A result as the server wrote it: valid JSON, not yet parsed.
///
/// The reader only checks it is JSON and hands the text to the request that
/// waits for it, which parses it straight into the type it needs (a
/// `tools/call` result into typed structs): parsing it into a `Value` tree
/// first, and then taking that tree apart, cost more than the rest of a
/// call's work in the client.
#[derive(Debug, Clone)]
pub(crate) struct Raw(Box<RawValue>);

impl Raw {
    /// The JSON text.
    pub(crate) fn get(&self) -> &str {
        self.0.get()
    }

    /// The result as a `Value` tree, for the answers read that way
    /// (`initialize`, `tools/list`).
    pub(crate) fn to_value(&self) -> Value {
        // Valid JSON by construction, and serde_json parses any valid JSON
        // into a `Value` (its recursion limit was already met by the check).
        serde_json::from_str(self.get()).unwrap_or(Value::Null)
    }

    #[cfg(test)]
    pub(crate) fn of(json: &str) -> Raw {
        Raw(RawValue::from_string(json.to_owned()).expect("valid JSON"))
    }
}

impl PartialEq for Raw {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

/// Reads one line of at most `limit` bytes without buffering more than that.
///
/// The buffer lives as long as the reader, so a line that arrives in pieces
/// is never lost; `next_line` is meant for one reader task, not for `select!`.
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    inner: R,
    line: Vec<u8>,
    limit: usize,
}

/// Why no line could be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The pipe failed.
    Io(io::Error),
    /// A line grew past the bound before its newline came.
    TooLong,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub(crate) fn new(inner: R, limit: usize) -> Self {
        Self {
            inner,
            line: Vec::new(),
            limit,
        }
    }

    /// The longest line accepted.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// The next line without its `\n` (or `\r\n`), or `None` at end of file.
    /// A last line without a newline is still a line.
    pub(crate) async fn next_line(&mut self) -> Result<Option<&[u8]>, ReadError> {
        self.line.clear();
        // A huge earlier line must not pin its memory for the whole session.
        if self.line.capacity() > 1024 * 1024 {
            self.line.shrink_to(64 * 1024);
        }
        loop {
            let available = self.inner.fill_buf().await.map_err(ReadError::Io)?;
            if available.is_empty() {
                if self.line.is_empty() {
                    return Ok(None);
                }
                break;
            }
            let (take, done) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            if self.line.len() + take > self.limit {
                return Err(ReadError::TooLong);
            }
            self.line.extend_from_slice(&available[..take]);
            self.inner.consume(take);
            if done {
                break;
            }
        }
        let mut end = self.line.len();
        if self.line[..end].ends_with(b"\n") {
            end -= 1;
        }
        if self.line[..end].ends_with(b"\r") {
            end -= 1;
        }
        Ok(Some(&self.line[..end]))
    }
}

/// The members of a JSON-RPC message this client reads; others are skipped
/// unparsed. Reading into this, rather than into a `Value` of the whole
/// message and then taking members out of it, saves building and dropping
/// the message's top-level map on every answer.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    method: Option<Value>,
    #[serde(borrow, default, deserialize_with = "present_raw")]
    result: Option<&'a RawValue>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
}

/// A member that is present is `Some`, even when it is `null`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// The same, for a member kept as JSON text.
fn present_raw<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<&'a RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Classifies one line.
pub(crate) fn decode(line: &[u8]) -> Incoming {
    // Checked first: a derived struct would also read itself from an array.
    if line.trim_ascii_start().starts_with(b"[") {
        return match serde_json::from_slice::<IgnoredAny>(line) {
            Ok(_) => Incoming::Batch,
            Err(_) => Incoming::Junk,
        };
    }
    let Ok(message) = serde_json::from_slice::<Envelope<'_>>(line) else {
        return Incoming::Junk;
    };
    if message.jsonrpc.as_deref() != Some("2.0") {
        return Incoming::Junk;
    }
    let id = message.id.filter(|id| id.is_string() || id.is_number());
    if let Some(Value::String(method)) = message.method {
        return match id {
            Some(id) => Incoming::Request { id, method },
            None => Incoming::Notification,
        };
    }
    let id = id.unwrap_or(Value::Null);
    match (message.result, message.error) {
        (Some(result), None) => Incoming::Response {
            id,
            outcome: Ok(Raw(result.to_owned())),
        },
        (None, Some(Value::Object(err))) => match err.get("code").and_then(Value::as_i64) {
            Some(code) => Incoming::Response {
                id,
                outcome: Err((
                    code,
                    err.get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                )),
            },
            None => Incoming::Junk,
        },
        _ => Incoming::Junk,
    }
}

/// A request line. Every line we write is one non-empty JSON object and its
/// newline: some SDKs end the session on a blank line.
///
/// Written straight from `params`, without building a `Value` around it
/// first: on the path of every call, that tree and its drop cost more than
/// the rest of the line.
pub(crate) fn request<P: Serialize + ?Sized>(id: u64, method: &str, params: &P) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.to_string().as_bytes());
    out.extend_from_slice(b",\"method\":");
    // Serialising a string or a `Serialize` made of maps and strings cannot
    // fail, and compact JSON escapes every newline.
    let _ = serde_json::to_writer(&mut out, method);
    out.extend_from_slice(b",\"params\":");
    let _ = serde_json::to_writer(&mut out, params);
    out.extend_from_slice(b"}\n");
    out
}

/// A notification line.
pub(crate) fn notification(method: &str, params: Option<Value>) -> Vec<u8> {
    match params {
        Some(params) => line(&json!({"jsonrpc": "2.0", "method": method, "params": params})),
        None => line(&json!({"jsonrpc": "2.0", "method": method})),
    }
}

/// The answer to a server request: a result, or a JSON-RPC error.
pub(crate) fn response(id: Value, outcome: Result<Value, (i64, &str)>) -> Vec<u8> {
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
        assert!(reader.line.len() <= 8, "buffered {}", reader.line.len());
    }

    #[test]
    fn messages_are_classified() {
        let cases: Vec<(&str, Incoming)> = vec![
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"a":1},"extra":true}"#,
                Incoming::Response {
                    id: json!(1),
                    outcome: Ok(Raw::of(r#"{"a":1}"#)),
                },
            ),
            (
                r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"nope"}}"#,
                Incoming::Response {
                    id: json!("x"),
                    outcome: Err((-32601, "nope".into())),
                },
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
                Incoming::Request {
                    id: json!(7),
                    method: "ping".into(),
                },
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#,
                Incoming::Notification,
            ),
            (r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#, Incoming::Batch),
            ("starting server on stdio...", Incoming::Junk),
            (r#"{"level":"info","msg":"hello"}"#, Incoming::Junk),
            (r#"{"jsonrpc":"1.0","id":1,"result":{}}"#, Incoming::Junk),
            (r#"{"jsonrpc":"2.0","id":1}"#, Incoming::Junk),
            (r#""just a string""#, Incoming::Junk),
            (r#"["2.0", 1, "ping"]"#, Incoming::Batch),
            (r#"  [1, 2"#, Incoming::Junk),
            (
                r#"{"jsonrpc":"2.0","id":2,"result":null}"#,
                Incoming::Response {
                    id: json!(2),
                    outcome: Ok(Raw::of("null")),
                },
            ),
            (
                r#"{"method":5,"jsonrpc":"2.0","id":3,"result":[]}"#,
                Incoming::Response {
                    id: json!(3),
                    outcome: Ok(Raw::of("[]")),
                },
            ),
            (r#"{"jsonrpc":2.0,"id":1,"result":{}}"#, Incoming::Junk),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1}}"#,
                Incoming::Junk,
            ),
            ("", Incoming::Junk),
        ];
        for (line, want) in cases {
            assert_eq!(decode(line.as_bytes()), want, "{line}");
        }
    }

    #[test]
    fn a_request_line_is_the_json_rpc_object_of_its_parts() {
        let params = json!({"name": "echo", "arguments": {"text": "a \"quoted\"\nline"}});
        let l = request(u64::MAX, "tools/\"call", &params);
        let v: Value = serde_json::from_slice(&l).expect("json");
        assert_eq!(
            v,
            json!({"jsonrpc": "2.0", "id": u64::MAX, "method": "tools/\"call", "params": params})
        );
        assert_eq!(l.iter().filter(|&&b| b == b'\n').count(), 1);
    }

    #[test]
    fn written_lines_are_one_object_and_a_newline() {
        let l = request(3, "tools/call", &json!({"name": "a\nb"}));
        assert_eq!(l.iter().filter(|&&b| b == b'\n').count(), 1);
        assert!(l.ends_with(b"}\n"));
        let v: Value = serde_json::from_slice(&l).expect("json");
        assert_eq!(v["id"], 3);
        let n = notification("notifications/initialized", None);
        assert_eq!(
            n,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
        );
        let e = response(json!("s1"), Err((-32601, "method not found")));
        let v: Value = serde_json::from_slice(&e).expect("json");
        assert_eq!(v["id"], "s1");
        assert_eq!(v["error"]["code"], -32601);
    }
}
