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
//! reader task, whenever no caller leads (while the pipe is out of the
//! event loop, below: within twice [`IDLE`]). The pipe wakes only the last one
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
//! On a runtime with other threads, one caller's lone calls in a row may
//! take the pipe out of the event loop ([`Inbox::unwatch`]), so that the
//! server's answer wakes no worker, and read their answers straight from it
//! once the server had the CPU (`client.rs`). The reader task then waits on
//! a clock, not on the pipe, and puts the pipe back once no lone call has
//! read it for [`IDLE`]; whoever waits on the pipe first puts it back.
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
use std::future::Future;
use std::io::Read;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use crate::codec::{LineReader, ReadError};
use crate::error::Failure;
use crate::scan::Shape;
use crate::stdout::Stdout;

/// How long the pipe stays out of the event loop with no lone call reading
/// it ([`Inbox::unwatch`]), at least; at most twice that. Meanwhile what the
/// server says unasked (a log line, a request, its end) waits for the next
/// read.
const IDLE: Duration = Duration::from_millis(1);

/// The most lines one read at once ([`Inbox::read_now`]) hands out. It
/// reads on the caller's thread, around the runtime's budget: a server
/// that writes without end (on another CPU, faster than we read) would
/// otherwise keep the caller there for good. The rest is the reader
/// task's, which the runtime's budget bounds.
const MOST_LINES_NOW: usize = 1024;

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
    /// The pipe is out of the event loop; whoever waits puts it back first.
    unwatched: AtomicBool,
    /// A lone call is between its write and its read out of the event loop
    /// ([`Inbox::reading_out`]).
    reading: AtomicBool,
}

/// A lone call reads out of the event loop while this lives.
#[derive(Debug)]
pub(crate) struct ReadingOut<'a>(&'a AtomicBool);

impl Drop for ReadingOut<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

#[derive(Debug)]
struct State {
    lines: LineReader<Stdout>,
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
    /// A lone call read the pipe out of the event loop since the reader
    /// task last looked.
    busy: bool,
    /// The reader task's clock while the pipe is out of the event loop.
    idle: Option<Pin<Box<Sleep>>>,
}

