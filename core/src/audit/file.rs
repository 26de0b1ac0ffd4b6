//! Where a [`super::JsonLinesSink`] writes: a trail file, or a stream.
//!
//! **A file** is one chain, whoever writes it. Each record is appended
//! under an advisory lock (`flock`), chained to the line before it in the
//! file: when the file grew under us (another process appends to it), its
//! tail is read again first. Nothing is ever cut off a trail: a record
//! that cannot be written leaves the file as it was.
//!
//! A record is one `write` of one whole line, and a `SIGKILL` never tears
//! it. Linux copies a buffered write into the page cache a page at a time
//! and stops between pages when the process is being killed, so a line
//! crossing a page boundary could be cut at it: a record that would cross
//! one begins at the next page instead, after spaces filling this one
//! (written first, in a write of their own; a record goes on from spaces
//! it finds at the end of the file). A record longer than a page is padded
//! with spaces to whole pages and written with `O_DIRECT`, which the kernel
//! does not stop part way; where the file system has no direct I/O it is
//! one buffered write. Spaces around a record are JSON whitespace, and
//! part of its line as the chain hashes it.
//!
//! A durable record (a WRITE's approval, a session's end) is synced with
//! `fdatasync`, and only once the path still names the file written: a
//! trail deleted or replaced under the sink is opened again at its path
//! (the new file's first record goes on from the lost one's chain, so that
//! `verify` shows the cut) and the record written there; a path that is no
//! longer a regular file fails the record.
//!
//! **A stream** (a pipe, a terminal, `/dev/null`, any other device, or a
//! `Write`): the chain begins at the genesis and records are written in
//! order; there is no lock, no path to check and nothing to sync.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, OFlags};

use super::AuditRecord;
use super::chain::{LineHasher, Link, Linker};
use super::tail::{Open, Tail};

/// The unit a record must not straddle: the smallest page Linux uses.
const PAGE: u64 = 4096;

/// How long a record waits for another writer's lock before it fails.
const LOCK_WAIT: Duration = Duration::from_secs(5);

/// How often a durable record opens its path again when it keeps being
/// removed or replaced under it.
const REOPENS: usize = 3;

/// Where records go.
pub(super) enum Out {
    File(FileTrail),
    Stream(StreamTrail),
}

impl Out {
    /// The trail at `path`: a regular file (created `0600` when it does
    /// not exist), or a stream when the path names anything else.
    pub(super) fn open(path: &Path, linker: &Linker) -> io::Result<Out> {
        match std::fs::metadata(path) {
            Ok(meta) if !meta.is_file() => {
                // A FIFO blocks here until it has a reader, as for any writer.
                let out = OpenOptions::new().append(true).open(path)?;
                Ok(Out::Stream(StreamTrail::new(Box::new(out))))
            }
            _ => FileTrail::open(path, linker).map(Out::File),
        }
    }

    /// Writes `record`, chained; with `durable`, synced where it can be.
    pub(super) fn append(
        &mut self,
        record: AuditRecord,
        linker: &Linker,
        durable: bool,
    ) -> io::Result<()> {
        match self {
            Out::File(file) if durable => file.append_durable(record, linker),
            Out::File(file) => file.append(record, linker),
            Out::Stream(stream) => stream.append(record, linker),
        }
    }
}

/// A trail file.
pub(super) struct FileTrail {
    path: PathBuf,
    file: File,
    /// The file's device and inode: what its path must still name.
    id: (u64, u64),
    tail: Tail,
}

impl FileTrail {
    fn open(path: &Path, linker: &Linker) -> io::Result<FileTrail> {
        let (file, id) = open_regular(path)?;
        let size = file.metadata()?.len();
        let tail = {
            let _lock = Lock::take(&file)?;
            Tail::read(&file, size, linker)?
        };
        Ok(FileTrail {
            path: path.to_owned(),
            file,
            id,
            tail,
        })
    }

