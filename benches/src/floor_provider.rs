//! The provider floor: a tokio client behind the [`Provider`] trait that
//! does nothing but what its design needs, to be driven as the shared
//! yardstick drives ours, a `call_tool` future per call under
//! `buffer_unordered` ([`crate::yardstick`]).
//!
//! Issue 15 lets a throughput target this machine's tokio cannot reach be
//! bounded by an async floor run the same way, with ours within 1.1x of it.
//! The async floor ([`crate::floor_async`]) is no such bound: it has one
//! writer future and one reader task and no future per call. This is the
//! async floor's design made per call: each call serializes its request
//! with serde_json into one shared outgoing buffer; the call that finds the
//! buffer empty yields once, so that the calls of the moment join, and
//! writes it all with one write; one reader task hands each answer line to
//! the slot of its id; the call decodes its own answer with serde_json.
//! Besides the yardstick's own costs, the calls pay the boxed future of
//! `#[async_trait]`, the map of pending ids, a lock per request and per
//! answer, a wake per answer (a hand-off between threads on the
//! multi-thread runtime) and serde_json both ways.
//!
//! It is the floor of that design, not of every design: a client whose
//! caller reads the pipe itself, or that writes and scans its JSON by hand,
//! can pay less.
//!
//! It leaves out all a real client needs beyond that: no timeouts, no
//! bound on a line's size, no answers to the server's own requests, no
//! `tools/list`, no validation beyond what decoding needs, no stderr. It
//! is cancel-safe only as far as the trait requires: a dropped call frees
//! its slot, and a flush its caller dropped is finished by a task.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::future::poll_fn;
use std::hash::{BuildHasherDefault, Hasher};
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};

use spear_capabilities::{CallRequest, CallResult, Error, ProviderInfo, ToolList};
use spear_capabilities::{Provider, async_trait};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::OwnedMutexGuard;
use tokio::task::JoinHandle;

use crate::floor::{invalid, result_answer};
use crate::floor_async::spawn_piped;

mod wire;

/// The provider kind's name, and the id every provider floor has.
const NAME: &str = "provider-floor";

/// One server, behind the [`Provider`] trait.
#[derive(Debug)]
pub struct ProviderFloor {
    conn: Arc<Conn>,
    reader: JoinHandle<()>,
    /// Taken by [`Provider::shutdown`].
    child: Mutex<Option<Child>>,
}

/// What the calls and the reader task share.
#[derive(Debug)]
struct Conn {
    state: Mutex<State>,
    /// Owned guards, so that a flush whose call was dropped keeps the pipe
    /// while a task finishes it.
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
}

#[derive(Debug)]
struct State {
    /// Requests not yet written; non-empty means a call owes their flush.
    out: Vec<u8>,
    /// The last written buffer, cleared, for `out` to become again.
    spare: Vec<u8>,
    next_id: u64,
    slots: HashMap<u64, Slot, BuildHasherDefault<IdHasher>>,
    /// Why no more calls can be answered.
    ended: Option<Ended>,
}

/// Hashes the ids we hand out, which come in sequence, by one multiplication
/// (Fibonacci hashing) instead of SipHash: about 500 instructions a call
/// less, and only lookups ever take an id the server chose.
#[derive(Debug, Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0 ^ u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

#[derive(Debug)]
enum Slot {
    /// Sent and not answered yet: the waker of the call's last poll.
    Waiting(Option<Waker>),
    /// The answer line, for the call to decode.
    Answered(Vec<u8>),
}

#[derive(Debug, Clone)]
enum Ended {
    ShutDown,
    /// The pipes failed or the server closed its stdout.
    Broken(String),
}

impl Ended {
    fn error(&self) -> Error {
        match self {
            Ended::ShutDown => Error::ShutDown {
                provider: NAME.into(),
            },
            Ended::Broken(why) => Error::Crashed {
                provider: NAME.into(),
                status: why.clone(),
                stderr: String::new(),
            },
        }
    }
}

impl ProviderFloor {
    /// Starts the server, completes the handshake and starts the reader task
    /// on the current runtime.
    ///
    /// # Errors
    /// When it cannot be spawned or answers the handshake wrongly.
    pub async fn start(fixture: &Path, args: &[&str]) -> io::Result<ProviderFloor> {
        let (child, mut stdin, stdout) = spawn_piped(fixture, args)?;
        let mut stdout = BufReader::with_capacity(64 * 1024, stdout);
        stdin
            .write_all(
                br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"provider-floor","version":"0"}}}
