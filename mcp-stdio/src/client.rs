//! The JSON-RPC connection: an outbox for the server's stdin (`outbox.rs`),
//! an inbox for its stdout read by one reader task or by the caller waiting
//! (`inbox.rs`), requests multiplexed by id, each under the entry's timeout.
//!
//! The timeout is kept by one sweeper task per connection, not by a timer
//! per request: every request on a connection has the same timeout, so
//! deadlines come in the order requests are sent, and the sweeper needs to
//! wake only at the oldest one's. Registering and dropping a timer for every
//! call cost about a tenth of the client's work on a call.

use std::collections::HashMap;
use std::future::poll_fn;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::codec::{self, Body, Incoming, Raw};
use crate::error::Failure;
use crate::inbox::{End, Flow, Inbox, ReadingOut};
use crate::outbox::{MAX_UNREAD, Outbox, Unread};
use crate::process::{Pipes, ServerProcess};
use crate::scan::Shape;

/// What happened on the connection that is not an answer to us: kept for the
/// operator (`describe`), never shown to a turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Lines on stdout that were not JSON-RPC messages (logs), skipped.
    pub junk_lines: u64,
    /// The last such line, cut to 200 bytes.
    pub last_junk: Option<String>,
    /// Notifications from the server, dropped.
    pub notifications: u64,
    /// Requests from the server (answered: `ping` with a result, others -32601).
    pub server_requests: u64,
    /// Answers to no pending request (late, after a timeout, or unknown ids).
    pub stray_answers: u64,
}

type Answer = Result<Body, Failure>;

/// A request waiting for its answer.
///
/// Its caller takes the answer from [`Shared::answered`], where whoever
/// read it leaves it, and is woken by the waker it left here: the entry is
/// the only thing between the two, so a call allocates nothing of its own
/// to wait (the one-shot slot this replaced cost the caller's thread a heap
/// block, a lock of its own and their drops on every call).
#[derive(Debug)]
struct Waiter {
    deadline: Instant,
    /// The caller, once it waits.
    waker: Option<Waker>,
}

/// A request's id tells its kind: a `tools/call`'s is odd, any other
/// request's even. So whoever reads an answer, the reader task or a caller,
/// knows without a lookup that its result is a call's and reads it as one
/// on the way ([`codec::decode_as`]): one pass over the line, where the
/// reader would check the result as JSON and its caller then read it again.
fn request_id(n: u64, call: bool) -> u64 {
    n * 2 + u64::from(call)
}

/// Whether `id` is a `tools/call`'s ([`request_id`]).
fn is_call_id(id: u64) -> bool {
    id % 2 == 1
}

/// Hashes a request id with one multiplication. The ids are ours and
/// counted up, so they need no defence against chosen keys (a server's
/// ids only look entries up). In a `BTreeMap`, as before, a request's
/// entry cost about 370 instructions to add and take away with 64 in
/// flight.
#[derive(Debug, Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Only `u64`s are hashed; this is here for completeness.
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        // Fibonacci hashing: the product's high bits differ between ids
        // that differ anywhere.
        self.0 = (self.0 ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        // The table picks a bucket by the low bits, which the product
        // takes from the id's low bits alone (all ones for calls' odd
        // ids): the high half is folded in.
        self.0 ^ (self.0 >> 32)
    }
}

#[derive(Debug, Default)]
struct Shared {
    /// Requests sent and not answered.
    pending: HashMap<u64, Waiter, BuildHasherDefault<IdHasher>>,
    /// Answers read and not yet taken by their callers (the failure of the
    /// connection, for those pending when it failed).
    answered: HashMap<u64, Answer, BuildHasherDefault<IdHasher>>,
    /// The last request was sent with others in flight (see
    /// [`Connection::request`]).
    crowded: bool,
    failure: Option<Failure>,
    stats: Stats,
    /// Answers sent on to their callers, not read by them.
    #[cfg(test)]
    handed_on: u64,
}

/// One connection to one server.
#[derive(Debug)]
pub(crate) struct Connection {
    shared: Arc<Mutex<Shared>>,
    out: Outbox,
    inbox: Arc<Inbox>,
    /// Whether a lone request reads at once after its write.
    read_now: ReadNow,
    /// Whether a lone call takes the pipe out of the event loop to read.
    out_of_loop: ReadNow,
    /// Whether the request that writes a batch of calls in flight reads
    /// their answers out of the event loop ([`BatchOut`]).
    batch_out: ReadNow,
    /// A batch's answers are read out of the event loop by the request
    /// that writes it: the requests that join it leave the pipe out.
    batch_reads_out: AtomicBool,
    next_id: AtomicU64,
    /// A lone call takes the pipe before it writes: the runtime has other
    /// threads ([`Connection::request`]'s body).
    lead_first: bool,
    timeout: Duration,
    sweeper: AbortHandle,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.sweeper.abort();
        self.out.close();
    }
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

impl Connection {
    /// Starts the writer, reader and sweeper tasks over `pipes`.
    ///
    /// # Errors
    /// When the server's stdin cannot be registered with the runtime.
    pub(crate) fn start(
        pipes: Pipes,
        process: Arc<ServerProcess>,
        timeout: Duration,
        max_line: usize,
    ) -> std::io::Result<Self> {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let out = Outbox::start(pipes.stdin)?;
        let inbox = Arc::new(Inbox::new(pipes.stdout, max_line)?);
        tokio::spawn(read_loop(
            Arc::clone(&inbox),
            Arc::clone(&shared),
            out.clone(),
            Arc::downgrade(&process),
        ));
        let sweeper = tokio::spawn(sweep(Arc::downgrade(&shared), out.clone(), timeout));
        Ok(Connection {
            shared,
            out,
            inbox,
            read_now: ReadNow::new(),
            out_of_loop: ReadNow::probing_every(MISSED_OUT_OF_LOOP),
            batch_out: ReadNow::probing_every(MISSED_OUT_OF_LOOP),
            batch_reads_out: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
            lead_first: tokio::runtime::Handle::current().runtime_flavor()
                != tokio::runtime::RuntimeFlavor::CurrentThread,
            timeout,
            sweeper: sweeper.abort_handle(),
        })
    }

    /// Sends one request and waits for its answer, at most the timeout.
    ///
    /// On timeout the server is told the request is cancelled and the whole
    /// connection fails: a provider that times out is left out.
    pub(crate) async fn request<P: serde::Serialize + ?Sized>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<Raw, Failure> {
        let write = |queue: &mut Vec<u8>, id| codec::write_request(queue, id, method, params);
        match self.exchange(false, write).await? {
            Body::Text(raw) => Ok(raw),
            // Only a request marked as a call is answered so.
            Body::Call(_) => Err(Failure::Protocol(format!(
                "the answer to {method} was read as a tools/call result"
            ))),
        }
    }

    /// [`Connection::request`] for a `tools/call`: its result is read into
    /// its type as the answer is decoded, by whoever reads it, where it is
    /// the plain case ([`request_id`]); otherwise it comes as text.
    pub(crate) async fn request_call(&self, tool: &str, arguments: &Map<String, Value>) -> Answer {
        let write = |queue: &mut Vec<u8>, id| codec::write_call(queue, id, tool, arguments);
        self.exchange(true, write).await
    }

