//! Framing: one JSON-RPC 2.0 message per line, each line bounded in size.
//!
//! Its unit tests take it near 900 lines; the code is about 610.

use std::fmt;
use std::io;
use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use spear_capabilities::CallResult;
use tokio::io::{AsyncRead, ReadBuf};

use crate::{scan, wire};

/// The longest line accepted from a server, newline included.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// One line from the server, classified.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Incoming {
    /// An answer to one of our requests.
    Response {
        /// The id as the server sent it.
        id: Value,
        /// The result, or the JSON-RPC error `(code, message)`.
        outcome: Result<Body, (i64, String)>,
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

/// A result, as the reader hands it to the request that waits for it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Body {
    /// As the server wrote it ([`Raw`]).
    Text(Raw),
    /// A `tools/call` result, read from the line as it was decoded: its
    /// reader asked for that ([`decode_as`]), and it is the plain case that
    /// [`wire::call_result`] reads.
    Call(CallResult),
}

/// A result as the server wrote it: valid JSON, not yet parsed.
///
/// The reader only checks it is JSON and hands the text to the request that
/// waits for it, which parses it straight into the type it needs: parsing
/// it into a `Value` tree first, and then taking that tree apart, cost more
/// than the rest of a call's work in the client. A `tools/call` result is
/// read into its type on the way instead, where it is the plain case
/// ([`Body::Call`]).
#[derive(Debug, Clone)]
pub(crate) struct Raw(Box<str>);

impl Raw {
    /// `json`, which the caller checked is one JSON value, without
    /// whitespace around it.
    pub(crate) fn checked(json: &str) -> Raw {
        Raw(json.into())
    }

    /// The JSON text.
    pub(crate) fn get(&self) -> &str {
        &self.0
    }

    /// The result as a `Value` tree, for the answers read that way
    /// (`initialize`, `tools/list`).
    pub(crate) fn to_value(&self) -> Value {
        // Valid JSON by construction, its depth within serde_json's limit;
        // what a `Value` cannot hold (a lone surrogate escape, a number
        // past f64's range) reads as `null`, which no reader takes.
        serde_json::from_str(self.get()).unwrap_or(Value::Null)
    }

    #[cfg(test)]
    pub(crate) fn of(json: &str) -> Raw {
        Raw(RawValue::from_string(json.to_owned())
            .expect("valid JSON")
            .get()
            .into())
    }
}

impl PartialEq for Raw {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

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
/// is never lost. [`LineReader::poll_line`] is the core: whoever holds the
/// reader (the connection's reader task, or a caller reading for itself,
/// `inbox.rs`) polls it without awaiting across the hold.
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

    /// What it reads from.
    pub(crate) fn inner(&self) -> &R {
        &self.inner
    }

