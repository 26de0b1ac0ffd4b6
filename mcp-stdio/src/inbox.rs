//! The way from the server's stdout: read by the connection's reader task,
//! or by the caller of a lone call, waiting for its answer.
//!
//! A lone call paid for a hand-off: the reader task was woken by the pipe,
//! read the answer, handed it over and woke the caller. On a
//! current-thread runtime the runtime then polled its event loop once more
//! before polling the caller (a system call); on a multi-thread one the
//! reader task's poll and the hand-over came between the worker that saw the
//! pipe ready and the caller's thread. A caller that reads the pipe
//! itself needs none of that, which is what a hand-written async client
//! does. So a caller waiting for its answer may *lead*: it reads every line
//! there is, hands each to whom it is for, and keeps its own; while it
//! waits, the pipe wakes it, not the reader task.
//!
//! Someone must read the pipe at all times, also when no request is
//! pending: the server may leave, ask us something, or log. That is the
//! reader task, whenever no caller leads. The pipe wakes only the last one
//! who polled it, so the two never both wait on it; a leader that stops
//! waiting (answered, failed, or dropped) hands reading back to the reader
//! task by polling the pipe once more with the reader task's waker, as the
//! reader task itself would: it is not woken, so a call that follows
//! another costs no poll of it. How reading ended (end of file, a broken
//! pipe, a line past the bound, a message that breaks the protocol) is
//! reported by the reader task alone, whoever saw it, since reporting it
//! waits for the process (`client.rs`).
//!
//! On a runtime with other threads, a lone call leads from before its
//! write (`client.rs`): its write wakes the server, which on a busy CPU
//! runs and answers before the caller goes on, and the answer would then
//! wake the reader task (the last to poll the pipe), on a worker, to read
//! it and send it on.
//!
//! Before it waits at all, a caller whose request was just written may read
//! *now* ([`Inbox::read_now`]): a server on the same CPU has often answered
//! by the time the write returns, and a read straight from the pipe then
//! saves the wait on the event loop (an `epoll_wait` and a poll of the
//! runtime), which the event loop would only report after the fact. Such a
//! read goes around tokio's readiness and registers no waker, so whoever
//! waits on the pipe still does: at worst the event loop later reports
//! bytes that are gone, and the next read finds none. Lines it leaves in
//! the buffer came with a write the event loop still reports to whoever
//! waits (or has, to one not yet polled), who finds them there first.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsFd;
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::task::{Context, Poll, Waker};

use tokio::process::ChildStdout;

use crate::codec::{LineReader, ReadError};
use crate::error::Failure;
use crate::scan::Shape;

/// What the line handler made of one line.
#[derive(Debug)]
pub(crate) enum Flow<T> {
    /// Handled; read on.
    Go,
    /// The answer the reading caller waits for; read on.
    Mine(T),
    /// The line breaks the connection: stop reading.
    Stop(Failure),
}

/// How reading ended.
#[derive(Debug)]
pub(crate) enum End {
    /// The server closed its stdout.
    Closed,
    /// Reading failed.
    Io(std::io::Error),
    /// A line grew past the bound; the bound.
    TooLong(usize),
    /// A line broke the protocol.
    Broken(Failure),
}

/// The reading side of one connection.
#[derive(Debug)]
pub(crate) struct Inbox {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    lines: LineReader<ChildStdout>,
    /// The same pipe (a duplicate of its descriptor, non-blocking as the
    /// runtime made it), read around the runtime's readiness.
    now: File,
    /// The request whose caller reads, if one does; otherwise the reader
    /// task does.
    leader: Option<u64>,
    /// Wakes the reader task: reading is its turn again, or ended.
    reader_task: Option<Waker>,
    /// Reading ended; nobody reads any more.
    ended: bool,
    /// How, until the reader task takes it.
    end: Option<End>,
    /// The layout of the last plain call answer, handed with every line to
    /// whoever reads it.
    shape: Shape,
}

