//! Where a trail file's chain stands: the position and link of its last
//! line, and what follows that line. A sink reads it when it opens a file,
//! and again, from where it left off, when another writer made the file
//! grow under it.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::chain::{Link, Linker};

/// How much of the file one read takes.
const CHUNK: usize = 64 * 1024;

/// The longest last line read whole for its `seq`; a longer one is hashed
/// as it streams by, and the lines before it counted.
const MAX_READ_LINE: u64 = 1024 * 1024;

/// The bytes after a file's last newline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Open {
    /// None: the file ends with a whole line (or is empty).
    Nothing,
    /// Spaces only: the start of a record whose writer stopped after its
    /// padding. The next record goes on from them, on the same line.
    Spaces,
    /// Anything else: a torn line, with its link. The next record begins
    /// on a line of its own; the fragment stays, and `verify` names it.
    Fragment(Link),
}

/// Where a file's chain stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Tail {
    /// The bytes accounted for: the file's size when it was read.
    pub(super) end: u64,
    /// The position of the last whole line, its `seq`; 0 when none.
    pub(super) lines: u64,
    /// The link of the last whole line; the genesis when none.
    pub(super) last: Link,
    /// Where the bytes after the last newline begin.
    pub(super) open_from: u64,
    /// What they are.
    pub(super) open: Open,
}

impl Tail {
    /// An empty file's.
    pub(super) const EMPTY: Tail = Tail {
        end: 0,
        lines: 0,
        last: Link::GENESIS,
        open_from: 0,
        open: Open::Nothing,
    };

    /// The tail of `file`, `size` bytes long, read from its end: the last
    /// line's `seq` gives the position when it has one (a record of this
    /// version), else the newlines are counted.
    pub(super) fn read(file: &File, size: u64, linker: &Linker) -> io::Result<Tail> {
        let Some(newline) = newline_before(file, size)? else {
            return Tail::EMPTY.grow(file, size, linker);
        };
        let start = newline_before(file, newline)?.map_or(0, |n| n + 1);
        if newline - start <= MAX_READ_LINE {
            let line = read_range(file, start, newline)?;
            if let Some(seq) = position(&line) {
                let whole = Tail {
                    end: newline + 1,
                    lines: seq,
                    last: linker.link(&line),
                    open_from: newline + 1,
                    open: Open::Nothing,
                };
                return whole.grow(file, size, linker);
            }
        }
        // Counted up to the last line, which is read from its start.
        let before = Tail {
            end: start,
            lines: count_newlines(file, start)?,
            last: Link::GENESIS,
            open_from: start,
            open: Open::Nothing,
        };
        before.grow(file, size, linker)
    }

    /// The tail once the file has grown to `size`: what was written after
    /// this tail's last newline is read and counted.
    pub(super) fn grow(&self, file: &File, size: u64, linker: &Linker) -> io::Result<Tail> {
        let mut tail = Tail {
            end: size,
            open: Open::Nothing,
            ..*self
        };
        let mut hasher = linker.start();
        let mut spaces = true;
        let mut at = self.open_from;
        let mut buf = vec![0; CHUNK];
        while at < size {
            let n = read_at(file, &mut buf, at, size)?;
            let mut from = 0;
            for newline in memchr::memchr_iter(b'\n', &buf[..n]) {
                hasher.update(&buf[from..newline]);
                tail.last = std::mem::replace(&mut hasher, linker.start()).finish();
                tail.lines += 1;
                tail.open_from = at + newline as u64 + 1;
                spaces = true;
                from = newline + 1;
            }
            hasher.update(&buf[from..n]);
            spaces &= buf[from..n].iter().all(|&b| b == b' ');
            at += n as u64;
        }
        if tail.open_from < size {
            tail.open = if spaces {
                Open::Spaces
            } else {
                Open::Fragment(hasher.finish())
            };
        }
        Ok(tail)
    }
}

/// The `seq` of a record's line, if it has one.
fn position(line: &[u8]) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Seq {
        seq: Option<u64>,
    }
    serde_json::from_slice::<Seq>(line).ok()?.seq
}