    /// What it reads from, to change.
    pub(crate) fn inner_mut(&mut self) -> &mut R {
        &mut self.inner
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

    /// The next line if it can be had without waiting: from the buffer, or
    /// from what `read_now` (a read that never blocks) gives at once.
    /// `None` for anything else (nothing there yet, end of file, an error,
    /// a line past the bound), which [`LineReader::poll_line`] then reports.
    pub(crate) fn line_now(
        &mut self,
        mut read_now: impl FnMut(&mut [u8]) -> io::Result<usize>,
    ) -> Option<Range<usize>> {
        loop {
            if let Some(line) = self.buffered() {
                return line.ok();
            }
            let room = self.room();
            match read_now(&mut self.buf[self.end..self.end + room]) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.filled(n, room),
            }
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

/// The members of a JSON-RPC message this client reads; others are skipped
/// unparsed. Reading into this, rather than into a `Value` of the whole
/// message and then taking members out of it, saves building and dropping
/// the message's top-level map on every answer.
#[derive(Default)]
struct Envelope<'a> {
    /// Whether `jsonrpc` is `"2.0"`; `None` when absent or `null`.
    jsonrpc: Option<bool>,
    /// A member that is present is `Some`, even when it is `null`.
    id: Option<Value>,
    method: Option<Value>,
    result: Option<Member<'a>>,
    error: Option<Value>,
}

/// The `result` member: as JSON text, or read as a `tools/call` result.
enum Member<'a> {
    Text(&'a RawValue),
    Call(CallResult),
}

/// Reads an [`Envelope`] from a JSON object (not an array, which a derived
/// struct would also take); a member given twice is an error, as derived.
/// With `is_call`, a `result` after an `id` that `is_call` names is read
/// as a `tools/call` result, and anything but the plain case is an error.
struct EnvelopeSeed<'c> {
    is_call: Option<&'c mut dyn FnMut(&Value) -> bool>,
    /// A result was read as a `tools/call` result.
    read_call: bool,
}

impl<'de> DeserializeSeed<'de> for &mut EnvelopeSeed<'_> {
    type Value = Envelope<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Envelope<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for &mut EnvelopeSeed<'_> {
    type Value = Envelope<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<'de>, A::Error> {
        let mut e = Envelope::default();
        let mut seen_jsonrpc = false;
        while let Some(field) = map.next_key::<Field>()? {
            let twice = match field {
                Field::Jsonrpc => std::mem::replace(&mut seen_jsonrpc, true),
                Field::Id => e.id.is_some(),
                Field::Method => e.method.is_some(),
                Field::Result => e.result.is_some(),
                Field::Error => e.error.is_some(),
                Field::Other => false,
            };
            if twice {
                return Err(de::Error::custom("a member given twice"));
            }
            match field {
                Field::Jsonrpc => {
                    e.jsonrpc = map.next_value::<Option<Version>>()?.map(|v| v.0);
                }
                Field::Id => e.id = Some(map.next_value()?),
                Field::Method => e.method = Some(map.next_value()?),
                Field::Error => e.error = Some(map.next_value()?),
                Field::Result => {
                    let call = match (&mut self.is_call, &e.id) {
                        (Some(is_call), Some(id)) => is_call(id),
                        _ => false,
                    };
                    e.result = Some(if call {
                        self.read_call = true;
                        Member::Call(map.next_value_seed(wire::CallSeed)?)
                    } else {
                        Member::Text(map.next_value()?)
                    });
                }
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(e)
    }
}

/// The members of a JSON-RPC message that [`Envelope`] reads.
enum Field {
    Jsonrpc,
    Id,
    Method,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Field, E> {
                Ok(match key {
                    "jsonrpc" => Field::Jsonrpc,
                    "id" => Field::Id,
                    "method" => Field::Method,
                    "result" => Field::Result,
                    "error" => Field::Error,
                    _ => Field::Other,
                })
            }
        }
        d.deserialize_identifier(FieldVisitor)
    }
}

/// Whether `jsonrpc` is the string `"2.0"`, read without keeping (or, for a
/// string with escapes, copying) the string.
struct Version(bool);

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Is20;
        impl Visitor<'_> for Is20 {
            type Value = Version;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Version, E> {
                Ok(Version(v == "2.0"))
            }
        }
        d.deserialize_str(Is20)
    }
}

/// Classifies one line.
pub(crate) fn decode(line: &[u8]) -> Incoming {
    decode_as(line, None, None)
}

/// Classifies one line; with `is_call`, the result of an answer whose id
/// `is_call` names (and which comes after its id, as most servers write
/// it) is read as a `tools/call` result on the way: one pass over the line
/// where the reader would check the result and the caller then read it
/// again. A result that is not the plain case is read as text after all
/// (the line is decoded again), so the two ways never disagree.
///
/// The plainest answers are read by hand (`scan.rs`), those laid out as
/// the last one kept in `shape` by comparing with it ([`scan::Shape`]); any
/// other line, and any the hand reader is not sure of, through serde_json.
pub(crate) fn decode_as(
    line: &[u8],
    mut is_call: Option<&mut dyn FnMut(&Value) -> bool>,
    shape: Option<&mut scan::Shape>,
) -> Incoming {
    // JSON text is UTF-8 (RFC 8259): checked once here, so that the parse
    // below checks no string again, nor the result it keeps as text.
    let Ok(line) = std::str::from_utf8(line) else {
        return Incoming::Junk;
    };
    if let Some(answer) = scan::answer(line, &mut is_call, shape) {
        return answer;
    }
    decode_json(line, is_call)
}

