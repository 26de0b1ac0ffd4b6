//! The way to the server's stdin: one queue of bytes under one lock, and one
//! function that writes it (`Queue::write`), in order, never waiting. The
//! sender writes its line at once when nothing waits before it and the pipe
//! has room (a task woken for every line would cost each call a wake-up of
//! another thread); what the pipe has no room for waits in the queue, for a
//! task that waits for room. Sending never waits, so a dropped request's
//! cancellation can be sent from `Drop`.
//!
//! What waits for the server is bounded ([`MAX_UNREAD`]): a server that does
//! not read its stdin (while it floods us with requests we must answer)
//! would otherwise make the queue grow without end. A server that closes
//! its stdin can be sent nothing more: the box says so once.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::net::unix::pipe;
use tokio::sync::Notify;

/// The most bytes queued for a server's stdin; a line sent while nothing
/// waits is taken whatever its size. Past it the box breaks: what waits is
/// dropped, the pipe closed, and the connection fails.
pub const MAX_UNREAD: usize = 16 * 1024 * 1024;

/// The most memory an empty queue keeps for the next lines.
const KEPT: usize = 64 * 1024;

/// Dropping it closes the pipe once what was sent is written.
#[derive(Debug)]
pub(crate) struct Outbox(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    queue: Mutex<Queue>,
    /// Wakes the task: bytes wait for room, or the pipe was let go of.
    waiting: Notify,
}

#[derive(Debug, Default)]
struct Queue {
    /// `None` once let go of: what is sent then is dropped.
    pipe: Option<Arc<pipe::Sender>>,
    /// What the pipe has not taken yet, in order.
    unread: VecDeque<u8>,
    /// Close the pipe once `unread` is written.
    closing: bool,
    /// The server closed its end of the pipe.
    broken: bool,
}

impl Outbox {
    /// Writes to `stdin`; `broken` runs once, from the task, if the server
    /// closes its end.
    pub(crate) fn start(stdin: pipe::Sender, broken: impl FnOnce() + Send + 'static) -> Outbox {
        let shared = Arc::new(Shared::default());
        shared.lock().pipe = Some(Arc::new(stdin));
        tokio::spawn(wait_for_room(Arc::clone(&shared), broken));
        Outbox(shared)
    }

    /// Sends `line` after everything sent before it (dropped once the pipe
    /// is let go of); `false` when it would pass [`MAX_UNREAD`].
    pub(crate) fn send(&self, line: &[u8]) -> bool {
        let mut queue = self.0.lock();
        let waiting = queue.unread.len();
        if queue.pipe.is_none() || queue.closing {
            return true;
        }
        let fits = waiting == 0 || waiting + line.len() <= MAX_UNREAD;
        match fits {
            true => queue.unread.extend(line),
            false => queue.let_go(false),
        }
        // Behind other bytes, the line is the task's to write.
        let wake = waiting == 0 && !queue.write() || queue.pipe.is_none();
        self.0.wake_if(wake, queue);
        fits
    }

    /// Closes the server's stdin once everything sent is written.
    pub(crate) fn close(&self) {
        let mut queue = self.0.lock();
        queue.closing = true;
        self.0.wake_if(queue.write(), queue);
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        self.close();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The pipe, unless let go of, and whether bytes wait for it.
    fn pipe(&self) -> Option<(Arc<pipe::Sender>, bool)> {
        let queue = self.lock();
        Some((Arc::clone(queue.pipe.as_ref()?), !queue.unread.is_empty()))
    }

    /// Lets go of the lock, then wakes the task if `wake`.
    fn wake_if(&self, wake: bool, queue: MutexGuard<'_, Queue>) {
        drop(queue);
        if wake {
            self.waiting.notify_one();
        }
    }
}

impl Queue {
    /// Writes what waits, as far as the pipe takes it now; `false` when some
    /// of it waits for room.
    fn write(&mut self) -> bool {
        while let Some(pipe) = self.pipe.as_ref().filter(|_| !self.unread.is_empty()) {
            match pipe.try_write(self.unread.as_slices().0) {
                Ok(n) => drop(self.unread.drain(..n)),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
                // The server closed its stdin: nothing more reaches it.
                Err(_) => self.let_go(true),
            }
        }
        self.unread.shrink_to(KEPT);
        if self.closing {
            self.let_go(false);
        }
        true
    }

