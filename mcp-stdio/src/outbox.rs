//! The way to the server's stdin: lines in order, never interleaved, and
//! written by the sender itself when nothing is queued before them.
//!
//! A request sent while no other is in flight is written straight away,
//! without a hop to a writer task (that hop, a channel and a task poll, was
//! a tenth of a call's work in the client). Lines sent while others are in
//! flight are queued, and the request whose line started the queue writes
//! it all itself once the other callers of the moment have queued theirs
//! (it yields once first): many calls in flight share a system call, still
//! without the hop, which on a multi-thread runtime whose callers are not
//! on its worker is a thread switch (taking it out raised the throughput
//! at 8 in flight by a third there). Whatever a full pipe does not take waits in the queue for
//! a writer task, which empties it in as few writes as it can.
//!
//! What waits for the server is bounded ([`MAX_UNREAD`]): a server that
//! does not read its stdin (while it floods us with requests we must answer)
//! would otherwise make the queue grow without end. Passing the bound breaks
//! the box, drops what was queued, and the connection fails.

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::net::unix::pipe;
use tokio::process::ChildStdin;
use tokio::sync::Notify;

/// The most bytes queued for a server's stdin. A line sent while the queue
/// is empty is always taken whatever its size (one request's arguments may be
/// large); past this bound, a line sent behind others breaks the box.
pub const MAX_UNREAD: usize = 16 * 1024 * 1024;

/// The server left more than [`MAX_UNREAD`] bytes unread: the box is broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unread;

/// The most capacity an empty queue keeps for the next lines.
const KEPT: usize = 64 * 1024;

/// The sending side, shared by the connection, its reader and its sweeper.
#[derive(Debug, Clone)]
pub(crate) struct Outbox {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: Mutex<State>,
    /// Wakes the writer task: something is queued, or the box was closed.
    wake: Notify,
}

#[derive(Debug)]
struct State {
    /// `None` once closed or broken: what is sent then is dropped (the
    /// reader sees the server leave, or the sweeper times the request out).
    pipe: Option<Arc<pipe::Sender>>,
    /// Bytes the writer task must write before anything else.
    queue: Vec<u8>,
    /// Close the pipe once the queue is written.
    closing: bool,
    /// The queue was started by a deferred line whose sender owes the
    /// flush; the writer task was not woken for it.
    owed: bool,
}