    /// Sends the request that `write` appends to the outbox's queue, given
    /// its id, and waits for its answer.
    async fn exchange(&self, call: bool, write: impl FnOnce(&mut Vec<u8>, u64)) -> Answer {
        let id = request_id(self.next_id.fetch_add(1, Ordering::Relaxed), call);
        let others_in_flight = {
            let deadline = Instant::now() + self.timeout;
            let mut shared = lock(&self.shared);
            if let Some(failure) = &shared.failure {
                return Err(failure.clone());
            }
            shared.pending.insert(
                id,
                Waiter {
                    deadline,
                    waker: None,
                },
            );
            // Alone is a request with nothing else in flight that also
            // follows one that was alone: calls in flight are answered in
            // batches, and their callers all take their answers before any
            // sends again, so the first of the next batch finds nothing in
            // flight; it must still queue its line for the others to join,
            // not write it, read at once and lead as a lone call does.
            let crowded = shared.pending.len() > 1;
            std::mem::replace(&mut shared.crowded, crowded) || crowded
        };
        let me = Some(id);
        let mut guard = Pending {
            id,
            connection: self,
            armed: true,
            owes_flush: false,
            led: false,
        };
        #[cfg(test)]
        if others_in_flight {
            self.read_now.crowded.fetch_add(1, Ordering::Relaxed);
        }
        // Whether this lone request reads at once after its write.
        let hopeful = !others_in_flight && self.read_now.hopeful();
        // On a runtime with other threads, one caller's lone call in a row
        // takes the pipe out of the event loop, and reads its answer itself
        // once the server had the CPU (the yield below): the answer then
        // wakes no worker (`stdout.rs`). Held until that read, the guard
        // keeps the reader task from putting the pipe back meanwhile.
        let mut read_out = None;
        // The call after a long run of such calls lets the runtime poll the
        // caller's other futures before its read ([`ReadNow::run_of`]).
        let mut long_run = false;
        if hopeful && self.lead_first && self.out_of_loop.hopeful() {
            // Not bounded as `gives_way` bounds the run: a call that reads
            // in the event loop between two out of it costs the next the
            // pipe's way out again, with a wake of the reader task (p99 2.5
            // to 4.3 times the floor's with runs of 128, and a third less
            // throughput at 1 in flight).
            let run = poll_fn(|cx| Poll::Ready(self.read_now.run_of(cx.waker()))).await;
            long_run = run == Some(true);
            let reading = run.is_some().then(|| self.inbox.reading_out());
            if reading.is_some() && self.inbox.unwatch() {
                // Another request came meanwhile, and may not have seen the
                // pipe out: the reader task reads its answer. Its entry and
                // its look at the pipe (below) come under the same lock as
                // this look at the entries, after the pipe went out: either
                // this sees its entry, or it sees the pipe out.
                if lock(&self.shared).pending.len() > 1 {
                    self.inbox.watch();
                } else {
                    read_out = reading;
                }
            }
        }
        // Where the reader task may run on another thread while this one
        // writes, a lone call takes the pipe before it writes: the answer
        // then wakes this caller, not the reader task, which would read it
        // and send it on (most lone calls went so on a multi-thread runtime,
        // the caller losing the thread to the server as its write woke it).
        let mut polled_with = None;
        if !others_in_flight && self.lead_first && read_out.is_none() {
            guard.led = true;
            let handle = |line: &[u8], shape: &mut Shape| {
                handle_line(&self.shared, &self.out, line, shape, me)
            };
            let early = poll_fn(|cx| {
                let early = self.inbox.lead(id, cx, handle);
                polled_with = Some(cx.waker().clone());
                Poll::Ready(early)
            })
            .await;
            if let Some(answer) = early {
                // Answered before it was asked, by a server that guessed
                // the id; `lead` handed reading back already.
                guard.armed = false;
                guard.led = false;
                return answer;
            }
        }
        // Behind others in flight, the line is queued; if it starts the
        // queue, this request writes it, after one yield in which the other
        // callers of the moment queue theirs behind it (`outbox.rs`).
        guard.owes_flush = send_with(
            &self.shared,
            &self.out,
            |queue| write(queue, id),
            others_in_flight,
        );
        // The request that writes the queue may read the whole batch's
        // answers itself, out of the event loop.
        let batch = if guard.owes_flush {
            BatchOut::start(self)
        } else {
            None
        };
        if others_in_flight && batch.is_none() && !self.batch_reads_out.load(Ordering::SeqCst) {
            // Read by the reader task, so with the pipe in the event loop.
            // This request's entry was made under the lock a lone call
            // takes after it takes the pipe out, to look for entries such
            // as this one (above): either it saw this one and puts the pipe
            // back itself, or this sees the pipe out. Unless the request
            // that writes this one's batch reads its answers: that one puts
            // the pipe back for whatever it leaves unanswered
            // ([`BatchOut::read`]).
            self.inbox.watch();
        }
        if guard.owes_flush {
            tokio::task::yield_now().await;
            guard.owes_flush = false;
            self.out.flush();
        }
        if let Some(batch) = batch {
            if let Some(answer) = batch.read(me) {
                guard.armed = false;
                tokio::task::consume_budget().await;
                return answer;
            }
        }
        // The line is written: the answer may be there already.
        if hopeful {
            // The caller lets the server have the CPU first, as a blocking
            // read would: on a CPU they share, the answer is then there
            // when the read comes, where otherwise about half of these reads
            // found nothing and waited on the event loop. Elsewhere it costs
            // one system call that returns at once. On a current-thread
            // runtime, for a run of one caller's lone calls; on a
            // multi-thread one only with the pipe out of the event loop,
            // whose idle worker, woken by the answer, would compete with the
            // caller for the CPU given up (p99 went from 2.0 to 3.0 times
            // the floor's). See [`ReadNow::gives_way`] for why the run.
            let gives_way = if self.lead_first {
                if long_run && read_out.is_some() {
                    tokio::task::yield_now().await;
                }
                read_out.is_some()
            } else {
                poll_fn(|cx| Poll::Ready(self.read_now.gives_way(cx.waker()))).await
            };
            if gives_way {
                std::thread::yield_now();
                #[cfg(test)]
                self.read_now.yields.fetch_add(1, Ordering::Relaxed);
            }
            let mine = self.inbox.read_now(false, |line, shape| {
                handle_line(&self.shared, &self.out, line, shape, me)
            });
            self.read_now.went(mine.is_some());
            if read_out.take().is_some() {
                // A miss waits as any lone call does; leading puts the pipe
                // back in the event loop.
                self.out_of_loop.went(mine.is_some());
                #[cfg(test)]
                if mine.is_some() {
                    self.read_now.out_of_loop.fetch_add(1, Ordering::Relaxed);
                }
            }
            if let Some(answer) = mine {
                guard.armed = false;
                // A call answered at once never waits: the runtime's other
                // tasks get their turn now and then, as with its own I/O.
                tokio::task::consume_budget().await;
                return answer;
            }
        }
        // The answer, or the failure of the connection: the sweeper's
        // timeout, the reader's end, or shutdown. Read by this caller itself
        // where that saves a hand-off (`inbox.rs`); then the answer is kept
        // for it rather than left in the map, and wakes nobody.
        // A lone call only: with others in flight, their callers would all
        // take turns at reading, each turn a poll of the pipe, where one
        // reader task reading for all of them is cheaper. On either runtime:
        // on a multi-thread one the pipe's readiness wakes a worker either
        // way, but a leader is then woken by it without the reader task's
        // poll and hand-over in between.
        let leads = !others_in_flight;
        let answer = poll_fn(|cx| {
            // A lone call that led before its write polled the pipe then
            // with this same waker, and nothing has polled it since (a read
            // at once goes around tokio): whatever came after wakes this
            // caller, so its first poll here need not poll the pipe again
            // (about 300 instructions, on the calls' thread).
            let polled = polled_with.take().is_some_and(|w| w.will_wake(cx.waker()));
            if leads && !polled {
                guard.led = true;
                let mine = self.inbox.lead(id, cx, |line, shape| {
                    handle_line(&self.shared, &self.out, line, shape, me)
                });
                if let Some(answer) = mine {
                    // `lead` handed reading back already.
                    guard.led = false;
                    return Poll::Ready(answer);
                }
            }
            self.take(id, cx)
        })
        .await;
        guard.armed = false;
        answer
    }

    /// The answer to request `id` if it was read; else leaves the caller's
    /// waker on its entry.
    fn take(&self, id: u64, cx: &mut Context<'_>) -> Poll<Answer> {
        let mut shared = lock(&self.shared);
        let shared = &mut *shared;
        // Pending, so not answered: an answer is left in `answered` as its
        // entry leaves `pending`, under the same lock. One lookup for the
        // first poll, which mostly finds the call waiting.
        if let Some(waiter) = shared.pending.get_mut(&id) {
            match &waiter.waker {
                Some(waker) if waker.will_wake(cx.waker()) => {}
                _ => waiter.waker = Some(cx.waker().clone()),
            }
            return Poll::Pending;
        }
        // Not pending: its answer, or the failure of the connection, is in
        // `answered` (`fail` leaves one for every pending request). Nothing
        // there would mean it was taken already, by an earlier poll.
        Poll::Ready(
            shared
                .answered
                .remove(&id)
                .unwrap_or_else(|| Err(shared.failure.clone().unwrap_or(Failure::ShutDown))),
        )
    }

    /// Sends one notification.
    pub(crate) fn notify(&self, method: &str, params: Option<Value>) {
        send(
            &self.shared,
            &self.out,
            &codec::notification(method, params),
            false,
        );
    }

    /// Fails the connection, and every pending request with it, unless it
    /// already failed.
    pub(crate) fn fail(&self, failure: Failure) {
        fail(&self.shared, failure);
    }

    /// Why the connection failed, if it did.
    pub(crate) fn failure(&self) -> Option<Failure> {
        lock(&self.shared).failure.clone()
    }

    /// Closes the server's stdin, the polite way to ask it to leave.
    pub(crate) fn close(&self) {
        self.out.close();
    }

    /// A snapshot of the counters.
    pub(crate) fn stats(&self) -> Stats {
        lock(&self.shared).stats.clone()
    }
}

