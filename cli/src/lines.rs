//! Where `turn` gets the command lines it answers: the `--command` values;
//! else standard input, read whole when it is a file or a pipe (today's
//! transcript, answered after the last line), or line by line with a
//! prompt when it is a terminal, each line answered as it is entered.
//!
//! Standard input is read off the runtime's threads, so that a signal is
//! still handled while nothing has been typed.

use std::io::{BufRead, IsTerminal, Write};

use tokio::sync::mpsc;

/// The prompt on a terminal, before each line: the `$ ` of the piped
/// transcript's `$ <command>`, after the blank line that parts answers
/// (none again after an empty line).
const PROMPT: &str = "\n$ ";

/// The command lines of a turn, one at a time.
#[derive(Debug)]
pub(crate) enum Lines {
    /// Given whole, in order: `--command` values or piped standard input.
    Given(std::vec::IntoIter<String>),
    /// Typed at a terminal: each line as the reader thread gets it.
    Typed(mpsc::Receiver<String>),
}

impl Lines {
    /// The `--command` values, else standard input as [`Lines`] says.
    pub(crate) async fn new(commands: Vec<String>) -> Self {
        if !commands.is_empty() {
            return Lines::Given(commands.into_iter());
        }
        if std::io::stdin().is_terminal() {
            return Lines::Typed(read_typed());
        }
        let piped = tokio::task::spawn_blocking(|| {
            std::io::stdin()
                .lock()
                .lines()
                .map_while(Result::ok)
                .filter(|l| !l.trim().is_empty())
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        Lines::Given(piped.into_iter())
    }

    /// Whether the lines are typed at a terminal, which echoes them.
    pub(crate) fn typed(&self) -> bool {
        matches!(self, Lines::Typed(_))
    }

    /// Says, on standard error, how to end a typed turn; nothing otherwise.
    pub(crate) fn say_how_to_end(&self) {
        if self.typed() {
            crate::out::tell("type the turn's command lines, one a line; Ctrl-D ends the turn");
        }
    }

    /// The next line; `None` at the end (Ctrl-D on a terminal). A typed
    /// line is asked for with [`PROMPT`] on standard error, and an empty one
    /// is asked for again.
    pub(crate) async fn next(&mut self) -> Option<String> {
        match self {
            Lines::Given(lines) => lines.next(),
            Lines::Typed(typed) => {
                let mut prompt = PROMPT;
                loop {
                    let mut stderr = std::io::stderr().lock();
                    let _ = stderr
                        .write_all(prompt.as_bytes())
                        .and_then(|()| stderr.flush());
                    drop(stderr);
                    let Some(line) = typed.recv().await else {
                        // Ctrl-D leaves the cursor after the prompt.
                        eprintln!();
                        return None;
                    };
                    if !line.trim().is_empty() {
                        return Some(line);
                    }
                    prompt = &PROMPT[1..];
                }
            }
        }
    }
}

/// Reads standard input line by line on a thread of its own, handing each
/// line over as soon as it is read; the channel closes at the end of input.
fn read_typed() -> mpsc::Receiver<String> {
    // One line ahead at most: the rest waits in the terminal's buffer.
    let (send, receive) = mpsc::channel(1);
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if send.blocking_send(line).is_err() {
                break;
            }
        }
    });
    receive
}