"#,
            )
            .await?;
        let mut line = Vec::with_capacity(1024);
        if stdout.read_until(b'\n', &mut line).await? == 0 {
            return Err(invalid("the server closed its stdout"));
        }
        let answer = result_answer(&line)?;
        if answer["result"]["protocolVersion"] != "2025-06-18" {
            return Err(invalid(format!("initialize answered {answer}")));
        }
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await?;
        let conn = Arc::new(Conn {
            state: Mutex::new(State {
                out: Vec::with_capacity(64 * 1024),
                spare: Vec::with_capacity(64 * 1024),
                next_id: 1,
                slots: HashMap::default(),
                ended: None,
            }),
            stdin: Arc::new(tokio::sync::Mutex::new(stdin)),
        });
        let reader = tokio::spawn(read_answers(Arc::clone(&conn), stdout));
        Ok(ProviderFloor {
            conn,
            reader,
            child: Mutex::new(Some(child)),
        })
    }

    /// How many calls hold a slot (sent and not yet taken by their call).
    pub fn pending(&self) -> usize {
        self.conn.lock().slots.len()
    }
}

impl Drop for ProviderFloor {
    fn drop(&mut self) {
        // The child is killed by `kill_on_drop`.
        self.reader.abort();
    }
}

impl Conn {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues one `tools/call` and gives it a slot; `true` when the caller
    /// found the buffer empty and so owes its flush.
    fn send(&self, request: &CallRequest) -> Result<(u64, bool), Error> {
        let mut st = self.lock();
        if let Some(ended) = &st.ended {
            return Err(ended.error());
        }
        let id = st.next_id;
        st.next_id += 1;
        let owes = st.out.is_empty();
        wire::push_call(&mut st.out, id, request)?;
        st.slots.insert(id, Slot::Waiting(None));
        Ok((id, owes))
    }

    /// Ends the connection: every waiting call is woken to its error.
    fn end(&self, why: Ended) {
        let wakers: Vec<Waker> = {
            let mut st = self.lock();
            if st.ended.is_none() {
                st.ended = Some(why);
            }
            st.slots
                .values_mut()
                .filter_map(|s| match s {
                    Slot::Waiting(w) => w.take(),
                    Slot::Answered(_) => None,
                })
                .collect()
        };
        wakers.into_iter().for_each(Waker::wake);
    }
}

/// A call's claim on its slot: dropped before the answer was taken, it
/// frees the slot, so a dropped call leaks nothing.
struct Pending<'a> {
    conn: &'a Conn,
    id: u64,
    taken: bool,
}

impl Pending<'_> {
    async fn answer(&mut self) -> Result<Vec<u8>, Error> {
        poll_fn(|cx| {
            let mut guard = self.conn.lock();
            let st = &mut *guard;
            let Entry::Occupied(mut slot) = st.slots.entry(self.id) else {
                unreachable!("a slot stays until its call takes it")
            };
            match slot.get_mut() {
                Slot::Answered(_) => {}
                Slot::Waiting(waker) => {
                    if let Some(ended) = &st.ended {
                        slot.remove();
                        self.taken = true;
                        return Poll::Ready(Err(ended.error()));
                    }
                    match waker {
                        Some(w) if w.will_wake(cx.waker()) => {}
                        _ => *waker = Some(cx.waker().clone()),
                    }
                    return Poll::Pending;
                }
            }
            self.taken = true;
            match slot.remove() {
                Slot::Answered(line) => Poll::Ready(Ok(line)),
                Slot::Waiting(_) => unreachable!("answered, as matched above"),
            }
        })
        .await
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.taken {
            self.conn.lock().slots.remove(&self.id);
        }
    }
}

/// The flush a call owes once it found the outgoing buffer empty: whoever
/// holds it writes every request queued by then. Dropped unpaid (its call
/// was dropped), it hands itself to a task, so the requests of the calls
/// that joined are still written, whole.
struct Flush {
    conn: Arc<Conn>,
    stdin: Option<OwnedMutexGuard<ChildStdin>>,
    buf: Option<Vec<u8>>,
    written: usize,
    paid: bool,
    /// Already the task's: dropped again, the runtime is going away.
    handed_over: bool,
}

