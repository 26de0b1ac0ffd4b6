//! Issue 33.4, a turn you can type into: `turn` on a terminal answers each
//! line as it is entered, after a prompt; piped input is answered as
//! before (`cli_turn.rs`). The terminal is util-linux `script`'s
//! pseudo-terminal, fed through its standard input one line at a time.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CLI: &str = env!("CARGO_BIN_EXE_spear-capabilities");

/// How long one answer may take on a busy machine (the first starts the
/// example server).
const PATIENCE: Duration = Duration::from_secs(30);

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `turn` on the example registry, run by `script` under a terminal with
/// `shell_tail` after the command (e.g. a redirection of its stdout); what
/// the terminal receives is gathered as it comes.
struct Typed {
    child: Child,
    input: ChildStdin,
    seen: Arc<Mutex<String>>,
}

impl Typed {
    fn start(shell_tail: &str) -> Self {
        let exe = Path::new(CLI);
        assert!(
            exe.with_file_name("spear-example-server").exists(),
            "build the workspace first (cargo build --workspace)"
        );
        let line = format!(
            "'{CLI}' turn --capabilities examples/capabilities.json --project demo{shell_tail}"
        );
        let mut child = Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .current_dir(root())
            .env_remove("SPEAR_CAPABILITIES_FILE")
            .env("TERM", "dumb")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("util-linux `script` runs");
        let input = child.stdin.take().expect("stdin");
        let mut output = child.stdout.take().expect("stdout");
        let seen = Arc::new(Mutex::new(String::new()));
        let into = Arc::clone(&seen);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = output.read(&mut buf) {
                if n == 0 {
                    break;
                }
                into.lock()
                    .expect("lock")
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Typed { child, input, seen }
    }

    fn seen(&self) -> String {
        self.seen.lock().expect("lock").clone()
    }

    /// Waits until the terminal has received `want` `times` times in all.
    fn wait_for(&self, want: &str, times: usize) {
        let deadline = Instant::now() + PATIENCE;
        while self.seen().matches(want).count() < times {
            assert!(
                Instant::now() < deadline,
                "no {want:?} (x{times}) within {PATIENCE:?}, while standard input stays open: {:?}",
                self.seen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn type_line(&mut self, line: &str) {
        self.input
            .write_all(line.as_bytes())
            .and_then(|()| self.input.flush())
            .expect("type");
    }

    /// Ctrl-D at the start of a line: the end of the turn's input.
    fn end(mut self) -> (Option<i32>, String) {
        self.type_line("\x04");
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                // The reader thread takes what is left.
                std::thread::sleep(Duration::from_millis(100));
                return (status.code(), self.seen());
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("Ctrl-D did not end the turn: {:?}", self.seen());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Each typed line is answered before the next is typed, with standard
/// input still open: a prompt, the answer and its status, a prompt again;
/// the command line is on the terminal once (its own echo), and Ctrl-D
/// ends the turn with status 0.
#[test]
fn a_turn_on_a_terminal_answers_each_line_as_it_is_entered() {
    let mut turn = Typed::start("");
    turn.wait_for("== what the turn is shown (exposure: whole) ==", 1);
    turn.wait_for("Ctrl-D ends the turn", 1);
    turn.wait_for("\n$ ", 1);

    turn.type_line("spear-capability describe notes/search_notes\n");
    turn.wait_for("notes/search_notes (READ): Search notes", 2);
    turn.wait_for("[ok]", 1);
    turn.wait_for("\n$ ", 2);

    turn.type_line("spear-capability invoke notes/search_notes '{\"query\": \"flaky\"}'\n");
    turn.wait_for("#2: Flaky test", 1);
    turn.wait_for("[ok]", 2);

    turn.type_line("ls\n");
    turn.wait_for("(not a spear-capability command: the shell runs it)", 1);

    let (code, seen) = turn.end();
    assert_eq!(code, Some(0), "{seen:?}");
    assert_eq!(
        seen.matches("spear-capability describe notes/search_notes")
            .count(),
        1,
        "the terminal's echo only, no second copy: {seen:?}"
    );
    assert!(
        seen.contains(
            "\r\n$ spear-capability describe notes/search_notes\r\nnotes/search_notes (READ)"
        ),
        "the prompt, the typed line, its answer: {seen:?}"
    );
}

/// Typed at a terminal with standard output sent to a file, the file is
/// the transcript piped input gives: each command line after `$ `, then its
/// answer.
#[test]
fn a_typed_turn_written_to_a_file_keeps_each_command_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("transcript.txt");
    let mut turn = Typed::start(&format!(" > '{}'", file.display()));
    turn.wait_for("Ctrl-D ends the turn", 1);
    turn.type_line("spear-capability describe notes/get_note\n");
    turn.wait_for("\n$ ", 2);
    let (code, seen) = turn.end();
    assert_eq!(code, Some(0), "{seen:?}");
    let transcript = std::fs::read_to_string(&file).expect("transcript");
    assert!(
        transcript.contains(
            "\n$ spear-capability describe notes/get_note\nnotes/get_note (READ): Read a note\n"
        ),
        "{transcript}"
    );
    assert!(transcript.ends_with("[ok]\n"), "{transcript}");
    assert!(
        !transcript.contains("Ctrl-D"),
        "the prompt is stderr's: {transcript}"
    );
}
