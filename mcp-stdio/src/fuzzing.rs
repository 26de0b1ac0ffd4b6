//! The reader's code driven from bytes, for the fuzz target `mcp_stdout` and
//! its corpus replay: a robustness test of the one path each message takes.
//! Public only so that the fuzz crate can run it; not part of the API.

use std::pin::pin;
use std::task::{Context, Poll, Waker};

use crate::codec::{Incoming, LineReader, Outcome, ReadError, decode};
use crate::content;
use crate::tools::{self, Listing};

/// The `mcp_stdout` fuzz target: the first byte picks the read buffer, the
/// second the line bound, the rest is a server's stdout, read, classified
/// and mapped as the client would; how many lines were read.
///
/// # Panics
/// When an invariant breaks (a line past the bound or holding a newline,
/// the reader waiting on bytes that are there, a listing losing a tool).
pub fn fuzz_stdout(data: &[u8]) -> usize {
    let (buffer, limit, input) = match data {
        [b, l, rest @ ..] => (usize::from(*b % 64) + 1, usize::from(*l) * 16 + 1, rest),
        _ => (1, 1, data),
    };
    let mut reader = LineReader::new(buffer, input, limit);
    let mut cx = Context::from_waker(Waker::noop());
    let mut lines = 0;
    loop {
        let line = match pin!(reader.next_line()).poll(&mut cx) {
            Poll::Ready(Ok(Some(line))) => line.to_vec(),
            Poll::Ready(Ok(None) | Err(ReadError::TooLong)) => return lines,
            Poll::Ready(Err(ReadError::Io(e))) => panic!("reading a slice failed: {e}"),
            Poll::Pending => panic!("the reader waits on bytes that are all there"),
        };
        assert!(line.len() <= limit, "a line of {} past {limit}", line.len());
        assert!(!line.contains(&b'\n'), "a line holds a newline");
        lines += 1;
        let Incoming::Response { outcome, .. } = decode(&line) else {
            continue;
        };
        let Outcome::Result(raw) = outcome else {
            continue;
        };
        let _ = content::call_result(&raw);
        let mut page = Listing::default();
        if tools::read_page(raw.get(), &mut page).is_ok() {
            let read = page.list.tools.len() + page.list.rejected.len();
            let kept = page.offered.min(tools::MAX_TOOLS);
            assert_eq!(read, kept, "a tool went missing");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stdout_of_every_kind_is_read_to_its_end() {
        let input = b"\x03\x19log line\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"a\",\"inputSchema\":{\"type\":\"object\"}},{\"name\":\"b c\"}]}}\r\n\
{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n[1]\n\
{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"t\"}]}}\n0123456789";
        assert_eq!(fuzz_stdout(input), 7);
        // A bound of 17 bytes stops at the first line past it.
        assert_eq!(
            fuzz_stdout(&[b"\x03\x01".as_slice(), &input[2..]].concat()),
            1
        );
    }
}
