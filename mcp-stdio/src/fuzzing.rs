//! The reader's code driven from bytes, for the fuzz target `mcp_stdout` and
//! its corpus replay: a server's whole stdout as one input.
//!
//! Not part of the client's API; public only so that the fuzz crate and the
//! replay test run exactly what the reader task runs.

use std::pin::pin;
use std::task::{Context, Poll, Waker};

use serde_json::Value;

use crate::codec::{Body, Incoming, LineReader, Raw, ReadError, decode, decode_as, decode_json};
use crate::scan::Shape;
use crate::tools::{self, Listing};
use crate::{content, scan, wire};

/// What [`read_stdout`] saw, line by line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StdoutSummary {
    /// Lines read before the end or the first line past the bound.
    pub lines: usize,
    /// Answers to requests.
    pub responses: usize,
    /// Requests from the server.
    pub requests: usize,
    /// Notifications.
    pub notifications: usize,
    /// Batches (a protocol fault).
    pub batches: usize,
    /// Lines that are not JSON-RPC.
    pub junk: usize,
    /// Tools a `tools/list`-shaped answer offered (read as tools).
    pub offered_tools: usize,
    /// Whether reading stopped at a line past the bound.
    pub too_long: bool,
}

/// Reads `input` as a server's stdout through the bounded line reader with
/// a buffer of `buffer` bytes (so that lines arrive in pieces), lines of at
/// most `limit` bytes; classifies every line; and maps every answer as the
/// client would (a `tools` array through the tool checks, anything else
/// through the call-result mapping).
///
/// # Panics
/// When an invariant breaks: a line longer than `limit` or holding a
/// newline, or the reader waiting on bytes that are all there. That is the
/// point of fuzzing it.
pub fn read_stdout(input: &[u8], buffer: usize, limit: usize) -> StdoutSummary {
    let reader = tokio::io::BufReader::with_capacity(buffer.max(1), input);
    let mut reader = LineReader::new(reader, limit);
    let mut summary = StdoutSummary::default();
    let mut cx = Context::from_waker(Waker::noop());
    let mut shape = Shape::default();
    loop {
        let next = {
            let fut = pin!(reader.next_line());
            match fut.poll(&mut cx) {
                Poll::Ready(r) => r.map(|l| l.map(<[u8]>::to_vec)),
                Poll::Pending => panic!("the reader waits on bytes that are all there"),
            }
        };
        let line = match next {
            Ok(Some(line)) => line,
            Ok(None) => return summary,
            Err(ReadError::TooLong) => {
                summary.too_long = true;
                return summary;
            }
            Err(ReadError::Io(e)) => panic!("reading a slice failed: {e}"),
        };
        assert!(line.len() <= limit, "a line of {} past {limit}", line.len());
        assert!(!line.contains(&b'\n'), "a line holds a newline");
        summary.lines += 1;
        let incoming = decode(&line);
        check_read_as_call(&line, &incoming, &mut shape);
        check_read_by_hand(&line);
        match incoming {
            Incoming::Response { outcome, .. } => {
                summary.responses += 1;
                if let Ok(Body::Text(result)) = outcome {
                    summary.offered_tools += map_answer(&result);
                }
            }
            Incoming::Request { .. } => summary.requests += 1,
            Incoming::Notification => summary.notifications += 1,
            Incoming::Batch => summary.batches += 1,
            Incoming::Junk => summary.junk += 1,
        }
    }
}

/// The `mcp_stdout` fuzz target: the first byte picks the read buffer (so
/// lines arrive in pieces), the second the line bound, the rest is stdout.
///
/// # Panics
/// As [`read_stdout`], and when a line goes unclassified.
pub fn fuzz_stdout(data: &[u8]) {
    let (buffer, limit, input) = match data {
        [b, l, rest @ ..] => (usize::from(*b % 64) + 1, usize::from(*l) * 16 + 1, rest),
        _ => (1, 1, data),
    };
    let s = read_stdout(input, buffer, limit);
    let kinds = s.responses + s.requests + s.notifications + s.batches + s.junk;
    assert_eq!(kinds, s.lines, "{s:?}");
}