impl Inbox {
    /// # Errors
    /// When the pipe's descriptor cannot be duplicated.
    pub(crate) fn new(stdout: ChildStdout, max_line: usize) -> std::io::Result<Inbox> {
        let now = File::from(stdout.as_fd().try_clone_to_owned()?);
        Ok(Inbox {
            state: Mutex::new(State {
                lines: LineReader::new(stdout, max_line),
                now,
                leader: None,
                reader_task: None,
                ended: false,
                end: None,
                shape: Shape::default(),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// For the caller waiting for the answer to request `me`: reads every
    /// line there is now, handing each to `handle`, and returns what
    /// `handle` called `me`'s. Unless that came, `cx` is woken when more can
    /// be read (`me` leads) until [`Inbox::step_down`].
    pub(crate) fn lead<T>(
        &self,
        me: u64,
        cx: &mut Context<'_>,
        mut handle: impl FnMut(&[u8], &mut Shape) -> Flow<T>,
    ) -> Option<T> {
        let mut state = self.lock();
        if state.ended {
            return None;
        }
        state.leader = Some(me);
        let mine = state.pump(cx, &mut handle);
        if mine.is_some() || state.ended {
            let reader_task = state.hand_back(me, &mut handle);
            drop(state);
            if let Some(waker) = reader_task {
                waker.wake();
            }
        }
        mine
    }

    /// Reads what the pipe holds now, without waiting and without taking a
    /// turn at reading (see the module's doc), handing each line to
    /// `handle`; returns what `handle` called the reader's. Nothing when
    /// someone else is reading at this moment: they hand the lines out.
    pub(crate) fn read_now<T>(
        &self,
        mut handle: impl FnMut(&[u8], &mut Shape) -> Flow<T>,
    ) -> Option<T> {
        let mut state = match self.state.try_lock() {
            Ok(state) => state,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        let state = &mut *state;
        while !state.ended {
            let file = &state.now;
            let at = state.lines.line_now(|buf| (&*file).read(buf))?;
            match handle(state.lines.line(at), &mut state.shape) {
                Flow::Go => {}
                Flow::Mine(answer) => return Some(answer),
                Flow::Stop(failure) => {
                    state.ended = true;
                    state.end = Some(End::Broken(failure));
                    if let Some(waker) = &state.reader_task {
                        waker.wake_by_ref();
                    }
                }
            }
        }
        None
    }

    /// The caller of request `me` stops waiting: if it led, reading is the
    /// reader task's again. Lines read meanwhile go to `handle`.
    pub(crate) fn step_down<T>(
        &self,
        me: u64,
        mut handle: impl FnMut(&[u8], &mut Shape) -> Flow<T>,
    ) {
        let reader_task = self.lock().hand_back(me, &mut handle);
        if let Some(waker) = reader_task {
            waker.wake();
        }
    }

    /// The reader task's side: reads while no caller leads, handing every
    /// line to `handle`; ready with how reading ended.
    pub(crate) fn poll_reader_task<T>(
        &self,
        cx: &mut Context<'_>,
        mut handle: impl FnMut(&[u8], &mut Shape) -> Flow<T>,
    ) -> Poll<End> {
        let mut state = self.lock();
        match &state.reader_task {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => state.reader_task = Some(cx.waker().clone()),
        }
        if !state.ended && state.leader.is_none() {
            state.pump(cx, &mut handle);
        }
        match state.end.take() {
            Some(end) => Poll::Ready(end),
            None => Poll::Pending,
        }
    }
}

impl State {
    /// Reads and hands out lines until the reader's own answer comes (the
    /// lines after it are left for the hand-back), the pipe is empty (`cx`
    /// is then registered with it), or reading ends.
    fn pump<T>(
        &mut self,
        cx: &mut Context<'_>,
        handle: &mut impl FnMut(&[u8], &mut Shape) -> Flow<T>,
    ) -> Option<T> {
        loop {
            let end = match self.lines.poll_line(cx) {
                Poll::Pending => return None,
                Poll::Ready(Ok(Some(at))) => match handle(self.lines.line(at), &mut self.shape) {
                    Flow::Go => continue,
                    Flow::Mine(answer) => return Some(answer),
                    Flow::Stop(failure) => End::Broken(failure),
                },
                Poll::Ready(Ok(None)) => End::Closed,
                Poll::Ready(Err(ReadError::Io(e))) => End::Io(e),
                Poll::Ready(Err(ReadError::TooLong)) => End::TooLong(self.lines.limit()),
            };
            self.ended = true;
            self.end = Some(end);
            return None;
        }
    }

    /// If `me` leads, reading is the reader task's again: the pipe is
    /// polled with its waker, as its own poll would (a reader task not yet
    /// polled reads at its first poll). The waker to wake once the lock is
    /// let go, when reading ended and the reader task must report it.
    fn hand_back<T>(
        &mut self,
        me: u64,
        handle: &mut impl FnMut(&[u8], &mut Shape) -> Flow<T>,
    ) -> Option<Waker> {
        if self.leader != Some(me) {
            return None;
        }
        self.leader = None;
        let reader_task = self.reader_task.clone()?;
        if !self.ended {
            // Nothing here is `me`'s any more: its waiter is gone.
            let _ = self.pump(&mut Context::from_waker(&reader_task), handle);
        }
        self.ended.then_some(reader_task)
    }
}
