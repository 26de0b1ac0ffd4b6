//! The server's stdout, watched by the runtime's event loop or not.
//!
//! A pipe in the event loop wakes whoever waits on the loop each time the
//! server writes to it, whether or not anyone then reads through the loop.
//! On a multi-thread runtime that is an idle worker, woken for every
//! answer: with the server on the caller's CPU, the worker's wake-up and
//! its hand-over to the caller's thread made a lone call cost twice the
//! floor's. A caller that reads its answer straight from the pipe can take
//! the pipe out of the loop first ([`Stdout::unwatch`]); it goes back in
//! ([`Stdout::watch`]) before anyone waits on it (`inbox.rs`).

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::unix::pipe::Receiver;
use tokio::runtime::Handle;

/// The server's stdout, non-blocking, in the event loop of the runtime the
/// connection was started on, or out of it.
#[derive(Debug)]
pub(crate) struct Stdout {
    /// `None` only while it moves in or out of the loop, or once moving it
    /// failed (every read then fails).
    pipe: Option<Pipe>,
    runtime: Handle,
}

#[derive(Debug)]
enum Pipe {
    Watched(Receiver),
    Unwatched(OwnedFd),
}

impl Stdout {
    /// The reading end of a pipe, made non-blocking and registered with the
    /// event loop of the current runtime, in tokio's pipe type, whose
    /// registration can be undone and redone (tokio's process type's
    /// cannot). Within a runtime.
    ///
    /// # Errors
    /// When the pipe cannot be made non-blocking or registered.
    pub(crate) fn new(fd: OwnedFd) -> io::Result<Stdout> {
        rustix::io::ioctl_fionbio(&fd, true)?;
        Ok(Stdout {
            pipe: Some(Pipe::Watched(Receiver::from_owned_fd_unchecked(fd)?)),
            runtime: Handle::current(),
        })
    }

    /// A duplicate of the pipe, for reads that do not wait, made around
    /// the event loop whether it watches the pipe or not (it is
    /// non-blocking, as the pipe: the two share the flag).
    ///
    /// # Errors
    /// When the descriptor cannot be duplicated, or the pipe was lost.
    pub(crate) fn duplicate(&self) -> io::Result<File> {
        let fd = match self.pipe.as_ref().ok_or_else(lost)? {
            Pipe::Watched(pipe) => pipe.as_fd().try_clone_to_owned()?,
            Pipe::Unwatched(fd) => fd.try_clone()?,
        };
        Ok(File::from(fd))
    }

    /// Whether the event loop watches the pipe.
    pub(crate) fn watched(&self) -> bool {
        matches!(self.pipe, Some(Pipe::Watched(_)))
    }

    /// Takes the pipe out of the event loop: a write to it wakes nobody,
    /// and whoever was registered to be woken by it is not. Until
    /// [`Stdout::watch`], only reads that do not wait may be made (on a
    /// [`Stdout::duplicate`]); a poll puts it back first.
    ///
    /// # Errors
    /// When it cannot be taken out; the pipe is then lost, and every read
    /// fails.
    pub(crate) fn unwatch(&mut self) -> io::Result<()> {
        match self.pipe.take() {
            Some(Pipe::Watched(pipe)) => {
                self.pipe = Some(Pipe::Unwatched(pipe.into_nonblocking_fd()?));
            }
            other => self.pipe = other,
        }
        self.pipe.as_ref().map(drop).ok_or_else(lost)
    }

    /// Puts the pipe back in the event loop, on the connection's runtime
    /// whatever thread this is. A write made while it was out is reported
    /// by the loop as soon as it is back: epoll reports a pipe that is
    /// readable when it is added.
    ///
    /// # Errors
    /// When it cannot be registered; the pipe is then lost, and every read
    /// fails.
    pub(crate) fn watch(&mut self) -> io::Result<()> {
        match self.pipe.take() {
            Some(Pipe::Unwatched(fd)) => {
                let _runtime = self.runtime.enter();
                self.pipe = Some(Pipe::Watched(Receiver::from_owned_fd_unchecked(fd)?));
            }
            other => self.pipe = other,
        }
        self.pipe.as_ref().map(drop).ok_or_else(lost)
    }
}

fn lost() -> io::Error {
    io::Error::other("the server's stdout was lost moving it in or out of the event loop")
}

impl AsyncRead for Stdout {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(Pipe::Watched(pipe)) = &mut self.pipe {
            return Pin::new(pipe).poll_read(cx, buf);
        }
        // Nobody waits on a pipe out of the loop, but should anyone poll it,
        // it goes back in rather than leave them waiting for good.
        self.watch()?;
        match &mut self.pipe {
            Some(Pipe::Watched(pipe)) => Pin::new(pipe).poll_read(cx, buf),
            _ => Poll::Ready(Err(lost())),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use rustix::pipe::{PipeFlags, pipe_with};
    use tokio::io::AsyncReadExt;

    use super::*;

    /// Moving the pipe in or out where it already is keeps it, and it reads
    /// what was written, in the loop or out of it, whichever way it went.
    #[tokio::test]
    async fn the_pipe_reads_in_and_out_of_the_event_loop_however_often_it_moves() {
        let (read, write) = pipe_with(PipeFlags::CLOEXEC).expect("a pipe");
        let mut write = File::from(write);
        let mut stdout = Stdout::new(read).expect("registered");
        let mut now = stdout.duplicate().expect("a duplicate");
        let mut buf = [0u8; 16];
        for round in 0..3u8 {
            stdout.watch().expect("in, again");
            assert!(stdout.watched());
            write.write_all(&[b'a' + round]).expect("written");
            let n = stdout.read(&mut buf).await.expect("read in the loop");
            assert_eq!(&buf[..n], &[b'a' + round]);

            stdout.unwatch().expect("out");
            stdout.unwatch().expect("out, again");
            assert!(!stdout.watched());
            write.write_all(b"x").expect("written");
            let n = std::io::Read::read(&mut now, &mut buf).expect("read out of the loop");
            assert_eq!(&buf[..n], b"x");
            // A read through the loop puts it back first.
            write.write_all(b"y").expect("written");
            let n = stdout.read(&mut buf).await.expect("read, back in");
            assert_eq!(&buf[..n], b"y");
            assert!(stdout.watched());
        }
    }
}