/// Decodes `line` again, as the answer to a `tools/call` (as the client
/// does for its calls), and checks that agrees with `plain`, its reading as
/// text then mapped; and that reading it with the layout kept from the
/// lines before (`shape`, as the client does) agrees too.
///
/// # Panics
/// When two readings disagree.
fn check_read_as_call(line: &[u8], plain: &Incoming, shape: &mut Shape) {
    let as_call = decode_as(line, Some(&mut |_: &Value| true), None);
    let shaped = decode_as(line, Some(&mut |_: &Value| true), Some(shape));
    assert_eq!(
        shaped,
        as_call,
        "the reading by layout disagrees: {}",
        String::from_utf8_lossy(line)
    );
    match (&as_call, plain) {
        (
            Incoming::Response {
                id,
                outcome: Ok(Body::Call(result)),
            },
            Incoming::Response {
                id: plain_id,
                outcome: Ok(Body::Text(raw)),
            },
        ) => {
            assert_eq!(id, plain_id, "{}", raw.get());
            assert_eq!(
                content::call_result_raw(raw).as_ref(),
                Ok(result),
                "the result read on the way disagrees: {}",
                raw.get()
            );
        }
        _ => assert_eq!(&as_call, plain, "{}", String::from_utf8_lossy(line)),
    }
}

/// Where the hand reader (`scan.rs`) reads `line`, as the answer to a call
/// or not, checks that serde_json alone reads it the same.
///
/// # Panics
/// When the two disagree.
fn check_read_by_hand(line: &[u8]) {
    let Ok(line) = std::str::from_utf8(line) else {
        return;
    };
    for call in [false, true] {
        let mut named = |_: &Value| call;
        if let Some(fast) = scan::answer(line, &mut Some(&mut named), None) {
            let slow = decode_json(line, Some(&mut |_: &Value| call));
            assert_eq!(fast, slow, "the hand reading disagrees: {line}");
        }
    }
}

/// Maps an answer as the client would; returns the tools it offers.
///
/// # Panics
/// When the typed reading of a `tools/list` page or of a call result
/// disagrees with the `Value` one.
fn map_answer(raw: &Raw) -> usize {
    // Valid JSON that a `Value` cannot hold (a lone surrogate escape, a
    // number past f64's range) reads as `null` that way (`Raw::to_value`),
    // while the typed readings skip it where it stands in a member they
    // skip: there they may differ, and must only not panic.
    let parsed = serde_json::from_str::<Value>(raw.get());
    let holds = parsed.is_ok();
    let result = parsed.unwrap_or(Value::Null);
    // Every answer is also read as a page, both ways: they must agree.
    let (mut fast, mut slow) = (Listing::default(), Listing::default());
    let read = tools::read_page(raw.get(), &mut fast);
    let read_value = tools::read_page_value(result.clone(), &mut slow);
    if !holds {
        let _ = content::call_result_raw(raw);
        return 0;
    }
    assert_eq!(
        (&read, &fast),
        (&read_value, &slow),
        "the typed reading of the page {} disagrees",
        raw.get()
    );
    if let Some(Value::Array(offered)) = result.get("tools") {
        let kept = fast.offered().min(tools::MAX_TOOLS);
        let list = fast.finish();
        assert_eq!(offered.len(), slow.offered(), "a tool went uncounted");
        assert_eq!(
            list.tools.len() + list.rejected.len(),
            kept,
            "a tool went missing"
        );
        return list.tools.len();
    }
    let slow = content::call_result(result);
    let ways = [scan::call_result(raw.get()), wire::call_result(raw.get())];
    for fast in ways.into_iter().flatten() {
        assert_eq!(
            Ok(fast),
            slow,
            "the typed reading of {} disagrees",
            raw.get()
        );
    }
    assert_eq!(content::call_result_raw(raw), slow);
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stdout_of_every_kind_is_summarised() {
        let input = b"log line\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"a\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"b c\"}]}}\r\n\
{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n[1]\n\
{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"t\"}]}}\n0123456789";
        let s = read_stdout(input, 3, 400);
        let want = StdoutSummary {
            lines: 7,
            responses: 2,
            requests: 1,
            notifications: 1,
            batches: 1,
            junk: 2,
            offered_tools: 2,
            too_long: false,
        };
        assert_eq!(s, want);
        assert!(read_stdout(input, 3, 8).too_long);
        fuzz_stdout(b"\x05\x10{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
    }
}
