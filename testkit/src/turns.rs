//! Asking a turn what SPEAR answers, in tests.

use spear_capabilities::{Answer, Turn};

/// SPEAR's answer to `line` typed into `turn`'s terminal.
///
/// # Panics
/// When the line is not a `spear-capability` command (the shell would run
/// it), naming the line: a test that calls this expects SPEAR to answer.
pub async fn ours(turn: &Turn, line: &str) -> Answer {
    match turn.answer(line).await {
        Some(answer) => answer,
        None => panic!("not recognised as a spear-capability command: {line:?}"),
    }
}