    /// Drops what waits and the pipe (closed once the task lets go too);
    /// `broken` when the server closed its end.
    fn let_go(&mut self, broken: bool) {
        (self.pipe, self.unread) = (None, VecDeque::new());
        self.broken |= broken;
    }
}

/// The task that writes what the pipe had no room for, once it has; it ends
/// when the pipe is let go of, calling `broken` if the server closed it.
async fn wait_for_room(shared: Arc<Shared>, broken: impl FnOnce()) {
    while let Some((pipe, waiting)) = shared.pipe() {
        let room = tokio::select! {
            room = pipe.writable(), if waiting => room.is_ok(),
            () = shared.waiting.notified() => true,
        };
        let mut queue = shared.lock();
        if !room {
            queue.let_go(true);
        }
        queue.write();
    }
    if shared.lock().broken {
        broken();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::process::Stdio;
    use std::sync::atomic::Ordering;
    use std::time::Duration;
    use tokio::io::AsyncReadExt;

    fn sender(stdin: tokio::process::ChildStdin) -> pipe::Sender {
        pipe::Sender::from_owned_fd(stdin.into_owned_fd().expect("fd")).expect("a pipe")
    }

    fn spawn(program: &str, args: &[&str]) -> tokio::process::Child {
        tokio::process::Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("runs")
    }

    /// A line larger than the pipe holds is written whole, in order after
    /// the lines sent before it; closing then closes the pipe only once all
    /// of it is written, and what is sent after is dropped.
    #[tokio::test]
    async fn close_writes_everything_sent_then_closes_the_pipe() {
        let mut cat = spawn("cat", &[]);
        let outbox = Outbox::start(sender(cat.stdin.take().expect("stdin")), || {});
        let big = format!("{}\n", "x".repeat(1 << 20));
        assert!(outbox.send(b"first\n"));
        assert!(outbox.send(big.as_bytes()));
        assert!(outbox.send(b"behind\n"));
        outbox.close();
        assert!(outbox.send(b"after close: dropped\n"));
        let mut out = Vec::new();
        let mut stdout = cat.stdout.take().expect("stdout");
        // cat ends its output only when its stdin is closed.
        tokio::time::timeout(Duration::from_secs(10), stdout.read_to_end(&mut out))
            .await
            .expect("the pipe was closed")
            .expect("read");
        assert_eq!(out, format!("first\n{big}behind\n").into_bytes());
    }

    /// A pipe whose readiness the runtime has seen (tokio writes only then).
    async fn ready_pipe() -> (pipe::Sender, pipe::Receiver) {
        let (stdin, server) = pipe::pipe().expect("a pipe");
        stdin.writable().await.expect("writable");
        (stdin, server)
    }

    /// A line sent while nothing waits is in the pipe when `send` returns
    /// (on one thread, before the task could run): no other thread is woken
    /// to write it.
    #[tokio::test(flavor = "current_thread")]
    async fn a_line_sent_while_nothing_waits_is_written_at_once() {
        let (stdin, server) = ready_pipe().await;
        let outbox = Outbox::start(stdin, || {});
        assert!(outbox.send(b"now\n"));
        let mut read = [0; 16];
        let n = rustix::io::read(&server, &mut read).expect("written at once");
        assert_eq!(&read[..n], b"now\n");
    }

    /// A server that closed its stdin: what is sent is dropped, the box
    /// says so (once), and the task ends.
    #[tokio::test]
    async fn a_closed_stdin_lets_the_pipe_go_says_so_and_ends_the_task() {
        let (stdin, server) = ready_pipe().await;
        let told = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = Arc::clone(&told);
        let outbox = Outbox::start(stdin, move || {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        drop(server);
        assert!(outbox.send(b"unread\n"));
        assert!(outbox.0.pipe().is_none());
        task_ends(&outbox).await;
        assert!(outbox.send(b"later\n"));
        assert_eq!(told.load(Ordering::SeqCst), 1);
    }

    /// A pipe that fills, then whose reader leaves: what waited is dropped
    /// and the box says so, from the task.
    #[tokio::test]
    async fn a_stdin_closed_while_lines_wait_says_so() {
        let (stdin, server) = ready_pipe().await;
        let (tell, told) = tokio::sync::oneshot::channel();
        let outbox = Outbox::start(stdin, move || {
            let _ = tell.send(());
        });
        let line = vec![b'x'; 1 << 20];
        assert!(outbox.send(&line));
        assert!(!outbox.0.lock().unread.is_empty(), "the pipe took 1 MiB");
        drop(server);
        tokio::time::timeout(Duration::from_secs(10), told)
            .await
            .expect("told in time")
            .expect("told");
        assert!(outbox.0.pipe().is_none());
    }

    async fn task_ends(outbox: &Outbox) {
        let ended = async {
            while Arc::strong_count(&outbox.0) > 1 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), ended)
            .await
            .expect("the task ended");
    }

    /// A reader that never reads: what waits stops at the bound, the box
    /// breaks, and later lines are dropped.
    #[tokio::test]
    async fn a_pipe_nobody_reads_breaks_the_box_at_the_bound() {
        let mut sleeper = spawn("sleep", &["30"]);
        let outbox = Outbox::start(sender(sleeper.stdin.take().expect("stdin")), || {});
        let line = vec![b'x'; 1 << 20];
        let mut sent = 0usize;
        let broke = loop {
            match outbox.send(&line) {
                true => sent += line.len(),
                false => break sent,
            }
            assert!(sent <= 2 * MAX_UNREAD, "never broke after {sent} bytes");
        };
        assert!(broke >= MAX_UNREAD, "broke after {broke} bytes");
        assert!(outbox.send(b"later\n"));
        // What was queued and the pipe are let go of, and the task ends.
        assert!(outbox.0.pipe().is_none());
        task_ends(&outbox).await;
    }
}
