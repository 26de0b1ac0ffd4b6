//! The reader's code driven from bytes, for the fuzz target `mcp_stdout` and
//! its corpus replay: a server's whole stdout as one input.
//!
//! Not part of the client's API; public only so that the fuzz crate and the
//! replay test run exactly what the reader task and the callers run: a
//! robustness test of the one path each message takes.

use std::pin::pin;
use std::task::{Context, Poll, Waker};

use serde_json::Value;
use serde_json::value::RawValue;

use crate::codec::{Incoming, LineReader, Outcome, ReadError, decode};
use crate::content;
use crate::tools::{self, Listing};

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
/// most `limit` bytes; classifies every line; and reads every result as the
/// client would (as a `tools/list` page, and as a call result).
///
/// # Panics
/// When an invariant breaks: a line longer than `limit` or holding a
/// newline, the reader waiting on bytes that are all there, or a listing
/// that loses a tool. That is the point of fuzzing it.
pub fn read_stdout(input: &[u8], buffer: usize, limit: usize) -> StdoutSummary {
    let reader = tokio::io::BufReader::with_capacity(buffer.max(1), input);
    let mut reader = LineReader::new(reader, limit);
    let mut summary = StdoutSummary::default();
    let mut cx = Context::from_waker(Waker::noop());
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
        match decode(&line) {
            Incoming::Response {
                outcome: Outcome::Malformed(_),
                ..
            }
            | Incoming::Junk => summary.junk += 1,
            Incoming::Response { outcome, .. } => {
                summary.responses += 1;
                if let Outcome::Result(result) = outcome {
                    summary.offered_tools += map_answer(&result);
                }
            }
            Incoming::Request { .. } => summary.requests += 1,
            Incoming::Notification => summary.notifications += 1,
            Incoming::Batch => summary.batches += 1,
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

/// Reads a result as a page and as a call result, as the client would;
/// returns the tools it offers.
///
/// # Panics
/// When a page's tools go uncounted or missing.
fn map_answer(raw: &RawValue) -> usize {
    let _ = content::call_result(raw);
    let mut listing = Listing::default();
    let read = tools::read_page(raw.get(), &mut listing);
    let Ok(Value::Object(page)) = serde_json::from_str::<Value>(raw.get()) else {
        return 0;
    };
    match (read, page.get("tools")) {
        (Ok(_), Some(Value::Array(offered))) => {
            assert!(
                listing.offered() >= offered.len().min(1),
                "a tool went uncounted"
            );
            let kept = listing.offered().min(tools::MAX_TOOLS);
            let list = listing.finish();
            assert_eq!(
                list.tools.len() + list.rejected.len(),
                kept,
                "a tool went missing"
            );
            list.tools.len()
        }
        _ => 0,
    }
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
