//! Recognition: is this line a `spear-capability` command?

use super::lexer::lex;
use super::token::TokenKind;
use super::{COMMAND_NAME, Recognized, parse, prefilter, simple};

/// Decides whether SPEAR answers `command_line` or a shell runs it.
///
/// `spear-capability` counts where the SPEAR manual (3.6.2) says a shell
/// would run it: as the first word of the line, or as the first word after
/// an unquoted `;`, `&`, `|`, newline, `(`, backquote or `$(`, once quote
/// removal has made it exactly `spear-capability`. Recognized, the line is
/// parsed into a [`Command`](super::Command) or refused; see the module
/// docs.
///
/// Lines that cannot hold the name cost one scan of their bytes; lines of
/// plain words and single-quoted strings (the usual form of a command) are
/// split without the lexer; only the others are lexed. Time is linear in
/// the line's length.
pub fn recognize(command_line: &str) -> Recognized {
    if let Some((words, count)) = simple::command_words(command_line) {
        return Recognized::Ours(parse::command(&words[..count]));
    }
    if !prefilter::may_hold_name(command_line) {
        return Recognized::NotOurs;
    }
    recognize_unfiltered(command_line)
}

/// [`recognize`] without its fast paths (the pre-filter and the split of a
/// line of simple words): always lexes the whole line.
///
/// The answer is the same for every line; this exists so that tests and
/// benchmarks can check and measure the fast paths.
pub fn recognize_unfiltered(command_line: &str) -> Recognized {
    let lexed = lex(command_line);
    // Bodies the lexer did not read may run the name: a line that may hold
    // it is refused rather than guessed at.
    if lexed.nested_too_deep && prefilter::may_hold_name(command_line) {
        return Recognized::Ours(Err(parse::too_deep()));
    }
    let name = lexed
        .tokens
        .iter()
        .enumerate()
        .filter(|(_, t)| {
            matches!(
                t.kind,
                TokenKind::Word {
                    command_position: true,
                    ..
                }
            ) && lexed.text(t) == Some(COMMAND_NAME)
        })
        .min_by_key(|(_, t)| t.start)
        .map(|(i, _)| i);
    match name {
        Some(i) => Recognized::Ours(parse::parse(command_line, &lexed, i)),
        None => Recognized::NotOurs,
    }
}