impl Outbox {
    /// Takes the server's stdin and starts the writer task.
    ///
    /// # Errors
    /// When the pipe cannot be registered with the runtime.
    pub(crate) fn start(stdin: ChildStdin) -> io::Result<Outbox> {
        let pipe = pipe::Sender::from_owned_fd(stdin.into_owned_fd()?)?;
        let outbox = Outbox {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    pipe: Some(Arc::new(pipe)),
                    queue: Vec::new(),
                    closing: false,
                    owed: false,
                }),
                wake: Notify::new(),
            }),
        };
        tokio::spawn(write_queued(Arc::clone(&outbox.inner)));
        Ok(outbox)
    }

    /// Sends the line that `write` appends to the queue, after everything
    /// sent before it. It is written in place, at the queue's end (where it
    /// is written from when nothing waits before it), not built apart and
    /// copied in.
    ///
    /// With `deferred` (others are in flight, so more lines are likely to
    /// follow soon) the line is only queued, even when nothing waits before
    /// it; and when it starts the queue, the writer task is not woken: the
    /// sender owes a [`Outbox::flush`] (`Ok(true)`), which it makes after
    /// letting the other senders of the moment queue their lines behind it,
    /// so that one write carries them all without a hop to the writer task
    /// (on a multi-thread runtime, a thread switch). Deferred lines queued
    /// behind it wait for that flush too; a line sent without `deferred`
    /// wakes the writer task instead of waiting for it.
    ///
    /// # Errors
    /// [`Unread`] when the line would make the queue pass [`MAX_UNREAD`]:
    /// the queue is dropped and the pipe closed (later lines are dropped).
    pub(crate) fn send_with(
        &self,
        write: impl FnOnce(&mut Vec<u8>),
        deferred: bool,
    ) -> Result<bool, Unread> {
        let mut state = self.inner.lock();
        let state = &mut *state;
        let Some(pipe) = state.pipe.as_ref().filter(|_| !state.closing) else {
            return Ok(false);
        };
        let was_empty = state.queue.is_empty();
        write(&mut state.queue);
        if was_empty && !deferred {
            match pipe.try_write(&state.queue) {
                Ok(n) if n == state.queue.len() => {
                    state.queue.clear();
                    if state.queue.capacity() > KEPT {
                        // A long line must not pin its memory for the whole session.
                        state.queue = Vec::new();
                    }
                    return Ok(false);
                }
                Ok(n) => {
                    state.queue.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => {
                    state.pipe = None;
                    state.queue = Vec::new();
                    return Ok(false);
                }
            }
        } else if !was_empty && state.queue.len() > MAX_UNREAD {
            state.pipe = None;
            state.queue = Vec::new();
            self.inner.wake.notify_one();
            return Err(Unread);
        }
        if was_empty && deferred {
            state.owed = true;
            return Ok(true);
        }
        // A line that is no request (a cancellation, an answer to the
        // server) never waits on a sender's flush.
        if was_empty || (state.owed && !deferred) {
            self.inner.wake.notify_one();
        }
        Ok(false)
    }

    /// Writes what is queued as far as the pipe takes it now, and leaves the
    /// rest to the writer task: what a sender owes after [`Outbox::send_with`]
    /// returned `Ok(true)`, whether it still waits for its answer or not.
    pub(crate) fn flush(&self) {
        let mut state = self.inner.lock();
        state.owed = false;
        if state.queue.is_empty() {
            return;
        }
        if let Some(pipe) = state.pipe.as_ref() {
            match pipe.try_write(&state.queue) {
                Ok(n) if n == state.queue.len() => {
                    state.queue.clear();
                    if state.queue.capacity() > KEPT {
                        state.queue = Vec::new();
                    }
                    return;
                }
                Ok(n) => {
                    state.queue.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => {
                    state.pipe = None;
                    state.queue = Vec::new();
                    return;
                }
            }
        }
        drop(state);
        self.inner.wake.notify_one();
    }

    /// Closes the server's stdin once everything sent is written: the
    /// polite way to ask it to leave.
    pub(crate) fn close(&self) {
        self.inner.lock().closing = true;
        self.inner.wake.notify_one();
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The writer task: writes what is queued, as much at a time as the pipe
/// takes, waiting for the pipe to have room between writes.
async fn write_queued(inner: Arc<Inner>) {
    loop {
        let pipe = {
            let mut state = inner.lock();
            match &state.pipe {
                None => return,
                Some(_) if state.queue.is_empty() && state.closing => {
                    // Dropping the last handle closes the pipe.
                    state.pipe = None;
                    return;
                }
                Some(pipe) if !state.queue.is_empty() => Some(Arc::clone(pipe)),
                Some(_) => None,
            }
        };
        let Some(pipe) = pipe else {
            inner.wake.notified().await;
            continue;
        };
        if pipe.writable().await.is_err() {
            inner.lock().pipe = None;
            return;
        }
        let mut state = inner.lock();
        match pipe.try_write(&state.queue) {
            Ok(n) => {
                state.queue.drain(..n);
                if state.queue.is_empty() && state.queue.capacity() > KEPT {
                    state.queue = Vec::new();
                }
                // What a sender owed is written (or under way) here.
                state.owed = false;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => {
                state.pipe = None;
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Outbox {
        fn send(&self, line: &[u8], deferred: bool) -> Result<bool, Unread> {
            self.send_with(|queue| queue.extend_from_slice(line), deferred)
        }
    }
    use std::process::Stdio;
    use std::time::Duration;
    use tokio::io::AsyncReadExt;

    /// `cat`, with an outbox on its stdin.
    fn cat() -> (tokio::process::Child, Outbox) {
        let mut cat = tokio::process::Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("cat runs");
        let outbox = Outbox::start(cat.stdin.take().expect("stdin")).expect("a pipe");
        (cat, outbox)
    }

    /// A line larger than the pipe holds is queued in part; closing then
    /// closes the pipe only once all of it is written, in order, after the
    /// lines sent before it.
    #[tokio::test]
    async fn close_writes_everything_queued_then_closes_the_pipe() {
        let (mut cat, outbox) = cat();
        let big = format!("{}\n", "x".repeat(1 << 20));
        outbox.send(b"first\n", false).expect("room");
        outbox.send(big.as_bytes(), false).expect("room");
        outbox.send(b"queued behind\n", true).expect("room");
        outbox.close();
        outbox
            .send(b"after close: dropped\n", false)
            .expect("dropped");
        let mut out = Vec::new();
        let mut stdout = cat.stdout.take().expect("stdout");
        // cat ends its output only when its stdin is closed.
        tokio::time::timeout(Duration::from_secs(10), stdout.read_to_end(&mut out))
            .await
            .expect("the pipe was closed")
            .expect("read");
        assert_eq!(out, format!("first\n{big}queued behind\n").into_bytes());
    }

    /// Lines are written from the queue's end, so a long one grows the
    /// queue; once it is written, the queue gives that memory back.
    #[tokio::test]
    async fn a_long_line_leaves_no_long_queue_behind() {
        let (mut cat, outbox) = cat();
        let long = format!("{}\n", "x".repeat(1 << 20));
        outbox.send(long.as_bytes(), false).expect("room");
        assert!(
            outbox.inner.lock().queue.capacity() > KEPT,
            "queued in part"
        );
        let mut stdout = cat.stdout.take().expect("stdout");
        let mut out = vec![0u8; long.len()];
        tokio::time::timeout(Duration::from_secs(10), stdout.read_exact(&mut out))
            .await
            .expect("the writer task wrote it")
            .expect("read");
        assert_eq!(out, long.as_bytes());
        let queue = std::mem::take(&mut outbox.inner.lock().queue);
        assert!(
            queue.is_empty() && queue.capacity() <= KEPT,
            "{}",
            queue.capacity()
        );
    }

    /// Deferred lines wait for the flush their first sender owes, and go
    /// out in one write with it, in order; a line that is no request does
    /// not wait for that flush.
    #[tokio::test]
    async fn deferred_lines_wait_for_the_owed_flush_and_others_do_not() {
        let (mut cat, outbox) = cat();
        assert_eq!(outbox.send(b"one\n", true), Ok(true), "owes the flush");
        assert_eq!(outbox.send(b"two\n", true), Ok(false), "queued behind");
        // Nothing is written until the flush, even with time to spare.
        tokio::task::yield_now().await;
        assert_eq!(outbox.inner.lock().queue, b"one\ntwo\n");
        outbox.flush();
        assert!(outbox.inner.lock().queue.is_empty(), "written in one go");
        // A cancellation behind an owed flush wakes the writer task itself.
        assert_eq!(outbox.send(b"three\n", true), Ok(true));
        assert_eq!(outbox.send(b"cancel\n", false), Ok(false));
        let mut stdout = cat.stdout.take().expect("stdout");
        let mut out = [0u8; 64];
        let mut got = 0;
        while got < "one\ntwo\nthree\ncancel\n".len() {
            let n = tokio::time::timeout(Duration::from_secs(10), stdout.read(&mut out[got..]))
                .await
                .expect("the writer task wrote what was owed")
                .expect("read");
            assert!(n > 0, "cat ended early");
            got += n;
        }
        assert_eq!(&out[..got], b"one\ntwo\nthree\ncancel\n");
        assert!(!outbox.inner.lock().owed);
    }

    /// A reader that never reads: the queue stops at the bound, the box
    /// breaks and frees what it held, and later lines are dropped.
    #[tokio::test]
    async fn a_pipe_nobody_reads_breaks_the_box_at_the_bound() {
        let mut sleeper = tokio::process::Command::new("sleep")
            .arg("30")
            .stdin(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("sleep runs");
        let outbox = Outbox::start(sleeper.stdin.take().expect("stdin")).expect("a pipe");
        let line = vec![b'x'; 1 << 20];
        let mut sent = 0usize;
        let broke = loop {
            match outbox.send(&line, false) {
                Ok(_) => sent += line.len(),
                Err(Unread) => break sent,
            }
            assert!(sent <= 2 * MAX_UNREAD, "never broke after {sent} bytes");
        };
        assert!(broke >= MAX_UNREAD, "broke after {broke} bytes");
        assert!(
            outbox.inner.lock().queue.capacity() == 0,
            "the queue was freed"
        );
        assert_eq!(outbox.send(b"later\n", false), Ok(false));
        assert!(outbox.inner.lock().pipe.is_none());
    }
}
