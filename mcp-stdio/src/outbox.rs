//! The way to the server's stdin: one writer task owns the pipe and writes
//! the lines it is sent, in order. Sending is synchronous, so that a dropped
//! request's cancellation can be sent from `Drop`.
//!
//! What waits for the server is bounded ([`MAX_UNREAD`]): a server that does
//! not read its stdin (while it floods us with requests we must answer)
//! would otherwise make the queue grow without end.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::io::AsyncWriteExt;
use tokio::net::unix::pipe;
use tokio::sync::{Notify, mpsc};

/// The most bytes queued for a server's stdin; a line sent while nothing
/// waits is taken whatever its size. Past it the box breaks: what waits is
/// dropped, the pipe closed, and the connection fails.
pub const MAX_UNREAD: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone)]
pub(crate) struct Outbox {
    /// Lines for the writer task; `None`: close the pipe after them.
    lines: mpsc::UnboundedSender<Option<Vec<u8>>>,
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    unread: AtomicUsize,
    /// The writer let go of the pipe: what is sent is dropped.
    done: AtomicBool,
    /// Wakes a writer blocked on a full pipe when the box breaks.
    broke: Notify,
}

impl Outbox {
    pub(crate) fn start(stdin: pipe::Sender) -> Outbox {
        let (lines, queue) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared::default());
        tokio::spawn(write_lines(stdin, queue, Arc::clone(&shared)));
        Outbox { lines, shared }
    }

    /// Sends `line` after everything sent before it (dropped once the pipe
    /// is let go of); `false` when it would pass [`MAX_UNREAD`].
    pub(crate) fn send(&self, line: Vec<u8>) -> bool {
        let shared = &self.shared;
        if shared.done.load(Ordering::Relaxed) {
            return true;
        }
        let before = shared.unread.fetch_add(line.len(), Ordering::Relaxed);
        if before > 0 && before + line.len() > MAX_UNREAD {
            shared.done.store(true, Ordering::Relaxed);
            shared.broke.notify_one();
            return false;
        }
        let _ = self.lines.send(Some(line));
        true
    }

    /// Closes the server's stdin once everything sent is written.
    pub(crate) fn close(&self) {
        let _ = self.lines.send(None);
    }
}

/// The writer task, the pipe's only owner.
async fn write_lines(
    mut pipe: pipe::Sender,
    mut queue: mpsc::UnboundedReceiver<Option<Vec<u8>>>,
    shared: Arc<Shared>,
) {
    while let Some(Some(line)) = queue.recv().await {
        let written = tokio::select! {
            written = pipe.write_all(&line) => written.is_ok(),
            () = shared.broke.notified() => false,
        };
        shared.unread.fetch_sub(line.len(), Ordering::Relaxed);
        if !written || shared.done.load(Ordering::Relaxed) {
            break;
        }
    }
    shared.done.store(true, Ordering::Relaxed);
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
        let outbox = Outbox::start(sender(cat.stdin.take().expect("stdin")));
        let big = format!("{}\n", "x".repeat(1 << 20));
        assert!(outbox.send(b"first\n".to_vec()));
        assert!(outbox.send(big.clone().into_bytes()));
        assert!(outbox.send(b"behind\n".to_vec()));
        outbox.close();
        assert!(outbox.send(b"after close: dropped\n".to_vec()));
        let mut out = Vec::new();
        let mut stdout = cat.stdout.take().expect("stdout");
        // cat ends its output only when its stdin is closed.
        tokio::time::timeout(Duration::from_secs(10), stdout.read_to_end(&mut out))
            .await
            .expect("the pipe was closed")
            .expect("read");
        assert_eq!(out, format!("first\n{big}behind\n").into_bytes());
    }

    /// A reader that never reads: what waits stops at the bound, the box
    /// breaks, and later lines are dropped.
    #[tokio::test]
    async fn a_pipe_nobody_reads_breaks_the_box_at_the_bound() {
        let mut sleeper = spawn("sleep", &["30"]);
        let outbox = Outbox::start(sender(sleeper.stdin.take().expect("stdin")));
        let line = vec![b'x'; 1 << 20];
        let mut sent = 0usize;
        let broke = loop {
            match outbox.send(line.clone()) {
                true => sent += line.len(),
                false => break sent,
            }
            assert!(sent <= 2 * MAX_UNREAD, "never broke after {sent} bytes");
        };
        assert!(broke >= MAX_UNREAD, "broke after {broke} bytes");
        assert!(outbox.send(b"later\n".to_vec()));
        // The writer lets go of what was queued and of the pipe.
        tokio::time::timeout(Duration::from_secs(10), outbox.lines.closed())
            .await
            .expect("the writer ended");
    }
}