    /// Appends `record` at the end of the file, chained to its last line.
    fn append(&mut self, mut record: AuditRecord, linker: &Linker) -> io::Result<()> {
        let _lock = Lock::take(&self.file)?;
        let size = end_of(&self.file)?;
        if size != self.tail.end {
            self.tail = if size > self.tail.end {
                self.tail.grow(&self.file, size, linker)?
            } else {
                Tail::read(&self.file, size, linker)?
            };
        }
        if let Open::Fragment(link) = self.tail.open {
            // Someone's torn line: it stays, as a line of its own.
            write_once(&self.file, b"\n")?;
            self.tail = Tail {
                end: size + 1,
                lines: self.tail.lines + 1,
                last: link,
                open_from: size + 1,
                open: Open::Nothing,
            };
        }
        record.seq = Some(self.tail.lines + 1);
        record.prev = Some(self.tail.last.hex());
        let mut line = Vec::with_capacity(1024);
        serde_json::to_writer(&mut line, &record).map_err(io::Error::other)?;
        line.push(b'\n');
        let pad = self.write_line(&mut line)?;
        // The line as the chain hashes it: the spaces before the record,
        // the record and the spaces padding it, without the newline.
        let mut hasher = linker.start();
        hash_spaces(&mut hasher, self.tail.end - self.tail.open_from + pad);
        hasher.update(&line[..line.len() - 1]);
        let end = self.tail.end + pad + line.len() as u64;
        self.tail = Tail {
            end,
            lines: self.tail.lines + 1,
            last: hasher.finish(),
            open_from: end,
            open: Open::Nothing,
        };
        Ok(())
    }

    /// Writes `line` (a record and its newline) so that a kill cannot tear
    /// it; returns how many spaces were written before it. A line longer
    /// than a page is padded with spaces before its newline.
    fn write_line(&self, line: &mut Vec<u8>) -> io::Result<u64> {
        let len = line.len() as u64;
        let room = PAGE - self.tail.end % PAGE;
        if len <= room {
            write_once(&self.file, line)?;
            return Ok(0);
        }
        // Spaces to the page boundary: a write within one page.
        let pad = if room == PAGE { 0 } else { room };
        if pad > 0 {
            write_once(&self.file, &vec![b' '; pad as usize])?;
        }
        if len <= PAGE {
            write_once(&self.file, line)?;
            return Ok(pad);
        }
        line.pop();
        line.resize(len.next_multiple_of(PAGE) as usize - 1, b' ');
        line.push(b'\n');
        // Its room reserved first: a full disk fails it before a byte.
        match rustix::fs::fallocate(
            &self.file,
            rustix::fs::FallocateFlags::KEEP_SIZE,
            self.tail.end + pad,
            line.len() as u64,
        ) {
            Ok(()) | Err(rustix::io::Errno::OPNOTSUPP) => {}
            Err(e) => return Err(e.into()),
        }
        write_direct(&self.file, line)?;
        Ok(pad)
    }

    /// Appends `record`, syncs the file, and makes sure the record is in
    /// the file the path names.
    fn append_durable(&mut self, record: AuditRecord, linker: &Linker) -> io::Result<()> {
        for _ in 0..REOPENS {
            if !self.at_path()? {
                self.reopen(linker)?;
            }
            self.append(record.clone(), linker)?;
            self.file.sync_data()?;
            if self.at_path()? {
                return Ok(());
            }
        }
        Err(io::Error::other(format!(
            "{} was removed or replaced {REOPENS} times while a record was written to it",
            self.path.display()
        )))
    }

    /// Whether the path still names the file written.
    fn at_path(&self) -> io::Result<bool> {
        match std::fs::metadata(&self.path) {
            Ok(meta) => Ok(meta.is_file() && (meta.dev(), meta.ino()) == self.id),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error()) => {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Opens the path again: the file there, or a new one that goes on
    /// from this chain (its first record shows the cut).
    fn reopen(&mut self, linker: &Linker) -> io::Result<()> {
        let (file, id) = open_regular(&self.path)?;
        let size = file.metadata()?.len();
        let tail = if size == 0 {
            Tail {
                end: 0,
                open_from: 0,
                open: Open::Nothing,
                ..self.tail
            }
        } else {
            let _lock = Lock::take(&file)?;
            Tail::read(&file, size, linker)?
        };
        tracing::warn!(
            target: "spear_capabilities::audit",
            path = %self.path.display(),
            "the audit file was removed or replaced: opened again at its path; what was written since went to the old file"
        );
        (self.file, self.id, self.tail) = (file, id, tail);
        Ok(())
    }
}

/// Opens the regular file at `path` to read and append, creating it
/// (`0600`) when there is none; anything else there is refused.
fn open_regular(path: &Path) -> io::Result<(File, (u64, u64))> {
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.is_file() {
            return Err(not_a_file(path));
        }
    }
    let file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_a_file(path));
    }
    Ok((file, (meta.dev(), meta.ino())))
}

fn not_a_file(path: &Path) -> io::Error {
    io::Error::other(format!(
        "{} is no longer a regular file: records cannot be written to it",
        path.display()
    ))
}

/// The size of `file`: where its end is (a seek, cheaper than a stat on
/// the path of every record).
fn end_of(file: &File) -> io::Result<u64> {
    Ok(rustix::fs::seek(file, rustix::fs::SeekFrom::End(0))?)
}