impl Inbox {
    /// # Errors
    /// When the pipe's descriptor cannot be duplicated.
    pub(crate) fn new(stdout: Stdout, max_line: usize) -> std::io::Result<Inbox> {
        let now = stdout.duplicate()?;
        Ok(Inbox {
            state: Mutex::new(State {
                lines: LineReader::new(stdout, max_line),
                now,
                leader: None,
                reader_task: None,
                ended: false,
                end: None,
                shape: Shape::default(),
                busy: false,
                idle: None,
            }),
            unwatched: AtomicBool::new(false),
            reading: AtomicBool::new(false),
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
        state.watch(&self.unwatched);
        let mine = if state.ended {
            None
        } else {
            state.pump(cx, &mut handle)
        };
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
    ///
    /// The reading stops at the reader's answer, unless it reads for
    /// others too (`all`): then it goes on until the pipe is empty, since
    /// lines it leaves in the buffer wake nobody. Either way it stops after
    /// [`MOST_LINES_NOW`] lines, and hands the rest to the reader task,
    /// with the pipe back in the event loop.
    pub(crate) fn read_now<T>(
        &self,
        all: bool,
        mut handle: impl FnMut(&[u8], &mut Shape) -> Flow<T>,
    ) -> Option<T> {
        let mut state = match self.state.try_lock() {
            Ok(state) => state,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        let state = &mut *state;
        state.busy = true;
        let mut mine = None;
        for handed in 0.. {
            if state.ended {
                break;
            }
            if handed == MOST_LINES_NOW {
                state.watch(&self.unwatched);
                if let Some(waker) = &state.reader_task {
                    waker.wake_by_ref();
                }
                break;
            }
            let file = &state.now;
            let Some(at) = state.lines.line_now(|buf| (&*file).read(buf)) else {
                break;
            };
            match handle(state.lines.line(at), &mut state.shape) {
                Flow::Go => {}
                Flow::Mine(answer) if all => mine = Some(answer),
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
        mine
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

    /// For a lone call that will read its answer straight from the pipe
    /// ([`Inbox::read_now`]) and wait for nothing: takes the pipe out of the
    /// event loop, so that the answer wakes no thread of the runtime (see
    /// `stdout.rs`). False when someone reads or reading ended. The reader
    /// task waits on a clock instead, and puts the pipe back once no lone
    /// call has read it for [`IDLE`]; so does whoever waits on the pipe
    /// ([`Inbox::lead`], [`Inbox::watch`]).
    pub(crate) fn unwatch(&self) -> bool {
        if self.unwatched.load(Ordering::Relaxed) {
            return true;
        }
        let mut state = self.lock();
        if state.ended || state.leader.is_some() {
            return false;
        }
        let out = match state.lines.inner_mut().unwatch() {
            Ok(()) => {
                self.unwatched.store(true, Ordering::Relaxed);
                state.busy = true;
                true
            }
            Err(e) => {
                state.ended = true;
                state.end = Some(End::Io(e));
                false
            }
        };
        // Woken, the reader task sees the pipe out and waits on its clock,
        // or reports how reading ended.
        let reader_task = state.reader_task.clone();
        drop(state);
        if let Some(waker) = reader_task {
            waker.wake();
        }
        out
    }

    /// For a lone call about to take the pipe out of the event loop
    /// ([`Inbox::unwatch`]), write, and read its answer: until the guard is
    /// dropped, the reader task leaves the pipe out, however long the
    /// caller is kept off the CPU in between, rather than put it back and
    /// read the answer itself.
    pub(crate) fn reading_out(&self) -> ReadingOut<'_> {
        self.reading.store(true, Ordering::Relaxed);
        ReadingOut(&self.reading)
    }

    /// Puts the pipe back in the event loop if it is out, for a request
    /// whose answer the reader task will read: the reader task, woken,
    /// reads it at once.
    pub(crate) fn watch(&self) {
        if !self.unwatched.load(Ordering::Relaxed) {
            return;
        }
        let mut state = self.lock();
        if !state.watch(&self.unwatched) && !state.ended {
            return;
        }
        let reader_task = state.reader_task.clone();
        drop(state);
        if let Some(waker) = reader_task {
            waker.wake();
        }
    }

    /// Whether the pipe is out of the event loop.
    #[cfg(test)]
    pub(crate) fn unwatched(&self) -> bool {
        self.unwatched.load(Ordering::Relaxed)
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
            // Out of the event loop, the pipe is read by lone calls; back
            // in once none has for a while.
            if state.lines.inner().watched() || state.idle_over(&self.reading, cx) {
                state.watch(&self.unwatched);
                if !state.ended {
                    state.pump(cx, &mut handle);
                }
            }
        }
        match state.end.take() {
            Some(end) => Poll::Ready(end),
            None => Poll::Pending,
        }
    }
}

impl State {
    /// Puts the pipe back in the event loop if it is out; true if it was.
    /// Reading ends if it cannot be. Once reading ended, nothing is read
    /// any more, and how it ended stays as it was.
    fn watch(&mut self, unwatched: &AtomicBool) -> bool {
        if self.ended || self.lines.inner().watched() {
            return false;
        }
        if let Err(e) = self.lines.inner_mut().watch() {
            self.ended = true;
            self.end = Some(End::Io(e));
        }
        unwatched.store(false, Ordering::Relaxed);
        true
    }

    /// Whether no lone call read the pipe for [`IDLE`], nor is about to
    /// (`reading`); until then, `cx` is woken when that may be so.
    fn idle_over(&mut self, reading: &AtomicBool, cx: &mut Context<'_>) -> bool {
        let idle = self
            .idle
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(IDLE)));
        loop {
            if idle.as_mut().poll(cx).is_pending() {
                return false;
            }
            if !std::mem::take(&mut self.busy) && !reading.load(Ordering::Relaxed) {
                return true;
            }
            idle.as_mut().reset(Instant::now() + IDLE);
        }
    }

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