impl Flush {
    fn new(conn: &Arc<Conn>) -> Flush {
        Flush {
            conn: Arc::clone(conn),
            stdin: None,
            buf: None,
            written: 0,
            paid: false,
            handed_over: false,
        }
    }

    async fn pay(&mut self) {
        let stdin = match &mut self.stdin {
            Some(stdin) => stdin,
            None => {
                let stdin = Arc::clone(&self.conn.stdin).lock_owned().await;
                self.stdin.insert(stdin)
            }
        };
        // Taken once the pipe is ours: the calls of the meantime join too.
        let buf = self.buf.get_or_insert_with(|| {
            let mut st = self.conn.lock();
            let spare = std::mem::take(&mut st.spare);
            std::mem::replace(&mut st.out, spare)
        });
        while self.written < buf.len() {
            match stdin.write(&buf[self.written..]).await {
                Ok(n) if n > 0 => self.written += n,
                Ok(_) => {
                    self.conn.end(Ended::Broken("its stdin is closed".into()));
                    break;
                }
                Err(e) => {
                    self.conn
                        .end(Ended::Broken(format!("writing its stdin failed: {e}")));
                    break;
                }
            }
        }
        self.stdin = None;
        if let Some(mut buf) = self.buf.take() {
            buf.clear();
            let mut st = self.conn.lock();
            if st.spare.capacity() < buf.capacity() {
                st.spare = buf;
            }
        }
        self.paid = true;
    }
}

impl Drop for Flush {
    fn drop(&mut self) {
        if self.paid {
            return;
        }
        let mut rest = Flush {
            conn: Arc::clone(&self.conn),
            stdin: self.stdin.take(),
            buf: self.buf.take(),
            written: self.written,
            paid: false,
            handed_over: true,
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) if !self.handed_over => {
                rt.spawn(async move { rest.pay().await });
            }
            _ => {
                rest.paid = true;
                rest.conn
                    .end(Ended::Broken("a flush was dropped with its runtime".into()));
            }
        }
    }
}

/// Reads answer lines and hands each to the slot of its id; lines with no
/// id of a waiting call (notifications, the server's requests, answers to
/// dropped calls) are skipped.
async fn read_answers(conn: Arc<Conn>, mut stdout: BufReader<ChildStdout>) {
    let mut line = Vec::with_capacity(1024);
    loop {
        line.clear();
        match stdout.read_until(b'\n', &mut line).await {
            Ok(0) => {
                conn.end(Ended::Broken("it closed its stdout".into()));
                return;
            }
            Ok(_) => {}
            Err(e) => {
                conn.end(Ended::Broken(format!("reading its stdout failed: {e}")));
                return;
            }
        }
        let Some(id) = wire::answer_id(&line) else {
            continue;
        };
        let waker = {
            let mut st = conn.lock();
            match st.slots.get_mut(&id) {
                Some(slot @ Slot::Waiting(_)) => {
                    match std::mem::replace(slot, Slot::Answered(line.to_vec())) {
                        Slot::Waiting(waker) => waker,
                        Slot::Answered(_) => None,
                    }
                }
                _ => None,
            }
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

#[async_trait]
impl Provider for ProviderFloor {
    fn id(&self) -> &str {
        NAME
    }

    fn info(&self) -> ProviderInfo {
        ProviderInfo::new(NAME)
    }

    async fn list_tools(&self) -> Result<ToolList, Error> {
        Err(Error::Protocol {
            provider: NAME.into(),
            message: "the provider floor does not list tools".into(),
            stderr: String::new(),
        })
    }

    async fn call_tool(&self, request: CallRequest) -> Result<CallResult, Error> {
        let (id, owes) = self.conn.send(&request)?;
        let mut pending = Pending {
            conn: &self.conn,
            id,
            taken: false,
        };
        if owes {
            let mut flush = Flush::new(&self.conn);
            tokio::task::yield_now().await;
            flush.pay().await;
        }
        let line = pending.answer().await?;
        wire::decode(&line, id, &request.tool)
    }

    fn failure(&self) -> Option<Error> {
        match &self.conn.lock().ended {
            Some(broken @ Ended::Broken(_)) => Some(broken.error()),
            _ => None,
        }
    }

    async fn shutdown(&self) -> Result<(), Error> {
        self.conn.end(Ended::ShutDown);
        self.reader.abort();
        let child = self
            .child
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut child) = child {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
        Ok(())
    }
}
