//! The compile of one regular expression at listing: within its size
//! limit, as the schema's full compile would compile it, and no more.

use super::{MAX_PATTERN_SIZE, Which};
use crate::compiled::{guarded, options};
use crate::framing::one_line;

/// Why a pattern did not compile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failed {
    /// Over the size limit.
    Size,
    /// Invalid, or the compiler failed.
    Invalid,
}

/// The compiled size of `pattern`, if it compiles within `limit` bytes.
/// Translated as jsonschema translates it, only its forward NFA is built
/// (what the engine's size limit bounds), several times cheaper than the
/// whole engine; a pattern that needs more (lookaround, backreferences)
/// is compiled whole, under the same limit.
pub(super) fn compile_pattern(pattern: &str, limit: usize) -> Result<usize, Failed> {
    use regex_automata::nfa::thompson;
    let nfa = guarded(|| {
        let translated = jsonschema_regex::to_rust_regex(pattern).ok()?;
        let config = thompson::Config::new().nfa_size_limit(Some(limit));
        Some(
            thompson::Compiler::new()
                .configure(config)
                .build(&translated),
        )
    });
    match nfa {
        Some(Some(Ok(nfa))) => Ok(nfa.memory_usage()),
        Some(Some(Err(e))) if e.size_limit().is_some() => Err(Failed::Size),
        None => Err(Failed::Invalid),
        // Syntax only fancy-regex knows, or invalid: its engine decides.
        Some(Some(Err(_)) | None) => compile_whole_pattern(pattern, limit),
    }
}

/// Why `pattern`, of `which` schema, cannot be used.
pub(super) fn pattern_problem(which: Which, pattern: &str) -> String {
    format!(
        "the {which}'s pattern {} does not compile: it is invalid, or larger than the budget of {MAX_PATTERN_SIZE} bytes",
        one_line(&format!("{pattern:?}"), 80)
    )
}

/// Compiles `pattern` as the schema's full compile does, under `limit`; its
/// size is not known, so it counts as the limit.
fn compile_whole_pattern(pattern: &str, limit: usize) -> Result<usize, Failed> {
    let schema = serde_json::json!({ "pattern": pattern });
    match guarded(|| options(limit).build(&schema).map(drop)) {
        Some(Ok(())) => Ok(limit),
        Some(Err(_)) | None => Err(Failed::Invalid),
    }
}