/// Whether a lone request reads the server's stdout at once after its line
/// is written, learnt from how such reads went on this connection.
///
/// With the server on the caller's CPU, the write often lets it run and
/// answer before the caller goes on. A read at once that finds the answer
/// saves the wait on the event loop: the runtime's park and wake, and on a
/// multi-thread runtime the hand-off from the worker that sees the pipe to
/// the caller's thread. One that finds nothing costs a `read` that fails.
/// The first is worth several of the second, so the reads go on while
/// more than one in [`HIT_WORTH`] + 1 finds the answer: a hit adds
/// `HIT_WORTH` to a credit, a miss takes one away. A server that never
/// answers that fast spends the credit; then one request in [`MISSED`]
/// reads, and a hit brings the reads back.
#[derive(Debug)]
struct ReadNow {
    credit: AtomicU32,
    /// Requests left without a read, once the credit is spent.
    skip: AtomicU32,
    /// One request in this many reads, once the credit is spent.
    missed: u32,
    /// Who made the last lone request that read at once: its waker, as one
    /// word ([`ReadNow::same_caller`]).
    caller: AtomicUsize,
    /// Lone requests in a row that gave the server the CPU first.
    run: AtomicU32,
    /// Times the thread was yielded before a read at once.
    #[cfg(test)]
    yields: AtomicU32,
    /// Answers read with the pipe out of the event loop.
    #[cfg(test)]
    out_of_loop: AtomicU32,
    /// Batches whose writer read its answer out of the event loop.
    #[cfg(test)]
    batches_out: AtomicU32,
    /// Requests sent with others in flight.
    #[cfg(test)]
    crowded: AtomicU32,
}

/// What a read at once that finds the answer is worth, in reads that find
/// nothing.
const HIT_WORTH: u32 = 8;

/// The most credit kept: after a server stops answering that fast, at most
/// this many reads find nothing before they stop.
const MOST_CREDIT: u32 = 64;

/// With the credit spent, one request in this many reads at once, so that
/// a server that becomes fast is seen: what a server that never answers
/// that fast costs is one needless `read` in this many requests.
const MISSED: u32 = 16;

/// With its credit spent, one lone call in this many takes the pipe out
/// of the event loop ([`Connection::exchange`]): one that finds nothing
/// costs more than a read at once (the pipe out and back in, and a wake of
/// the reader task), and so is tried in fewer than one call in a hundred,
/// out of the slowest one in a hundred.
const MISSED_OUT_OF_LOOP: u32 = 128;

/// The most lone requests in a row that give the server the CPU before
/// their read ([`ReadNow::gives_way`]): few enough that callers joined in
/// one future soon go in flight together, many enough that a single
/// caller's call that reads without it (and finds nothing, about half of
/// the time) is not among the slowest one in a hundred.
const LONGEST_RUN: u32 = 128;

impl ReadNow {
    fn new() -> Self {
        Self::probing_every(MISSED)
    }

    /// With the credit spent, one request in `missed` reads.
    fn probing_every(missed: u32) -> Self {
        ReadNow {
            credit: AtomicU32::new(HIT_WORTH),
            skip: AtomicU32::new(0),
            missed,
            caller: AtomicUsize::new(0),
            run: AtomicU32::new(0),
            #[cfg(test)]
            yields: AtomicU32::new(0),
            #[cfg(test)]
            out_of_loop: AtomicU32::new(0),
            #[cfg(test)]
            batches_out: AtomicU32::new(0),
            #[cfg(test)]
            crowded: AtomicU32::new(0),
        }
    }

    /// Whether the lone request about to read at once comes from the same
    /// caller as the last one that did, told by its waker; notes it as the
    /// last.
    ///
    /// Only a caller that waits for each answer before it asks again may
    /// give up the thread before the read: the server then answers before
    /// the caller goes on, so the call ends within its first poll, and the
    /// next call finds nothing in flight. Calls started together, each
    /// polled in turn by a `FuturesUnordered`, a `JoinSet` or as tasks of
    /// their own, would each go alone so, one answer at a time (throughput
    /// at 8 in flight fell from 0.9 to 0.4 of the floor's), where without
    /// the yield the first waits and the others join it in one write. Those
    /// each have a waker of their own; one task's calls in sequence share
    /// its waker. Calls joined in one future (`join!`, `join_all`) share it
    /// too: [`ReadNow::gives_way`] bounds what that costs. A waker equal by
    /// chance (a freed one's address reused) costs only the yield.
    fn same_caller(&self, waker: &Waker) -> bool {
        let vtable: *const std::task::RawWakerVTable = waker.vtable();
        let caller = (waker.data() as usize) ^ (vtable as usize).rotate_left(32);
        self.caller.swap(caller, Ordering::Relaxed) == caller
    }

    /// Whether the lone request about to read at once gives the server the
    /// CPU first: it comes from the same caller as the last one
    /// ([`ReadNow::same_caller`]), and is not the one after [`LONGEST_RUN`]
    /// in a row that did.
    ///
    /// Callers joined in one future (`join_all` of callers each calling in
    /// a loop) share a waker, and are polled in turn: with every call
    /// answered within its yield, each ends within its first poll, the
    /// next finds nothing in flight, and the calls go one at a time for
    /// good (8 in flight on a current-thread runtime fell from 0.95 to 0.41
    /// of the floor's in `benches/`). One call in a run that long reads
    /// without the yield; when it finds nothing, it waits, the other
    /// callers join it in one write, and their calls stay in flight
    /// together from then on. A single caller pays for it in that one call.
    fn gives_way(&self, waker: &Waker) -> bool {
        self.run_of(waker) == Some(false)
    }

    /// Where the lone request about to read at once stands in a run of one
    /// caller's ([`ReadNow::same_caller`]): `None` if it comes from another
    /// caller than the last, `Some(true)` if it is the one after
    /// [`LONGEST_RUN`] in a row (a new run starts after it), else
    /// `Some(false)`.
    ///
    /// On a multi-thread runtime, that one yields to the runtime between its
    /// write and its read, its pipe still out of the event loop: callers
    /// joined in one future share its waker, and with every call answered
    /// at its read, each ended within its first poll, so they went one at a
    /// time for good (8 in flight fell from 1.1 to 0.45 of the floor's in
    /// `benches/`, in about half of the runs). Polled meanwhile, the others
    /// start their calls, find it in flight, and go in a batch. A single
    /// caller pays one poll more in the run.
    fn run_of(&self, waker: &Waker) -> Option<bool> {
        if !self.same_caller(waker) {
            self.run.store(0, Ordering::Relaxed);
            return None;
        }
        let run = self.run.load(Ordering::Relaxed);
        if run >= LONGEST_RUN {
            self.run.store(0, Ordering::Relaxed);
            return Some(true);
        }
        self.run.store(run + 1, Ordering::Relaxed);
        Some(false)
    }

    /// Whether the next lone request reads at once. Lone requests come one
    /// at a time, so the counts need no more than relaxed atomics: two at
    /// once would only blur the estimate.
    fn hopeful(&self) -> bool {
        if self.credit.load(Ordering::Relaxed) > 0 {
            return true;
        }
        let skip = self.skip.load(Ordering::Relaxed);
        if skip == 0 {
            return true;
        }
        self.skip.store(skip - 1, Ordering::Relaxed);
        false
    }

    /// A read at once found nothing worth its cost: the reads stop until
    /// the next that [`ReadNow::hopeful`] lets through finds the answer.
    fn spent(&self) {
        self.credit.store(0, Ordering::Relaxed);
        self.skip.store(self.missed, Ordering::Relaxed);
    }

    /// A read at once found the answer, or did not.
    fn went(&self, found: bool) {
        let credit = self.credit.load(Ordering::Relaxed);
        if found {
            let credit = (credit + HIT_WORTH).min(MOST_CREDIT);
            self.credit.store(credit, Ordering::Relaxed);
            return;
        }
        let credit = credit.saturating_sub(1);
        self.credit.store(credit, Ordering::Relaxed);
        if credit == 0 {
            self.skip.store(self.missed, Ordering::Relaxed);
        }
    }
}

/// On a runtime with other threads, the answers to a batch of calls in
/// flight, read by the request that writes the batch, out of the event
/// loop, after it gave the server the CPU.
///
/// Read by the reader task, a batch's answers cost the server an `epoll`
/// callback on each line it writes, since the pipe is in the event loop
/// (the server flushes each answer), and a worker's wake-up, and its hand
/// over to the callers' thread, each a thread switch: with 64 calls in
/// flight on the yardstick, the server used about 80 ns more a call than
/// with the floor, and the client's threads about 780 ns a call in all.
/// So the request that starts the outbox's queue takes the pipe out of the
/// event loop before the others join the batch (they then leave the pipe
/// out: see `Connection::exchange`), writes the batch, gives up the CPU
/// (on a CPU it shares with the server, the server then reads the batch and
/// answers all of it), and reads every answer there is, handing each on.
/// The throughput at 64 in flight rose from 0.73 to about 0.98 of the
/// floor's, at 8 from 0.70 to about 1.08.
///
/// Any request still unanswered after that read is the reader task's: the
/// pipe goes back in the event loop. Such a batch, or one whose own answer
/// was not there, spends the whole credit ([`ReadNow::spent`]): with the
/// server on another CPU, where the yield gives it nothing, the reads stop
/// at the first, then come once in [`MISSED_OUT_OF_LOOP`] batches (without
/// that, 8 and 64 in flight lost about 3% there). While the pipe stays out
/// between batches, what the server says unasked waits for the next
/// batch's read, or at most twice `inbox::IDLE`.
struct BatchOut<'a> {
    connection: &'a Connection,
    /// Keeps the reader task from putting the pipe back meanwhile.
    _reading: ReadingOut<'a>,
    /// The read was made, and the pipe left where it had to be.
    done: bool,
}

