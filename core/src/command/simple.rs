//! The fast path for a line of simple words.
//!
//! Most `spear-capability` lines are plain words and one single-quoted JSON
//! object, separated by blanks: the form the manual teaches. For such a line
//! the lexer's answer is known without running it: every token is a word, the
//! first word is the only one in command position, and each word's text is its
//! plain characters and the bodies of its single quotes, in order. So the
//! line is split here, with no tokens, frames or text buffers, and anything
//! else (a character that means something to a shell outside single quotes,
//! an unclosed quote, a line break inside one, more words than any command
//! has) is left to the lexer.
//!
//! The property tests compare [`recognize`](super::recognize), which takes
//! this path, with [`recognize_unfiltered`](super::recognize_unfiltered),
//! which never does.

use std::borrow::Cow;

/// More words than this after the name and the line goes to the lexer. A
/// command has at most three (verb, id, arguments); one more is enough to
/// refuse it.
pub(super) const MAX_WORDS: usize = 4;

const PLAIN: u8 = 0;
const BLANK: u8 = 1;
const QUOTE: u8 = 2;
/// Means something to a shell outside single quotes: the lexer's unquoted
/// specials but the blanks and the single quote, and `#` (a comment at the
/// start of a word).
const OTHER: u8 = 3;

/// What each byte is to a simple line.
const CLASS: [u8; 256] = {
    let mut table = [PLAIN; 256];
    table[b' ' as usize] = BLANK;
    table[b'\t' as usize] = BLANK;
    table[b'\'' as usize] = QUOTE;
    let other = b"\r\n\"\\$`;&|()<>#";
    let mut i = 0;
    while i < other.len() {
        table[other[i] as usize] = OTHER;
        i += 1;
    }
    table
};

fn class(bytes: &[u8], at: usize) -> u8 {
    CLASS[usize::from(bytes[at])]
}

/// The words after the name of a simple line whose first word is
/// `spear-capability`, and how many there are; `None` for any other line
/// (the lexer decides those).
pub(super) fn command_words(line: &str) -> Option<([Cow<'_, str>; MAX_WORDS], usize)> {
    let bytes = line.as_bytes();
    let mut at = 0;
    while at < bytes.len() && class(bytes, at) == BLANK {
        at += 1;
    }
    // A simple first word that becomes the name starts with its `s` or a
    // quote: most other lines are turned away here, on their first byte.
    if !matches!(bytes.get(at), Some(b's' | b'\'')) || word(line, &mut at)? != super::COMMAND_NAME {
        return None;
    }
    let mut words: [Cow<'_, str>; MAX_WORDS] = Default::default();
    let mut count = 0;
    loop {
        while at < bytes.len() && class(bytes, at) == BLANK {
            at += 1;
        }
        if at == bytes.len() {
            return Some((words, count));
        }
        if count == MAX_WORDS {
            return None;
        }
        words[count] = word(line, &mut at)?;
        count += 1;
    }
}

/// The word that starts at or after `at` (after blanks), with its quotes
/// removed, moving `at` past it; `None` when the line is not simple there.
fn word<'a>(line: &'a str, at: &mut usize) -> Option<Cow<'a, str>> {
    let bytes = line.as_bytes();
    while *at < bytes.len() && class(bytes, *at) == BLANK {
        *at += 1;
    }
    let mut text: Option<Cow<'a, str>> = None;
    while *at < bytes.len() {
        let piece = match class(bytes, *at) {
            BLANK => break,
            // A quoted line break is the lexer's (the command must stand
            // on one line): one search finds the closing quote or it.
            QUOTE => {
                let open = *at;
                let close = open + 1 + memchr::memchr2(b'\'', b'\n', &bytes[open + 1..])?;
                if bytes[close] == b'\n' {
                    return None;
                }
                *at = close + 1;
                &line[open + 1..close]
            }
            PLAIN => {
                let start = *at;
                *at += bytes[start..]
                    .iter()
                    .position(|&b| CLASS[usize::from(b)] != PLAIN)
                    .unwrap_or(bytes.len() - start);
                &line[start..*at]
            }
            _ => return None,
        };
        text = Some(match text {
            None => Cow::Borrowed(piece),
            Some(mut joined) => {
                joined.to_mut().push_str(piece);
                joined
            }
        });
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &str) -> Option<Vec<String>> {
        command_words(line).map(|(w, n)| w[..n].iter().map(|c| c.to_string()).collect())
    }

    #[test]
    fn plain_words_and_single_quotes_are_split_as_a_shell_splits_them() {
        assert_eq!(
            split("  spear-capability\tinvoke a/b '{\"q\": \"x y\"}' "),
            Some(vec![
                "invoke".into(),
                "a/b".into(),
                "{\"q\": \"x y\"}".into()
            ])
        );
        assert_eq!(
            split("sp'ear-c'apability a'b c'd '' x''"),
            Some(vec!["ab cd".into(), "".into(), "x".into()])
        );
        assert_eq!(split(" spear-capability \t "), Some(vec![]));
        assert_eq!(
            split("spear-capability é 日本 ~*{a,b} x=1!"),
            Some(vec![
                "é".into(),
                "日本".into(),
                "~*{a,b}".into(),
                "x=1!".into()
            ])
        );
    }

    #[test]
    fn other_first_words_and_anything_a_shell_reads_otherwise_go_to_the_lexer() {
        for tail in [
            "\"b\"",
            "\\b",
            "$b",
            "`b`",
            "a; b",
            "a & b",
            "a | b",
            "(b)",
            "< b",
            "> b",
            "# b",
            "a#b",
            "a\nb",
            "a\rb",
            "'b",
            "a b c d e",
        ] {
            let line = format!("spear-capability {tail}");
            assert_eq!(split(&line), None, "{line:?}");
        }
        for line in [
            "",
            " ",
            "ls",
            "spear-capabilit list",
            "x spear-capability list",
            "''",
        ] {
            assert_eq!(split(line), None, "{line:?}");
        }
        assert_eq!(
            split("spear-capability 'b;c$d\"e\\f`g\rh' i").map(|w| w.len()),
            Some(2)
        );
        assert_eq!(split("spear-capability invoke a/b '{\n}'"), None);
    }
}
