//! Standard output that may close under us (`... | head -3`), the
//! CLI's own lines on standard error, and the signals that end the CLI:
//! a closed output and a signal both stop every provider through the
//! normal close path before the process exits.
//!
//! `--json` output is written by [`json`] alone: the core's
//! [`json_text`], so that whatever a server wrote reaches a terminal as
//! JSON escapes, never as the characters themselves.

use std::io::Write;
use std::sync::Mutex;

use serde::Serialize;
use spear_capabilities::Session;
use spear_capabilities::internals::framing::json_text;

/// Standard output could not be written: the reader went away (a broken
/// pipe), or another error, already said on stderr.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Closed {
    /// The reader went away, rather than any other write error.
    pub(crate) broken_pipe: bool,
}

/// Writes `text` to standard output and flushes it.
pub(crate) fn emit(text: &str) -> Result<(), Closed> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| {
            let broken_pipe = e.kind() == std::io::ErrorKind::BrokenPipe;
            if !broken_pipe {
                tell(format_args!("cannot write to standard output: {e}"));
            }
            Closed { broken_pipe }
        })
}

/// `value` as one line of JSON on standard output, every character a
/// terminal would hide or act on written as a JSON escape: the same JSON
/// to a script, nothing hidden to a person.
pub(crate) fn json<T: Serialize + ?Sized>(value: &T) -> Result<(), Closed> {
    emit(&format!("{}\n", json_text(value)))
}

/// Says `message` on standard error as the CLI's own line:
/// `spear-capabilities: <message>`.
pub(crate) fn tell(message: impl std::fmt::Display) {
    eprintln!("spear-capabilities: {message}");
}

/// `println!` that returns [`Closed`] instead of panicking.
macro_rules! out {
    () => { $crate::out::emit("\n") };
    ($($arg:tt)*) => { $crate::out::emit(&format!("{}\n", format_args!($($arg)*))) };
}

/// `print!` that returns [`Closed`] instead of panicking.
macro_rules! out_raw {
    ($($arg:tt)*) => { $crate::out::emit(&format!($($arg)*)) };
}

pub(crate) use {out, out_raw};

/// Every session this process opened, for a signal to close.
static OPEN: Mutex<Vec<Session>> = Mutex::new(Vec::new());

/// Closes under way, each a task of its own: a signal that arrives while
/// the command closes its session waits for that close instead of cutting
/// it short (a second `close` of a session returns at once).
static CLOSING: Mutex<Vec<tokio::task::JoinHandle<()>>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Remembers `session` so that a signal stops its providers.
pub(crate) fn opened(session: &Session) {
    lock(&OPEN).push(session.clone());
}

/// Closes `session` (each provider: close stdin, wait, SIGTERM its group,
/// SIGKILL, reap) in a task that a signal cannot cut short.
pub(crate) async fn close(session: Session) {
    let pending = session.stops_pending();
    if pending > 0 && on_terminal() {
        tell(format_args!(
            "waiting for {pending} stopping server{} to finish (cancelled, stdin closed, then SIGTERM, then SIGKILL; Ctrl-C ends {} at once)",
            if pending == 1 { "" } else { "s" },
            if pending == 1 { "it" } else { "them" },
        ));
    }
    let (closed, done) = tokio::sync::oneshot::channel();
    lock(&CLOSING).push(tokio::spawn(async move {
        session.close().await;
        let _ = closed.send(());
    }));
    let _ = done.await;
}

/// Says on a terminal that the servers are being stopped, and how to end
/// them at once.
pub(crate) fn say_stopping() {
    if on_terminal() && !lock(&OPEN).is_empty() {
        tell("stopping the servers (Ctrl-C again ends them at once)");
    }
}

/// Whether standard error is a terminal a person reads.
pub(crate) fn on_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("TERM").is_some_and(|t| t != "dumb")
}

/// Closes every session opened, and waits for every close under way.
pub(crate) async fn close_all() {
    let open = std::mem::take(&mut *lock(&OPEN));
    for session in open {
        lock(&CLOSING).push(tokio::spawn(async move { session.close().await }));
    }
    let closing = std::mem::take(&mut *lock(&CLOSING));
    futures::future::join_all(closing).await;
}

/// The first of SIGINT, SIGTERM and SIGHUP, as the exit status a shell
/// expects of a program it ended: 130, 143, 129.
pub(crate) struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl std::fmt::Debug for Signals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signals")
    }
}

impl Signals {
    /// Takes over the three signals; must run inside the runtime.
    pub(crate) fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// Waits for one, and returns 128 + its number.
    pub(crate) async fn first(&mut self) -> u8 {
        tokio::select! {
            _ = self.int.recv() => 130,
            _ = self.term.recv() => 143,
            _ = self.hup.recv() => 129,
        }
    }
}