impl<'a> BatchOut<'a> {
    /// Takes the pipe out of the event loop for the batch that `connection`'s
    /// caller starts (it owes the queue's flush), if batches are read out of
    /// it on this runtime and of late found their answers; `None` if not.
    fn start(connection: &'a Connection) -> Option<Self> {
        if !connection.lead_first || !connection.batch_out.hopeful() {
            return None;
        }
        let reading = connection.inbox.reading_out();
        if !connection.inbox.unwatch() {
            return None;
        }
        connection.batch_reads_out.store(true, Ordering::SeqCst);
        Some(BatchOut {
            connection,
            _reading: reading,
            done: false,
        })
    }

    /// Once the batch is written: gives the server the CPU, then reads every
    /// line there is, handing each on; the answer to request `me`, if it
    /// came. Whatever is left unanswered is read by the reader task, with
    /// the pipe back in the event loop.
    fn read(mut self, me: Option<u64>) -> Option<Answer> {
        let c = self.connection;
        std::thread::yield_now();
        let mine = c.inbox.read_now(true, |line, shape| {
            handle_line(&c.shared, &c.out, line, shape, me)
        });
        self.done = true;
        // The requests that joined saw this set, and left the pipe out:
        // their entries were made before it was cleared, so the look at
        // the entries below, under the same lock, sees any left
        // unanswered.
        c.batch_reads_out.store(false, Ordering::SeqCst);
        let left = !lock(&c.shared).pending.is_empty();
        if left {
            c.inbox.watch();
        }
        // A batch that left answers unread cost the pipe's way out and back
        // in, and two wakes of the reader task, more than its reads saved:
        // it spends the whole credit.
        if mine.is_some() && !left {
            c.batch_out.went(true);
        } else {
            c.batch_out.spent();
        }
        #[cfg(test)]
        if mine.is_some() {
            c.read_now.batches_out.fetch_add(1, Ordering::Relaxed);
        }
        mine
    }
}

impl Drop for BatchOut<'_> {
    /// A batch whose writer stopped waiting before the read: the requests
    /// that joined it are the reader task's.
    fn drop(&mut self) {
        if !self.done {
            self.connection
                .batch_reads_out
                .store(false, Ordering::SeqCst);
            self.connection.inbox.watch();
        }
    }
}

/// Sends `line`, failing the connection when the server leaves too much of
/// what we send unread. True when the sender owes the outbox a flush (see
/// [`Outbox::send_with`]).
fn send(shared: &Mutex<Shared>, out: &Outbox, line: &[u8], deferred: bool) -> bool {
    send_with(shared, out, |queue| queue.extend_from_slice(line), deferred)
}

/// [`send`] for the line that `write` appends to the outbox's queue.
fn send_with(
    shared: &Mutex<Shared>,
    out: &Outbox,
    write: impl FnOnce(&mut Vec<u8>),
    deferred: bool,
) -> bool {
    match out.send_with(write, deferred) {
        Ok(owes_flush) => owes_flush,
        Err(Unread) => {
            fail(
                shared,
                Failure::Protocol(format!(
                    "the server does not read what it is sent: more than {} wait for its stdin",
                    size(MAX_UNREAD)
                )),
            );
            false
        }
    }
}

fn fail(shared: &Mutex<Shared>, failure: Failure) {
    let pending = {
        let mut shared = lock(shared);
        if shared.failure.is_some() {
            return;
        }
        shared.failure = Some(failure.clone());
        let pending = std::mem::take(&mut shared.pending);
        for &id in pending.keys() {
            shared.answered.insert(id, Err(failure.clone()));
        }
        pending
    };
    // Woken and freed with the lock let go.
    for (_, waiter) in pending {
        if let Some(waker) = waiter.waker {
            waker.wake();
        }
    }
}

/// Keeps the timeout of every request on one connection: wakes at the oldest
/// pending request's deadline (or a timeout from now, when none is
/// pending), and when one has passed, tells the server that request is
/// cancelled and fails the connection. A request sent later has a later
/// deadline than any the sweeper sleeps towards, so sending never has to
/// wake it.
async fn sweep(shared: Weak<Mutex<Shared>>, out: Outbox, timeout: Duration) {
    let mut wake_at = Instant::now() + timeout;
    loop {
        tokio::time::sleep_until(wake_at).await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let now = Instant::now();
        let expired = {
            let shared = lock(&shared);
            if shared.failure.is_some() {
                return;
            }
            let oldest = shared.pending.iter().min_by_key(|(_, w)| w.deadline);
            match oldest {
                Some((&id, waiter)) if waiter.deadline <= now => Some(id),
                Some((_, waiter)) => {
                    wake_at = waiter.deadline;
                    None
                }
                None => {
                    wake_at = now + timeout;
                    None
                }
            }
        };
        if let Some(id) = expired {
            send(&shared, &out, &cancelled(id, "timed out"), false);
            fail(&shared, Failure::Timeout(timeout));
            return;
        }
    }
}

/// The `notifications/cancelled` line for request `id`.
fn cancelled(id: u64, reason: &str) -> Vec<u8> {
    codec::notification(
        "notifications/cancelled",
        Some(json!({"requestId": id, "reason": reason})),
    )
}

/// Removes an abandoned request (its future was dropped) and tells the
/// server, so that no answer is awaited that nobody reads; writes the
/// queue first if the request owed that (its line, and those queued
/// behind it, would otherwise wait for the next sender).
struct Pending<'a> {
    id: u64,
    connection: &'a Connection,
    armed: bool,
    /// The request's line started the outbox's queue and is not written
    /// yet: this request must flush it.
    owes_flush: bool,
    /// The caller read the server's stdout itself: it must hand reading
    /// back to the reader task.
    led: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if self.owes_flush {
            self.connection.out.flush();
        }
        if self.led {
            let c = self.connection;
            c.inbox.step_down(self.id, |line, shape| {
                handle_line(&c.shared, &c.out, line, shape, None)
            });
        }
        if !self.armed {
            return;
        }
        let (waiter, answer) = {
            let mut shared = lock(&self.connection.shared);
            let answer = shared.answered.remove(&self.id);
            (shared.pending.remove(&self.id), answer)
        };
        // An answer nobody takes is dropped here, with the lock let go.
        drop(answer);
        if waiter.is_some() {
            let line = cancelled(self.id, "the client stopped waiting");
            send(&self.connection.shared, &self.connection.out, &line, false);
        }
    }
}

async fn read_loop(
    inbox: Arc<Inbox>,
    shared: Arc<Mutex<Shared>>,
    out: Outbox,
    // Weak: the provider's drop must reach the process (and kill its group)
    // while this task still waits for the end of stdout.
    process: Weak<ServerProcess>,
) {
    // Fails the connection if this task is dropped before its end: the
    // runtime that ran it shut down, and nothing reads the server any more.
    let mut gone = ReaderGone {
        shared: Some(Arc::clone(&shared)),
    };
    let end = poll_fn(|cx| {
        inbox.poll_reader_task(cx, |line, shape| {
            handle_line(&shared, &out, line, shape, None)
        })
    })
    .await;
    let failure = match end {
        End::Closed => crashed(&process, "closed its stdout").await,
        End::Io(e) => crashed(&process, &format!("stdout failed: {e}")).await,
        End::TooLong(bound) => Failure::Protocol(format!(
            "the server sent a line longer than the bound of {}",
            size(bound)
        )),
        End::Broken(failure) => failure,
    };
    gone.shared = None;
    fail(&shared, failure);
}

