//! Counting tokens of what a turn is shown, to choose whole or index exposure.
//!
//! The count sits behind [`TokenCounter`] so SPEAR can plug in its model's
//! tokenizer. The default, [`EstimatedTokens`], needs no vocabulary: it cuts
//! the text into the pieces a BPE tokenizer's pre-tokenizer cuts it into and
//! counts each piece as one token, or more when it is long. Its error is
//! measured against OpenAI's o200k tokenizer, per server, over the tools of
//! six real MCP servers and the interop tests' Python SDK server
//! (`core/tests/tokens.rs`, which keeps it within 15% and never more than 5%
//! under; the figures are in `docs/performance.md`).

/// Counts the tokens of a text.
pub trait TokenCounter: Send + Sync {
    /// How many tokens `text` is, as the model will see it.
    fn count(&self, text: &str) -> usize;
}

/// The default estimate: one token per piece of the text, cut the way
/// o200k's pre-tokenizer cuts it (its regular expression, on ASCII
/// classes).
///
/// The pieces, each starting where the last ended:
///
/// - a **word**: a run of upper-case letters then a run of lower-case ones
///   (`additionalProperties` is two words, `JSONSchema` one), with the one
///   blank or punctuation mark just before it, if any;
/// - a **number**: a run of digits;
/// - **punctuation**: a run of ASCII characters that are not letters,
///   digits or white space, with the one blank just before it, if any;
/// - **white space** not taken into the piece after it;
/// - any other character, each on its own.
///
/// A word counts one token per 9 letters, a number one per three digits
/// (o200k's own cut), punctuation one per 3 characters (rounded up),
/// anything else one. A
/// non-ASCII character always counts one: more than o200k counts for
/// accented letters inside words, about what it counts for other scripts.
#[derive(Debug, Clone, Copy, Default)]
pub struct EstimatedTokens;

/// A word's letters per token: o200k has most words as one token and cuts
/// long or rare ones.
pub const WORD_LETTERS: usize = 9;
/// Punctuation characters per token: o200k has most runs of JSON's
/// punctuation (`":{"`, `"},"`) as one token.
pub(crate) const PUNCTUATION_CHARS: usize = 3;
/// Digits per token: o200k cuts numbers into threes.
const DIGITS: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Lower,
    Upper,
    Digit,
    /// Space, tab, vertical tab, form feed.
    Blank,
    Newline,
    /// ASCII that is not a letter, a digit or white space.
    Punctuation,
    /// The first byte of a non-ASCII character.
    Other,
    /// A later byte of a non-ASCII character.
    Continuation,
}

const CLASSES: [Class; 256] = {
    let mut table = [Class::Punctuation; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            b'a'..=b'z' => Class::Lower,
            b'A'..=b'Z' => Class::Upper,
            b'0'..=b'9' => Class::Digit,
            b' ' | b'\t' | 0x0b | 0x0c => Class::Blank,
            b'\n' | b'\r' => Class::Newline,
            0x80..=0xbf => Class::Continuation,
            0xc0..=0xff => Class::Other,
            _ => Class::Punctuation,
        };
        b += 1;
    }
    table
};

impl TokenCounter for EstimatedTokens {
    fn count(&self, text: &str) -> usize {
        let bytes = text.as_bytes();
        let class = |at: usize| bytes.get(at).map(|&b| CLASSES[usize::from(b)]);
        let run_of = |from: usize, wanted: &[Class]| {
            (from..bytes.len())
                .find(|&at| !class(at).is_some_and(|c| wanted.contains(&c)))
                .unwrap_or(bytes.len())
        };
        let mut tokens = 0;
        let mut at = 0;
        while let Some(first) = class(at) {
            // One blank or punctuation mark before a word belongs to it; one
            // blank before punctuation too.
            let start = match (first, class(at + 1)) {
                (Class::Blank | Class::Punctuation, Some(Class::Lower | Class::Upper))
                | (Class::Blank, Some(Class::Punctuation)) => at + 1,
                _ => at,
            };
            let (end, count) = match class(start).unwrap_or(first) {
                Class::Lower | Class::Upper => {
                    let end = run_of(run_of(start, &[Class::Upper]), &[Class::Lower]);
                    (end, (end - start).div_ceil(WORD_LETTERS))
                }
                Class::Digit => {
                    let end = run_of(start, &[Class::Digit]);
                    (end, (end - start).div_ceil(DIGITS))
                }
                Class::Punctuation => {
                    let end = run_of(start, &[Class::Punctuation]);
                    (end, (end - start).div_ceil(PUNCTUATION_CHARS))
                }
                Class::Blank | Class::Newline => {
                    (run_of(start, &[Class::Blank, Class::Newline]), 1)
                }
                Class::Other => (run_of(start + 1, &[Class::Continuation]), 1),
                // Never at a character's start; counted with its first byte.
                Class::Continuation => (start + 1, 0),
            };
            tokens += count;
            at = end;
        }
        tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(text: &str) -> usize {
        EstimatedTokens.count(text)
    }

    #[test]
    fn words_are_cut_at_case_and_long_ones_count_more() {
        assert_eq!(count(""), 0);
        assert_eq!(count("Returns the message"), 3);
        assert_eq!(count("maxLength"), 2);
        assert_eq!(count("additionalProperties"), 4, "ten letters each");
        assert_eq!(count("JSONSchema"), 2, "ten letters");
        assert_eq!(count("abcdefghi"), 1);
        assert_eq!(count("abcdefghij"), 2);
    }

    #[test]
    fn a_blank_or_a_mark_before_a_word_is_part_of_it() {
        assert_eq!(count(" the"), 1);
        assert_eq!(count("_thoughts"), 1);
        assert_eq!(count("  the"), 2, "the first blank is a piece of its own");
        assert_eq!(count("\nthe"), 2, "a newline is never taken in");
    }

    #[test]
    fn punctuation_counts_one_per_three_and_numbers_one_per_three_digits() {
        assert_eq!(
            count(r#"{"type":"string"}"#),
            5,
            "`{{\"`, `type`, `\":\"`, `string`, `\"}}`"
        );
        assert_eq!(count(" (x)"), 3, "` (` x `)`");
        assert_eq!(count("\"}},\""), 2);
        assert_eq!(count("9007199254740991"), 6);
        assert_eq!(count(" 2"), 2, "a blank is not taken into a number");
    }

    #[test]
    fn every_other_character_counts_one() {
        assert_eq!(count("日本"), 2);
        assert_eq!(count("café"), 2, "caf, é");
        assert_eq!(count("a → b"), 4, "a, ` `, →, ` b`");
    }
}