/// [`decode_as`] for a line that is UTF-8, read through serde_json alone:
/// the way that has the last word where `scan.rs` has none.
pub(crate) fn decode_json(line: &str, is_call: Option<&mut dyn FnMut(&Value) -> bool>) -> Incoming {
    if line.trim_ascii_start().starts_with('[') {
        return match serde_json::from_str::<IgnoredAny>(line) {
            Ok(_) => Incoming::Batch,
            Err(_) => Incoming::Junk,
        };
    }
    let mut seed = EnvelopeSeed {
        is_call,
        read_call: false,
    };
    let message = envelope(line, &mut seed).or_else(|| {
        // Not the plain case, or no message at all: the plain reading says.
        let plain = &mut EnvelopeSeed {
            is_call: None,
            read_call: false,
        };
        seed.read_call.then(|| envelope(line, plain)).flatten()
    });
    let Some(message) = message else {
        return Incoming::Junk;
    };
    if message.jsonrpc != Some(true) {
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
            outcome: Ok(match result {
                Member::Text(text) => Body::Text(Raw::checked(text.get())),
                Member::Call(result) => Body::Call(result),
            }),
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

/// The whole of `line` read as an [`Envelope`], or `None`.
fn envelope<'a>(line: &'a str, seed: &mut EnvelopeSeed<'_>) -> Option<Envelope<'a>> {
    let mut d = serde_json::Deserializer::from_str(line);
    let message = seed.deserialize(&mut d).ok()?;
    d.end().ok()?;
    Some(message)
}

/// Appends a request line to `out`. Every line we write is one non-empty
/// JSON object and its newline: some SDKs end the session on a blank line.
///
/// Written straight from `params`, without building a `Value` around it
/// first: on the path of every call, that tree and its drop cost more than
/// the rest of the line.
pub(crate) fn write_request<P: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    id: u64,
    method: &str,
    params: &P,
) {
    write_line(out, id, method, |out| {
        serde_json::to_writer(out, params).is_ok()
    });
}

/// Appends a `tools/call` request line to `out`: as [`write_request`]
/// would with `{"name": tool, "arguments": arguments}`, everything but the
/// id, the tool and the arguments written as it is rather than each string
/// checked for escapes on the way (about 150 instructions of a call's 800).
pub(crate) fn write_call(out: &mut Vec<u8>, id: u64, tool: &str, arguments: &Map<String, Value>) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
    out.extend_from_slice(b",\"method\":\"tools/call\",\"params\":{\"name\":");
    write_str(out, tool);
    out.extend_from_slice(b",\"arguments\":");
    write_object(out, arguments);
    out.extend_from_slice(b"}}\n");
}

/// Appends `value` as serde_json writes it (compact), each string through
/// [`write_str`]: about 90 instructions a call fewer than serde_json's
/// serializer took for the yardstick's arguments (callgrind).
fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // Writing a number cannot fail.
        Value::Number(n) => drop(serde_json::to_writer(&mut *out, n)),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(members) => write_object(out, members),
    }
}

/// [`write_value`] for an object.
fn write_object(out: &mut Vec<u8>, members: &Map<String, Value>) {
    out.push(b'{');
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, key);
        out.push(b':');
        write_value(out, value);
    }
    out.push(b'}');
}

/// The line of request `id` around the params that `params` appends (false
/// when it could not).
fn write_line(out: &mut Vec<u8>, id: u64, method: &str, params: impl FnOnce(&mut Vec<u8>) -> bool) {
    let from = out.len();
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
    out.extend_from_slice(b",\"method\":");
    write_str(out, method);
    out.extend_from_slice(b",\"params\":");
    if !params(out) {
        // Params made of maps with string keys cannot fail; a half line
        // must never reach the server, so none is written.
        out.truncate(from);
        return;
    }
    out.extend_from_slice(b"}\n");
}