/// Reads from `at`, at most to `end`, into `buf`; at least one byte.
fn read_at(file: &File, buf: &mut [u8], at: u64, end: u64) -> io::Result<usize> {
    let want = buf
        .len()
        .min(usize::try_from(end - at).unwrap_or(usize::MAX));
    match file.read_at(&mut buf[..want], at)? {
        0 => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the audit file was cut while it was read",
        )),
        n => Ok(n),
    }
}

/// The bytes from `start` to `end`.
fn read_range(file: &File, start: u64, end: u64) -> io::Result<Vec<u8>> {
    let len = usize::try_from(end - start).map_err(io::Error::other)?;
    let mut line = vec![0; len];
    file.read_exact_at(&mut line, start)?;
    Ok(line)
}

/// The offset of the last newline before `end`, if any.
fn newline_before(file: &File, end: u64) -> io::Result<Option<u64>> {
    let mut buf = vec![0; CHUNK];
    let mut stop = end;
    while stop > 0 {
        let start = stop.saturating_sub(CHUNK as u64);
        let chunk = &mut buf[..(stop - start) as usize];
        file.read_exact_at(chunk, start)?;
        if let Some(i) = memchr::memrchr(b'\n', chunk) {
            return Ok(Some(start + i as u64));
        }
        stop = start;
    }
    Ok(None)
}

/// The newlines in the first `end` bytes.
fn count_newlines(file: &File, end: u64) -> io::Result<u64> {
    let (mut count, mut at) = (0, 0);
    let mut buf = vec![0; CHUNK];
    while at < end {
        let n = read_at(file, &mut buf, at, end)?;
        count += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        at += n as u64;
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn tail_of(bytes: &[u8]) -> Tail {
        let mut file = tempfile::tempfile().expect("tempfile");
        file.write_all(bytes).expect("write");
        Tail::read(&file, bytes.len() as u64, &Linker::Plain).expect("reads")
    }

    #[test]
    fn a_tail_knows_the_last_line_its_position_and_what_follows() {
        let plain = Linker::Plain;
        assert_eq!(tail_of(b""), Tail::EMPTY);
        let t = tail_of(b"{\"a\":1}\n{\"b\":2}\n");
        assert_eq!(
            (t.lines, t.last, t.open),
            (2, plain.link(b"{\"b\":2}"), Open::Nothing)
        );
        // A record of this version says its position: nothing is counted.
        let t = tail_of(b"x\n{\"seq\":41,\"prev\":\"00\"}\n");
        assert_eq!(t.lines, 41);
        let t = tail_of(b"{\"a\":1}\n    ");
        assert_eq!((t.lines, t.open, t.open_from), (1, Open::Spaces, 8));
        let t = tail_of(b"{\"a\":1}\n{\"b\"");
        assert_eq!(t.open, Open::Fragment(plain.link(b"{\"b\"")));
        let t = tail_of(b"{\"b\"");
        assert_eq!((t.lines, t.last), (0, Link::GENESIS));
        assert_eq!(t.open, Open::Fragment(plain.link(b"{\"b\"")));
    }

    #[test]
    fn a_tail_grows_with_what_another_writer_appended() {
        let mut file = tempfile::tempfile().expect("tempfile");
        file.write_all(b"{\"a\":1}\n  ").expect("write");
        let before = Tail::read(&file, 10, &Linker::Plain).expect("reads");
        let long = format!("{{\"b\":\"{}\"}}", "x".repeat(200_000));
        write!(file, "{long}\n{{\"c\":3}}\n").expect("write");
        let size = file.metadata().expect("meta").len();
        let after = before.grow(&file, size, &Linker::Plain).expect("grows");
        assert_eq!(
            after,
            Tail::read(&file, size, &Linker::Plain).expect("reads")
        );
        assert_eq!(after.lines, 3);
        assert_eq!(after.last, Linker::Plain.link(b"{\"c\":3}"));
    }
}
