//! The way to the server's stdin: lines in order, never interleaved,
//! written by the sender itself when nothing is queued before them, else by
//! a writer task as the pipe takes them.
//!
//! What waits for the server is bounded ([`MAX_UNREAD`]): a server that
//! does not read its stdin (while it floods us with requests we must answer)
//! would otherwise make the queue grow without end. Passing the bound breaks
//! the box, drops what was queued, and the connection fails.

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::net::unix::pipe;
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

/// The sending side, shared by the connection and its reader.
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
    /// reader sees the server leave, or the request times out).
    pipe: Option<Arc<pipe::Sender>>,
    /// Bytes the writer task must write before anything else.
    queue: Vec<u8>,
    /// Close the pipe once the queue is written.
    closing: bool,
}

impl Outbox {
    /// Takes the server's stdin and starts the writer task.
    pub(crate) fn start(stdin: pipe::Sender) -> Outbox {
        let outbox = Outbox {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    pipe: Some(Arc::new(stdin)),
                    queue: Vec::new(),
                    closing: false,
                }),
                wake: Notify::new(),
            }),
        };
        tokio::spawn(write_queued(Arc::clone(&outbox.inner)));
        outbox
    }

    /// Sends `line` after everything sent before it: written at once when
    /// nothing waits before it and the pipe has room, else queued for the
    /// writer task.
    ///
    /// # Errors
    /// [`Unread`] when the line would make the queue pass [`MAX_UNREAD`]:
    /// the queue is dropped and the pipe closed (later lines are dropped).
    pub(crate) fn send(&self, line: &[u8]) -> Result<(), Unread> {
        let mut state = self.inner.lock();
        let state = &mut *state;
        let Some(pipe) = state.pipe.as_ref().filter(|_| !state.closing) else {
            return Ok(());
        };
        if !state.queue.is_empty() {
            if state.queue.len() + line.len() > MAX_UNREAD {
                state.pipe = None;
                state.queue = Vec::new();
                self.inner.wake.notify_one();
                return Err(Unread);
            }
            // The writer task was woken when the queue began.
            state.queue.extend_from_slice(line);
            return Ok(());
        }
        let written = match pipe.try_write(line) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            Err(_) => {
                state.pipe = None;
                return Ok(());
            }
        };
        if written < line.len() {
            state.queue.extend_from_slice(&line[written..]);
            self.inner.wake.notify_one();
        }
        Ok(())
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
                    // A long line must not pin its memory for the whole session.
                    state.queue = Vec::new();
                }
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

    use std::process::Stdio;
    use std::time::Duration;
    use tokio::io::AsyncReadExt;

    fn sender(stdin: tokio::process::ChildStdin) -> pipe::Sender {
        pipe::Sender::from_owned_fd(stdin.into_owned_fd().expect("fd")).expect("a pipe")
    }

    /// `cat`, with an outbox on its stdin.
    fn cat() -> (tokio::process::Child, Outbox) {
        let mut cat = tokio::process::Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("cat runs");
        let outbox = Outbox::start(sender(cat.stdin.take().expect("stdin")));
        (cat, outbox)
    }

    /// A line larger than the pipe holds is queued in part; closing then
    /// closes the pipe only once all of it is written, in order, after the
    /// lines sent before it.
    #[tokio::test]
    async fn close_writes_everything_queued_then_closes_the_pipe() {
        let (mut cat, outbox) = cat();
        let big = format!("{}\n", "x".repeat(1 << 20));
        outbox.send(b"first\n").expect("room");
        outbox.send(big.as_bytes()).expect("room");
        outbox.send(b"queued behind\n").expect("room");
        outbox.close();
        outbox.send(b"after close: dropped\n").expect("dropped");
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
        outbox.send(long.as_bytes()).expect("room");
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
        let outbox = Outbox::start(sender(sleeper.stdin.take().expect("stdin")));
        let line = vec![b'x'; 1 << 20];
        let mut sent = 0usize;
        let broke = loop {
            match outbox.send(&line) {
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
        assert_eq!(outbox.send(b"later\n"), Ok(()));
        assert!(outbox.inner.lock().pipe.is_none());
    }
}