/// Appends `s` as a JSON string: as it is when nothing in it needs an
/// escape (a quote, a backslash or a control character, newlines
/// included), else as serde_json escapes it.
fn write_str(out: &mut Vec<u8>, s: &str) {
    if crate::scan::is_plain(s.as_bytes()) {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // Serialising a string cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    }
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

    #[test]
    fn messages_are_classified() {
        let cases: Vec<(&str, Incoming)> = vec![
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"a":1},"extra":true}"#,
                Incoming::Response {
                    id: json!(1),
                    outcome: Ok(Body::Text(Raw::of(r#"{"a":1}"#))),
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
                    outcome: Ok(Body::Text(Raw::of("null"))),
                },
            ),
            (
                r#"{"method":5,"jsonrpc":"2.0","id":3,"result":[]}"#,
                Incoming::Response {
                    id: json!(3),
                    outcome: Ok(Body::Text(Raw::of("[]"))),
                },
            ),
            (r#"{"jsonrpc":2.0,"id":1,"result":{}}"#, Incoming::Junk),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1}}"#,
                Incoming::Junk,
            ),
            ("", Incoming::Junk),
            (
                r#"{"jsonrpc":"2\u002e0","id":4,"result":{}}"#,
                Incoming::Response {
                    id: json!(4),
                    outcome: Ok(Body::Text(Raw::of("{}"))),
                },
            ),
            (r#"{"jsonrpc":null,"id":1,"result":{}}"#, Incoming::Junk),
        ];
        for (line, want) in cases {
            assert_eq!(decode(line.as_bytes()), want, "{line}");
        }
        // JSON text is UTF-8: a line that is not is no message, wherever
        // the stray byte is.
        let stray = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"x\":\"\xff\"}";
        assert_eq!(decode(stray), Incoming::Junk);
    }

    /// A `tools/call` result that follows its id is read as one on the way;
    /// anything else as text, as without `is_call`.
    #[test]
    fn an_answer_to_a_call_is_read_as_one_where_it_can_be() {
        let mut asked = Vec::new();
        let mut decode_call = |line: &str| {
            let mut is_call = |id: &Value| {
                asked.push(id.clone());
                true
            };
            decode_as(line.as_bytes(), Some(&mut is_call), None)
        };
        let plain =
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}"#;
        assert_eq!(
            decode_call(plain),
            Incoming::Response {
                id: json!(7),
                outcome: Ok(Body::Call(CallResult::text("hi"))),
            }
        );
        // The result before the id (the TypeScript SDK's order), and one
        // that is not the plain case: as text, to be mapped by the caller.
        for (line, result) in [
            (
                r#"{"result":{"content":[]},"jsonrpc":"2.0","id":8}"#,
                r#"{"content":[]}"#,
            ),
            (
                r#"{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":5}]}}"#,
                r#"{"content":[{"type":"text","text":5}]}"#,
            ),
            (r#"{"jsonrpc":"2.0","id":10,"result":null}"#, "null"),
        ] {
            let want = decode(line.as_bytes());
            assert_eq!(decode_call(line), want, "{line}");
            let Incoming::Response { outcome, .. } = want else {
                panic!("{line}: not an answer");
            };
            assert_eq!(outcome, Ok(Body::Text(Raw::of(result))), "{line}");
        }
        // What is no answer stays what it is.
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}} trailing"#,
        ] {
            assert_eq!(decode_call(line), decode(line.as_bytes()), "{line}");
        }
        // Asked once by the hand reader and once more by serde_json where
        // the first leaves the line to it.
        asked.dedup();
        assert_eq!(asked[..4], [json!(7), json!(9), json!(10), json!(1)]);
    }

    /// A request line written into an outbox queue that holds a line already.
    fn request<P: Serialize + ?Sized>(id: u64, method: &str, params: &P) -> Vec<u8> {
        let mut queue = b"before\n".to_vec();
        write_request(&mut queue, id, method, params);
        assert_eq!(&queue[..7], b"before\n", "what was queued stays");
        queue.split_off(7)
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let cases = [
            "",
            "echo",
            "tools/call",
            "a \"quoted\" word",
            "back\\slash",
            "line\nbreak",
            "tab\t",
            "\u{1}\u{1f}",
            "\u{7f}",
            "é 😀 \u{2028}",
        ];
        for s in cases {
            let mut out = b"x".to_vec();
            write_str(&mut out, s);
            assert_eq!(out[1..], serde_json::to_vec(s).expect("a string"), "{s:?}");
        }
    }

    #[test]
    fn a_call_line_is_the_json_rpc_object_of_its_parts() {
        let args = json!({"text": "a \"quoted\"\nline", "n": [1, null, {"k": true}]});
        let Value::Object(arguments) = args.clone() else {
            panic!("an object");
        };
        for (tool, id) in [
            ("echo", 42),
            ("we\"ird\ntool", 0),
            ("t", 9),
            ("t", 10),
            ("t", u64::MAX),
        ] {
            let mut queue = b"before\n".to_vec();
            write_call(&mut queue, id, tool, &arguments);
            let line = queue.split_off(7);
            assert_eq!(queue, b"before\n", "what was queued stays");
            assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
            assert!(line.ends_with(b"}\n"));
            let v: Value = serde_json::from_slice(&line).expect("json");
            let params = json!({"name": tool, "arguments": args});
            assert_eq!(
                v,
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
            );
        }
    }

    #[test]
    fn arguments_are_written_as_serde_json_writes_them() {
        let cases = [
            json!({}),
            json!({"text": "hello, fixture"}),
            json!({"a \"key\"\n": "\u{1}\u{1f}\u{7f}é 😀", "long": "x".repeat(40)}),
            json!({"n": [0, -1, i64::MIN, u64::MAX, 1.5, -0.0, 1e300, 5e-324]}),
            json!({"nested": {"a": [[], {}, [null, true, false]], "b": {"c": {"d": "\\"}}}}),
            json!({"": "", "z": 1, "a": 2}),
        ];
        for case in cases {
            let Value::Object(arguments) = case else {
                panic!("an object");
            };
            let mut out = b"x".to_vec();
            write_object(&mut out, &arguments);
            let want = serde_json::to_vec(&arguments).expect("json");
            assert_eq!(
                String::from_utf8_lossy(&out[1..]),
                String::from_utf8_lossy(&want)
            );
        }
    }

    #[test]
    fn a_request_whose_params_cannot_be_written_writes_nothing() {
        let params = std::collections::BTreeMap::from([((1, 2), 3)]);
        assert_eq!(request(1, "x", &params), b"");
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