/// The trail's lock for one record, released on drop.
struct Lock<'a>(&'a File);

impl<'a> Lock<'a> {
    /// Takes the lock, waiting at most [`LOCK_WAIT`] for another writer.
    fn take(file: &'a File) -> io::Result<Lock<'a>> {
        let began = Instant::now();
        let mut pause = Duration::from_micros(100);
        loop {
            match rustix::fs::flock(file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => return Ok(Lock(file)),
                Err(rustix::io::Errno::WOULDBLOCK | rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
            if began.elapsed() >= LOCK_WAIT {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "another process held the audit file's lock for {} s",
                        LOCK_WAIT.as_secs()
                    ),
                ));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(10));
        }
    }
}

impl Drop for Lock<'_> {
    fn drop(&mut self) {
        let _ = rustix::fs::flock(self.0, FlockOperation::Unlock);
    }
}

/// One `write` of all of `bytes`, or an error.
fn write_once(mut file: &File, bytes: &[u8]) -> io::Result<()> {
    loop {
        match file.write(bytes) {
            Ok(n) if n == bytes.len() => return Ok(()),
            Ok(n) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    format!(
                        "the record was written in part ({n} of {} bytes)",
                        bytes.len()
                    ),
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Writes `line` (whole pages) with `O_DIRECT`, or as one buffered write
/// where the file system has no direct I/O.
fn write_direct(file: &File, line: &[u8]) -> io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(file)?;
    if rustix::fs::fcntl_setfl(file, flags | OFlags::DIRECT).is_err() {
        return write_once(file, line);
    }
    // Direct I/O reads from memory aligned to the page.
    let mut buf = vec![0u8; line.len() + PAGE as usize];
    let at = buf.as_ptr().align_offset(PAGE as usize);
    let aligned = &mut buf[at..at + line.len()];
    aligned.copy_from_slice(line);
    let written = write_once(file, aligned);
    let restored = rustix::fs::fcntl_setfl(file, flags);
    match written {
        // Refused before a byte: the file system takes no direct write here.
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::INVAL.raw_os_error()) => {
            restored?;
            write_once(file, line)
        }
        written => written.and(restored.map_err(io::Error::from)),
    }
}

fn hash_spaces(hasher: &mut LineHasher, mut n: u64) {
    const SPACES: [u8; PAGE as usize] = [b' '; PAGE as usize];
    while n > 0 {
        let take = n.min(PAGE);
        hasher.update(&SPACES[..take as usize]);
        n -= take;
    }
}

/// A stream of records: a pipe, a device, any `Write`.
pub(super) struct StreamTrail {
    out: Box<dyn Write + Send>,
    lines: u64,
    last: Link,
    /// The bytes of a record that was written in part: the next record
    /// begins on a line of its own, chained to them.
    fragment: Option<Vec<u8>>,
}

impl StreamTrail {
    pub(super) fn new(out: Box<dyn Write + Send>) -> Self {
        Self {
            out,
            lines: 0,
            last: Link::GENESIS,
            fragment: None,
        }
    }

    fn append(&mut self, mut record: AuditRecord, linker: &Linker) -> io::Result<()> {
        let (mut lines, mut last) = (self.lines, self.last);
        let mut line = Vec::new();
        if let Some(fragment) = &self.fragment {
            line.push(b'\n');
            last = linker.link(fragment);
            lines += 1;
        }
        let begins = line.len();
        record.seq = Some(lines + 1);
        record.prev = Some(last.hex());
        serde_json::to_writer(&mut line, &record).map_err(io::Error::other)?;
        line.push(b'\n');
        let mut sent = 0;
        let result = loop {
            match self.out.write(&line[sent..]) {
                Ok(0) => break Err(io::Error::from(io::ErrorKind::WriteZero)),
                Ok(n) if sent + n == line.len() => {
                    sent = line.len();
                    break self.out.flush();
                }
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        match result {
            // A flush that fails after every byte was written: the line may
            // be out, so the chain goes on from it; the record is not sure.
            Err(e) if sent == line.len() => {
                self.lines = lines + 1;
                self.last = linker.link(&line[begins..line.len() - 1]);
                self.fragment = None;
                Err(e)
            }
            Ok(()) => {
                self.lines = lines + 1;
                self.last = linker.link(&line[begins..line.len() - 1]);
                self.fragment = None;
                Ok(())
            }
            // Nothing went out.
            Err(e) if sent == 0 => Err(e),
            // What went out stays: the next record begins on a line of its own.
            Err(e) => {
                (self.lines, self.last) = (lines, last);
                self.fragment = (sent > begins).then(|| line[begins..sent].to_vec());
                Err(e)
            }
        }
    }
}