/// Hands one line from the server to whom it is for. The answer to
/// request `me`, whose caller reads, is returned to it rather than left in
/// the map with a wake (that caller is awake: it is the one reading).
fn handle_line(
    shared: &Mutex<Shared>,
    out: &Outbox,
    line: &[u8],
    shape: &mut Shape,
    me: Option<u64>,
) -> Flow<Answer> {
    let mut is_call = |id: &Value| id.as_u64().is_some_and(is_call_id);
    match codec::decode_as(line, Some(&mut is_call), Some(shape)) {
        Incoming::Junk => {
            let mut shared = lock(shared);
            shared.stats.junk_lines += 1;
            let cut = &line[..line.len().min(200)];
            shared.stats.last_junk = Some(String::from_utf8_lossy(cut).into_owned());
        }
        Incoming::Response { id, outcome } => {
            let answer = outcome.map_err(|(code, message)| Failure::Rejected { code, message });
            let waiter = {
                let mut shared = lock(shared);
                match id
                    .as_u64()
                    .and_then(|id| Some((id, shared.pending.remove(&id)?)))
                {
                    Some((id, _)) if me == Some(id) => return Flow::Mine(answer),
                    Some((id, waiter)) => {
                        shared.answered.insert(id, answer);
                        #[cfg(test)]
                        {
                            shared.handed_on += 1;
                        }
                        Some(waiter)
                    }
                    None => {
                        shared.stats.stray_answers += 1;
                        None
                    }
                }
            };
            // Woken with the lock let go.
            if let Some(waker) = waiter.and_then(|w| w.waker) {
                waker.wake();
            }
        }
        Incoming::Request { id, method } => {
            lock(shared).stats.server_requests += 1;
            let answer = if method == "ping" {
                Ok(json!({}))
            } else {
                Err((-32601, "method not found"))
            };
            send(shared, out, &codec::response(id, answer), false);
        }
        Incoming::Notification => lock(shared).stats.notifications += 1,
        Incoming::Batch => {
            return Flow::Stop(Failure::Protocol(
                "the server sent a JSON-RPC batch, which MCP 2025-06-18 does not allow".into(),
            ));
        }
    }
    Flow::Go
}

/// Armed while the reader task runs: dropped armed, it fails the connection.
struct ReaderGone {
    shared: Option<Arc<Mutex<Shared>>>,
}

impl Drop for ReaderGone {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.take() {
            fail(
                &shared,
                Failure::Crashed(
                    "its connection is lost: the runtime that ran it has shut down".into(),
                ),
            );
        }
    }
}

fn size(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}

/// The failure of a server whose stdout ended: how its process ended, if it
/// did within a moment, after its stderr had a moment to drain.
async fn crashed(process: &Weak<ServerProcess>, what: &str) -> Failure {
    let Some(process) = process.upgrade() else {
        return Failure::ShutDown;
    };
    let status = process.exit_status(Duration::from_secs(2)).await;
    process.stderr_settled(Duration::from_millis(500)).await;
    match status {
        Some(status) => Failure::Crashed(status.to_string()),
        None => Failure::Crashed(format!("it {what} but is still running")),
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;

    use super::*;
    use crate::config::ServerConfig;

    /// The `sed` script of a server answering every request, in order,
    /// with an empty result.
    const ANSWER_EVERY_LINE: &str =
        r#"s/.*"id":\([0-9]*\).*/{"jsonrpc":"2.0","id":\1,"result":{}}/"#;

    /// A connection to `server`.
    fn connected_to(server: &ServerConfig) -> (Arc<ServerProcess>, Connection) {
        let (process, pipes) = ServerProcess::spawn("t", server, std::path::Path::new("/"))
            .unwrap_or_else(|f| panic!("the server starts: {f:?}"));
        let process = Arc::new(process);
        let c = Connection::start(pipes, Arc::clone(&process), Duration::from_secs(20), 4096)
            .expect("the pipes are usable");
        (process, c)
    }

    /// A connection to a server answering every request at once.
    fn connected() -> (Arc<ServerProcess>, Connection) {
        connected_to(&ServerConfig::new(["sed", "-u", ANSWER_EVERY_LINE]))
    }

    async fn close(process: Arc<ServerProcess>, c: Connection) {
        c.close();
        process
            .stop(Duration::from_secs(1), Duration::from_secs(1))
            .await;
    }

    /// Whether the next request counts as alone: only a lone call reads at
    /// once, and so consults (and, with no credit, counts down) the skips.
    async fn sent_alone(c: &Connection) -> bool {
        c.read_now.credit.store(0, Ordering::Relaxed);
        c.read_now.skip.store(5, Ordering::Relaxed);
        c.request("x", &json!({})).await.expect("answered");
        c.read_now.skip.load(Ordering::Relaxed) == 4
    }

    /// How many of `n` lone requests read at once, when every `every`-th
    /// read finds the answer.
    fn reads(r: &ReadNow, n: usize, every: usize) -> usize {
        let mut reads = 0;
        for _ in 0..n {
            if r.hopeful() {
                reads += 1;
                r.went(reads % every == 0);
            }
        }
        reads
    }

    /// The connection tells [`ReadNow`] how each read at once went: with a
    /// server that answers only after a while, the read right after the
    /// write finds nothing, and the last credit is spent.
    #[tokio::test]
    async fn a_read_at_once_that_finds_nothing_spends_credit() {
        let late = format!("sleep 0.5; exec sed -u '{ANSWER_EVERY_LINE}'");
        let (process, c) = connected_to(&ServerConfig::new(["sh", "-c", &late]));
        c.read_now.credit.store(1, Ordering::Relaxed);
        c.request("x", &json!({})).await.expect("answered");
        assert_eq!(c.read_now.credit.load(Ordering::Relaxed), 0);
        assert_eq!(c.read_now.skip.load(Ordering::Relaxed), MISSED);
        close(process, c).await;
    }

    #[test]
    fn reads_at_once_go_on_while_enough_of_them_find_the_answer() {
        // One hit in four: well worth it, every request reads.
        let r = ReadNow::new();
        assert_eq!(reads(&r, 1000, 4), 1000);
        // One hit in 8: the credit holds, just.
        let r = ReadNow::new();
        assert_eq!(reads(&r, 1000, 8), 1000);
    }

    #[test]
    fn reads_at_once_stop_when_they_find_nothing_and_a_probe_brings_them_back() {
        let r = ReadNow::new();
        // The starting credit: HIT_WORTH misses, then one read in MISSED.
        assert_eq!(reads(&r, 8, usize::MAX), 8);
        assert_eq!(reads(&r, 17 * 10, usize::MAX), 10);
        // One hit in 20 is not worth it: about one read in MISSED + 1,
        // each hit buying HIT_WORTH more.
        let r = ReadNow::new();
        let n = reads(&r, 17_000, 20);
        assert!((1000..2000).contains(&n), "{n} reads");
        // A probe that finds the answer brings the reads back.
        let r = ReadNow::new();
        reads(&r, 8, usize::MAX);
        let skipped = (0..=MISSED).take_while(|_| !r.hopeful()).count();
        assert_eq!(skipped, MISSED as usize, "then the probe reads");
        r.went(true);
        assert_eq!(reads(&r, 100, 2), 100);
    }

    /// A call gets its result read into its type on the way, whether its
    /// caller reads its answer (a lone call) or the reader task does (calls
    /// in flight); any other request's is handed on as text.
    #[tokio::test]
    async fn a_call_gets_its_result_read_and_other_requests_text() {
        let (process, c) = connected();
        let args = Map::new();
        let empty = Body::Call(spear_capabilities::CallResult::new(Vec::new()));
        let text = Raw::of("{}");
        for _ in 0..3 {
            let call = c.request_call("t", &args).await.expect("answered");
            assert_eq!(call, empty);
            let other = c.request("x", &json!({})).await.expect("answered");
            assert_eq!(other, text);
        }
        let before = lock(&c.shared).handed_on;
        // No read at once: the first call could find its answer and end
        // before the others are sent, which would then go alone too.
        c.read_now.credit.store(0, Ordering::Relaxed);
        c.read_now.skip.store(u32::MAX, Ordering::Relaxed);
        let params = json!({});
        let (a, b, x) = tokio::join!(
            c.request_call("t", &args),
            c.request_call("t", &args),
            c.request("x", &params),
        );
        assert_eq!(
            [a.expect("answered"), b.expect("answered")],
            [empty.clone(), empty]
        );
        assert_eq!(x.expect("answered"), text);
        assert!(
            lock(&c.shared).handed_on > before,
            "no answer was handed on"
        );
        close(process, c).await;
    }

    /// Counts the times it is woken.
    #[derive(Default)]
    struct Wakes(AtomicU64);

    impl std::task::Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A connection to a server that reads every line and answers none:
    /// a test hands the connection its answers itself, as the reader
    /// would ([`handle_line`]).
    fn connected_to_mute() -> (Arc<ServerProcess>, Connection) {
        connected_to(&ServerConfig::new(["sh", "-c", "exec cat >/dev/null"]))
    }

    /// Polls `call` until it waits for its answer; the id it waits for.
    fn poll_until_waiting<F: Future<Output = Answer>>(
        c: &Connection,
        mut call: Pin<&mut F>,
        cx: &mut Context<'_>,
    ) -> u64 {
        for _ in 0..3 {
            assert!(call.as_mut().poll(cx).is_pending(), "no answer came");
            let shared = lock(&c.shared);
            let waiting = shared.pending.iter().find(|(_, w)| w.waker.is_some());
            if let Some((&id, _)) = waiting.filter(|_| shared.pending.len() == 1) {
                return id;
            }
        }
        panic!("the call never waited");
    }

    /// The answer to `id`, as the server would write it, handed to the
    /// connection as the reader would hand it.
    fn answer(c: &Connection, id: u64) {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]}}}}"#);
        let flow = handle_line(
            &c.shared,
            &c.out,
            line.as_bytes(),
            &mut Shape::default(),
            None,
        );
        assert!(matches!(flow, Flow::Go), "{flow:?}");
    }

    /// A waiting call's entry holds its waker; whoever reads the answer
    /// leaves it for the caller and wakes it; the caller takes it and
    /// leaves nothing.
    #[tokio::test]
    async fn an_answer_is_left_for_its_caller_who_takes_it_and_leaves_nothing() {
        let (process, c) = connected_to_mute();
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(Arc::clone(&wakes));
        let mut cx = Context::from_waker(&waker);
        let args = Map::new();
        let mut call = Box::pin(c.request_call("t", &args));
        let id = poll_until_waiting(&c, call.as_mut(), &mut cx);
        answer(&c, id);
        {
            let shared = lock(&c.shared);
            assert!(shared.pending.is_empty(), "the entry went");
            assert!(shared.answered.contains_key(&id));
        }
        assert_eq!(
            wakes.0.load(Ordering::Relaxed),
            1,
            "the caller is woken once"
        );
        let empty = Body::Call(spear_capabilities::CallResult::new(Vec::new()));
        match call.as_mut().poll(&mut cx) {
            Poll::Ready(got) => assert_eq!(got.expect("answered"), empty),
            Poll::Pending => panic!("the answer was there"),
        }
        assert!(lock(&c.shared).answered.is_empty());
        drop(call);
        close(process, c).await;
    }

    /// An answer left for a caller that stopped waiting goes with its
    /// caller; so does the entry of one that stopped before its answer,
    /// and only that one tells the server it stopped.
    #[tokio::test]
    async fn a_caller_that_stops_waiting_leaves_nothing_behind() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let sent = dir.path().join("sent");
        let keep = format!("exec cat >'{}'", sent.display());
        let (process, c) = connected_to(&ServerConfig::new(["sh", "-c", &keep]));
        let args = Map::new();
        let waker = Waker::from(Arc::new(Wakes::default()));
        let mut cx = Context::from_waker(&waker);
        let mut ids = Vec::new();
        for answered in [true, false] {
            let mut call = Box::pin(c.request_call("t", &args));
            let id = poll_until_waiting(&c, call.as_mut(), &mut cx);
            if answered {
                answer(&c, id);
            }
            drop(call);
            ids.push(id);
            let shared = lock(&c.shared);
            assert!(shared.pending.is_empty() && shared.answered.is_empty());
            assert_eq!(shared.stats.stray_answers, 0);
        }
        // The answer to the call that stopped before it came comes now: a
        // stray.
        answer(&c, ids[1]);
        assert_eq!(lock(&c.shared).stats.stray_answers, 1);
        close(process, c).await;
        let sent = std::fs::read_to_string(&sent).expect("what the server read");
        let cancelled: Vec<Value> = sent
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
            .filter(|m| m["method"] == "notifications/cancelled")
            .map(|m| m["params"]["requestId"].clone())
            .collect();
        assert_eq!(cancelled, [json!(ids[1])], "{sent}");
    }

    /// An answer read before its caller waits is left for it: the caller,
    /// not yet waiting, is not woken, and takes it at its next poll.
    #[tokio::test]
    async fn an_answer_read_before_its_caller_waits_is_there_at_its_next_poll() {
        let (process, c) = connected_to_mute();
        let args = Map::new();
        // The runtime sees the server's stdin writable (its first look at
        // it): the first call's line is then written at once, and the
        // second's starts the queue and owes the flush.
        tokio::task::yield_now().await;
        let wakes = Arc::new(Wakes::default());
        let waker = Waker::from(Arc::clone(&wakes));
        let mut cx = Context::from_waker(&waker);
        let mut first = Box::pin(c.request_call("t", &args));
        let first_id = poll_until_waiting(&c, first.as_mut(), &mut cx);
        // Behind the first, the second yields once before it writes: its
        // entry is there, with no waker yet.
        let mut second = Box::pin(c.request_call("t", &args));
        assert!(second.as_mut().poll(&mut cx).is_pending());
        let second_id = {
            let shared = lock(&c.shared);
            let (&id, waiter) = shared
                .pending
                .iter()
                .find(|&(&id, _)| id != first_id)
                .expect("the second call is pending");
            assert!(waiter.waker.is_none(), "it does not wait yet");
            id
        };
        let woken = wakes.0.load(Ordering::Relaxed);
        answer(&c, second_id);
        assert_eq!(wakes.0.load(Ordering::Relaxed), woken, "nobody to wake");
        let empty = Body::Call(spear_capabilities::CallResult::new(Vec::new()));
        match second.as_mut().poll(&mut cx) {
            Poll::Ready(got) => assert_eq!(got.expect("answered"), empty),
            Poll::Pending => panic!("the answer was there"),
        }
        drop((first, second));
        close(process, c).await;
    }

    /// The failure of the connection is every waiting caller's answer, and
    /// wakes each; it is left for each the way an answer is.
    #[tokio::test]
    async fn a_failure_answers_and_wakes_every_waiting_caller() {
        let (process, c) = connected_to_mute();
        let args = Map::new();
        // As in the test before: the second call will start the queue.
        tokio::task::yield_now().await;
        let wakes = [Arc::new(Wakes::default()), Arc::new(Wakes::default())];
        let wakers = wakes.clone().map(Waker::from);
        let mut cx = wakers.each_ref().map(Context::from_waker);
        let mut first = Box::pin(c.request_call("t", &args));
        poll_until_waiting(&c, first.as_mut(), &mut cx[0]);
        let params = json!({});
        let mut second = Box::pin(c.request("x", &params));
        // Behind the first: it yields once before it writes, then waits.
        assert!(second.as_mut().poll(&mut cx[1]).is_pending());
        assert!(second.as_mut().poll(&mut cx[1]).is_pending());
        assert_eq!(lock(&c.shared).pending.len(), 2);
        let before = wakes.each_ref().map(|w| w.0.load(Ordering::Relaxed));
        let failure = Failure::Protocol("broken".into());
        c.fail(failure.clone());
        for (w, before) in wakes.iter().zip(before) {
            assert_eq!(
                w.0.load(Ordering::Relaxed),
                before + 1,
                "each caller is woken once"
            );
        }
        assert!(matches!(first.as_mut().poll(&mut cx[0]), Poll::Ready(Err(f)) if f == failure));
        assert!(matches!(second.as_mut().poll(&mut cx[1]), Poll::Ready(Err(f)) if f == failure));
        drop((first, second));
        {
            let shared = lock(&c.shared);
            assert!(shared.pending.is_empty() && shared.answered.is_empty());
        }
        close(process, c).await;
    }

    #[test]
    fn request_ids_spread_over_the_buckets() {
        use std::hash::BuildHasher;
        // Calls' ids are all odd: their hashes must still fill a table.
        let hasher = BuildHasherDefault::<IdHasher>::default();
        for (call, mask) in [(true, 63), (false, 63), (true, 1023)] {
            let buckets: std::collections::HashSet<u64> = (0..=mask)
                .map(|n| hasher.hash_one(request_id(1000 + n, call)) & mask)
                .collect();
            // A random hash fills about 63% of them; odd products alone,
            // at most half.
            let filled = buckets.len() as u64;
            assert!(filled > (mask + 1) * 5 / 8, "{filled} of {}", mask + 1);
        }
    }

    #[test]
    fn a_request_id_tells_a_call_from_any_other_request() {
        for n in [1, 2, 1 << 40] {
            let (call, other) = (request_id(n, true), request_id(n, false));
            assert!(is_call_id(call) && !is_call_id(other), "{n}");
            assert_ne!(request_id(n + 1, true), call);
            assert_ne!(request_id(n + 1, false), other);
        }
    }

    /// On a multi-thread runtime too, the caller of a lone call reads its
    /// own answer, not the reader task on the worker, which would hand it
    /// on. With the server and all of the client's threads on one CPU,
    /// the caller's write lets the server run before the caller goes on;
    /// the reader task, woken by the answer, read it first in most calls
    /// while a lone call took the pipe only after its write.
    #[test]
    fn on_a_multi_thread_runtime_a_lone_call_reads_its_own_answer() {
        one_worker_runtime().block_on(async {
            let (process, c) = connected_on_one_cpu().await;
            let args = Map::new();
            let empty = Body::Call(spear_capabilities::CallResult::new(Vec::new()));
            for _ in 0..2000 {
                assert_eq!(c.request_call("t", &args).await.expect("answered"), empty);
            }
            let handed_on = lock(&c.shared).handed_on;
            close(process, c).await;
            assert_eq!(handed_on, 0, "answers read by the reader task, of 2000");
        });
    }

    /// On a multi-thread runtime, a lone call whose read at once finds
    /// nothing (the server answers only after a while) is woken by its
    /// answer and reads it itself: its first wait relies on the poll of the
    /// pipe it made before its write, and polls it no more.
    #[test]
    fn on_a_multi_thread_runtime_a_late_answer_wakes_the_lone_call_that_led() {
        let rt = one_worker_runtime();
        rt.block_on(async {
            let late = format!("sleep 0.3; exec sed -u '{ANSWER_EVERY_LINE}'");
            let (process, c) = connected_to(&ServerConfig::new(["sh", "-c", &late]));
            let args = Map::new();
            let empty = Body::Call(spear_capabilities::CallResult::new(Vec::new()));
            assert_eq!(c.request_call("t", &args).await.expect("answered"), empty);
            let credit = c.read_now.credit.load(Ordering::Relaxed);
            assert_eq!(credit, HIT_WORTH - 1, "the read at once found nothing");
            let handed_on = lock(&c.shared).handed_on;
            close(process, c).await;
            assert_eq!(handed_on, 0, "the reader task read the answer");
        });
    }

    /// Within a runtime with one worker: a connection to a server answering
    /// every request at once, with the server, the caller's thread and the
    /// runtime's worker all on one CPU, as the yardstick has them.
    async fn connected_on_one_cpu() -> (Arc<ServerProcess>, Connection) {
        connected_on_one_cpu_to(&["sed", "-u", ANSWER_EVERY_LINE]).await
    }

    /// [`connected_on_one_cpu`] to the server `command`.
    async fn connected_on_one_cpu_to(command: &[&str]) -> (Arc<ServerProcess>, Connection) {
        let allowed = rustix::thread::sched_getaffinity(None).expect("the affinity");
        let cpu = (0..rustix::thread::CpuSet::MAX_CPU)
            .find(|&c| allowed.is_set(c))
            .expect("a CPU");
        let mut one = rustix::thread::CpuSet::new();
        one.set(cpu);
        let mut pinned = vec!["taskset".to_owned(), "-c".to_owned(), cpu.to_string()];
        pinned.extend(command.iter().map(|&a| a.to_owned()));
        let server = ServerConfig::new(pinned);
        let connected = connected_to(&server);
        // The caller's thread and the runtime's worker on the server's
        // CPU; pinned only now, so that no thread started for the process
        // as a whole (the spawner) inherits the pin.
        rustix::thread::sched_setaffinity(None, &one).expect("pinned");
        let worker = tokio::spawn(async move { rustix::thread::sched_setaffinity(None, &one) });
        worker.await.expect("ran").expect("pinned");
        connected
    }

    /// A multi-thread runtime with one worker: the caller's thread (in
    /// `block_on`) and the worker are two threads, as `#[tokio::main]` on a
    /// machine with one CPU would have.
    fn one_worker_runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime")
    }

    /// A lone call is one with nothing else in flight that follows another
    /// such: the first request after a batch of calls in flight finds
    /// nothing in flight (their callers took their answers first), yet it
    /// is the first of the next batch.
    #[tokio::test]
    async fn the_first_request_after_calls_in_flight_is_not_alone() {
        let (process, c) = connected();
        let p = json!({});
        assert!(sent_alone(&c).await, "the first call");
        assert!(sent_alone(&c).await, "a call after a lone one");
        let answers = tokio::join!(
            c.request("x", &p),
            c.request("x", &p),
            c.request("x", &p),
            c.request("x", &p),
        );
        for answer in [answers.0, answers.1, answers.2, answers.3] {
            answer.expect("answered");
        }
        assert!(!sent_alone(&c).await, "the first call after four in flight");
        assert!(sent_alone(&c).await, "the next one");
        close(process, c).await;
    }

    /// A waker that wakes nobody, one of its own per `Arc`.
    struct Nobody;

    impl std::task::Wake for Nobody {
        fn wake(self: Arc<Self>) {}
    }

    #[test]
    fn the_same_caller_is_told_by_its_waker() {
        let r = ReadNow::new();
        let (a, b) = (Waker::from(Arc::new(Nobody)), Waker::from(Arc::new(Nobody)));
        assert!(!r.same_caller(&a), "the first caller");
        assert!(r.same_caller(&a), "the same again");
        assert!(r.same_caller(&a.clone()), "a clone of its waker");
        assert!(!r.same_caller(&b), "another");
        assert!(!r.same_caller(&a), "the first after another");
    }

    #[test]
    fn a_run_of_one_callers_lone_calls_gives_way_but_once_in_a_long_run() {
        let r = ReadNow::new();
        let (a, b) = (Waker::from(Arc::new(Nobody)), Waker::from(Arc::new(Nobody)));
        assert!(!r.gives_way(&a), "the first caller");
        let run = (0..LONGEST_RUN).take_while(|_| r.gives_way(&a)).count();
        assert_eq!(run, LONGEST_RUN as usize, "a whole run");
        assert!(!r.gives_way(&a), "the one after the longest run");
        assert!(r.gives_way(&a), "then a new run");
        assert!(!r.gives_way(&b), "another caller");
        assert!(r.gives_way(&b), "and its run");
    }

    /// On a current-thread runtime, one caller's lone calls in a row give
    /// up the thread before each read at once but the first; calls started
    /// together, each with a waker of its own, do not, so they still go in
    /// one write rather than one at a time.
    #[tokio::test]
    async fn on_a_current_thread_runtime_only_a_run_of_one_callers_lone_calls_yields() {
        let (process, c) = connected();
        let p = json!({});
        for _ in 0..3 {
            c.request("x", &p).await.expect("answered");
        }
        // The starting credit lets the first calls read at once, found or not.
        assert_eq!(c.read_now.yields.load(Ordering::Relaxed), 2);
        c.read_now.credit.store(MOST_CREDIT, Ordering::Relaxed);
        eight_together(&c).await;
        assert_eq!(
            c.read_now.yields.load(Ordering::Relaxed),
            2,
            "none for the 8"
        );
        close(process, c).await;
    }

    /// On a multi-thread runtime, calls started together do not take the
    /// pipe out of the event loop, even after a lone call found its answer
    /// at once: the reader task reads for them.
    #[test]
    fn on_a_multi_thread_runtime_calls_started_together_leave_the_pipe_in_the_event_loop() {
        one_worker_runtime().block_on(async {
            let (process, c) = connected();
            let p = json!({});
            c.request("x", &p).await.expect("answered");
            c.read_now.credit.store(MOST_CREDIT, Ordering::Relaxed);
            eight_together(&c).await;
            assert_eq!(c.read_now.yields.load(Ordering::Relaxed), 0);
            assert!(!c.inbox.unwatched(), "the pipe is in the event loop");
            close(process, c).await;
        });
    }

    /// `total` requests with `window` in flight, each polled in turn by a
    /// `FuturesUnordered` with a waker of its own, as the yardstick makes
    /// its calls in flight; all answered.
    async fn in_flight(c: &Connection, total: usize, window: usize) {
        let p = json!({});
        let calls =
            futures::StreamExt::map(futures::stream::iter(0..total), |_| c.request("x", &p));
        let mut answers = futures::StreamExt::buffer_unordered(calls, window);
        let mut answered = 0;
        while let Some(answer) = futures::StreamExt::next(&mut answers).await {
            answer.expect("answered");
            answered += 1;
        }
        assert_eq!(answered, total);
    }

    /// On a multi-thread runtime, with the server and the client's threads
    /// on one CPU, the request that writes a batch of calls in flight reads
    /// their answers, out of the event loop.
    #[test]
    fn on_a_multi_thread_runtime_the_request_that_writes_a_batch_reads_its_answers() {
        one_worker_runtime().block_on(async {
            let (process, c) = connected_on_one_cpu().await;
            // On a busy machine the yield may give the CPU to another
            // process, not the server, and the read miss: then one batch
            // in 128 tries again.
            let batches = || c.read_now.batches_out.load(Ordering::Relaxed);
            for _ in 0..25 {
                in_flight(&c, 800, 8).await;
                if batches() > 0 {
                    break;
                }
            }
            let batches = batches();
            close(process, c).await;
            assert!(
                batches > 0,
                "no batch was read by its writer, of 2 500 or more"
            );
        });
    }

    /// On a multi-thread runtime, callers joined in one future, who share
    /// its waker, go in flight together even after one caller's run of lone
    /// calls: the call after a long run lets the others start theirs before
    /// its read.
    #[test]
    fn on_a_multi_thread_runtime_callers_joined_in_one_future_go_in_flight_together() {
        one_worker_runtime().block_on(async {
            let (process, c) = connected_on_one_cpu().await;
            let p = json!({});
            for _ in 0..300 {
                c.request("x", &p).await.expect("answered");
            }
            let before = c.read_now.crowded.load(Ordering::Relaxed);
            let left = AtomicUsize::new(800);
            let take = || {
                left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                    .is_ok()
            };
            futures::future::join_all((0..8).map(|_| async {
                while take() {
                    c.request("x", &p).await.expect("answered");
                }
            }))
            .await;
            // At most a run of 128 goes alone before the others join.
            let crowded = c.read_now.crowded.load(Ordering::Relaxed) - before;
            close(process, c).await;
            assert!(
                crowded >= 400,
                "{crowded} of 800 calls went with others in flight"
            );
        });
    }

    /// A batch read that leaves a request unanswered spends the credit of
    /// such reads, and the reader task reads that answer (with the pipe
    /// back in the event loop: put back at once, or by the reader task's
    /// clock, which this test cannot tell apart).
    #[test]
    fn a_batch_read_that_leaves_an_answer_unread_hands_it_to_the_reader_task() {
        // Answers each line, the one of a request named "slow" after a while.
        let script = r#"while IFS= read -r l; do
            case "$l" in *'"slow"'*) sleep 0.3;; esac
            id=$(printf '%s' "$l" | sed 's/.*"id":\([0-9]*\).*/\1/')
            printf '{"jsonrpc":"2.0","id":%s,"result":{}}\n' "$id"
        done"#;
        one_worker_runtime().block_on(async {
            let (process, c) = connected_on_one_cpu_to(&["sh", "-c", script]).await;
            let p = json!({});
            // As after calls in flight, the next request is not alone: it
            // starts the outbox's queue, and the slow one joins it (set
            // here, since on a busy machine the last calls in flight may
            // each have gone alone).
            lock(&c.shared).crowded = true;
            c.batch_out.credit.store(MOST_CREDIT, Ordering::Relaxed);
            let mut first = Box::pin(c.request("x", &p));
            let mut slow = Box::pin(c.request("slow", &p));
            let waker = Waker::from(Arc::new(Nobody));
            let mut cx = Context::from_waker(&waker);
            // The first starts the queue and yields; the slow one joins.
            assert!(first.as_mut().poll(&mut cx).is_pending());
            assert!(slow.as_mut().poll(&mut cx).is_pending());
            first.await.expect("answered");
            assert!(!c.inbox.unwatched(), "the pipe is back for the slow one");
            assert_eq!(c.batch_out.credit.load(Ordering::Relaxed), 0, "spent");
            slow.await.expect("answered");
            close(process, c).await;
        });
    }

    /// A request that starts a batch read out of the event loop and stops
    /// waiting before it writes the batch writes it, and leaves the
    /// requests that joined it to the reader task.
    #[test]
    fn a_batch_whose_writer_stops_waiting_is_written_and_read_by_the_reader_task() {
        one_worker_runtime().block_on(async {
            let (process, c) = connected_on_one_cpu().await;
            let p = json!({});
            // As in the test before.
            lock(&c.shared).crowded = true;
            c.batch_out.credit.store(MOST_CREDIT, Ordering::Relaxed);
            let mut first = Box::pin(c.request("x", &p));
            let mut joined = Box::pin(c.request("x", &p));
            let waker = Waker::from(Arc::new(Nobody));
            let mut cx = Context::from_waker(&waker);
            assert!(first.as_mut().poll(&mut cx).is_pending());
            assert!(c.inbox.unwatched(), "the batch's pipe is out");
            assert!(joined.as_mut().poll(&mut cx).is_pending());
            drop(first);
            assert!(
                !c.inbox.unwatched(),
                "the pipe is back for the one that joined"
            );
            joined.await.expect("answered");
            close(process, c).await;
        });
    }

    /// Eight requests started together, each polled in turn by a
    /// `FuturesUnordered` with a waker of its own, as the yardstick's
    /// calls in flight are; all answered.
    async fn eight_together(c: &Connection) {
        let p = json!({});
        let mut together: futures::stream::FuturesUnordered<_> =
            (0..8).map(|_| c.request("x", &p)).collect();
        let mut answered = 0;
        while let Some(answer) = futures::StreamExt::next(&mut together).await {
            answer.expect("answered");
            answered += 1;
        }
        assert_eq!(answered, 8);
    }

    /// Takes the pipe out of the event loop as a lone call does, with
    /// nothing in flight; true if it is out.
    fn pipe_taken_out(c: &Connection) -> bool {
        assert!(lock(&c.shared).pending.is_empty());
        c.inbox.unwatch() && c.inbox.unwatched()
    }

    /// Waits up to 10 s for `done`.
    async fn eventually(mut done: impl FnMut() -> bool) -> bool {
        for _ in 0..1000 {
            if done() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        done()
    }

    /// With the pipe out of the event loop and no call reading it, what the
    /// server says unasked is still read: the reader task puts the pipe
    /// back once no lone call has read it for a while.
    #[test]
    fn out_of_the_event_loop_what_the_server_says_unasked_is_read_in_a_while() {
        one_worker_runtime().block_on(async {
            let later = "sleep 0.3; echo not json; exec cat >/dev/null";
            let (process, c) = connected_to(&ServerConfig::new(["sh", "-c", later]));
            assert!(pipe_taken_out(&c));
            assert!(
                eventually(|| c.stats().junk_lines == 1).await,
                "the line was read"
            );
            assert!(!c.inbox.unwatched(), "the pipe is back in the event loop");
            close(process, c).await;
        });
    }

    /// A read at once hands out at most `MOST_LINES_NOW` lines, and the
    /// rest to the reader task, with the pipe back in the event loop: a
    /// server writing without end cannot keep a caller in its read.
    #[test]
    fn a_read_at_once_stops_after_so_many_lines_and_the_reader_task_reads_the_rest() {
        one_worker_runtime().block_on(async {
            let flood = "sleep 0.2; yes not-json | head -n 3000; exec cat >/dev/null";
            let (process, c) = connected_to(&ServerConfig::new(["sh", "-c", flood]));
            // Out of the event loop, and kept out: nobody reads meanwhile.
            let reading = c.inbox.reading_out();
            assert!(pipe_taken_out(&c));
            // All 3 000 lines (24 000 bytes) fit in the pipe at once.
            tokio::time::sleep(Duration::from_millis(1500)).await;
            assert_eq!(c.stats().junk_lines, 0, "nothing read yet");
            let mut handed = 0;
            let none = c.inbox.read_now(true, |line, shape| {
                handed += 1;
                handle_line(&c.shared, &c.out, line, shape, None)
            });
            assert!(none.is_none());
            drop(reading);
            assert_eq!(handed, 1024, "lines handed out at once");
            assert!(!c.inbox.unwatched(), "the pipe is back in the event loop");
            assert!(
                eventually(|| c.stats().junk_lines == 3000).await,
                "the reader task read the rest"
            );
            close(process, c).await;
        });
    }

    /// With the pipe out of the event loop, the server's end is seen.
    #[test]
    fn out_of_the_event_loop_the_servers_end_is_seen() {
        one_worker_runtime().block_on(async {
            let (process, c) = connected_to(&ServerConfig::new(["sh", "-c", "sleep 0.3"]));
            assert!(pipe_taken_out(&c));
            assert!(
                eventually(|| c.failure().is_some()).await,
                "the connection failed"
            );
            close(process, c).await;
        });
    }

    /// With the pipe out of the event loop, requests in flight together
    /// are answered: the second puts it back for the reader task.
    #[test]
    fn out_of_the_event_loop_requests_in_flight_together_are_answered() {
        one_worker_runtime().block_on(async {
            let (process, c) = connected();
            let p = json!({});
            for _ in 0..20 {
                assert!(pipe_taken_out(&c));
                let (a, b, x) =
                    tokio::join!(c.request("x", &p), c.request("x", &p), c.request("x", &p));
                for answer in [a, b, x] {
                    answer.expect("answered");
                }
            }
            close(process, c).await;
        });
    }

    /// On a multi-thread runtime, with the server and the client's threads
    /// on one CPU, one caller's lone calls in a row read their answers with
    /// the pipe out of the event loop, after giving the server the CPU.
    #[test]
    fn on_a_multi_thread_runtime_a_run_of_lone_calls_reads_out_of_the_event_loop() {
        one_worker_runtime().block_on(async {
            let (process, c) = connected_on_one_cpu().await;
            for _ in 0..500 {
                c.request("x", &json!({})).await.expect("answered");
            }
            let out = c.read_now.out_of_loop.load(Ordering::Relaxed);
            close(process, c).await;
            assert!(out > 0, "no answer was read out of the event loop, of 500");
        });
    }
}
