//! The fast "not ours" scan that runs before any lexing.
//!
//! Quote removal only ever *deletes* characters from a word: quotes,
//! backslashes, line continuations (`\` + newline) and the `$` of `$'...'` /
//! `$"..."`. So a word that becomes `spear-capability` is, in the line, the
//! name's sixteen characters in order with nothing between them but such
//! deletable characters. The one exception is `$'...'`, whose escapes
//! (`\x73`, `\163`) *create* characters: a line holding `$'` is always lexed.
//!
//! The scan is one pass over the bytes with a tiny automaton that skips the
//! deletable bytes and looks for the name. The name has no proper border
//! (its first letter `s` occurs nowhere else in it), so on a mismatch the
//! automaton restarts at 0, or at 1 if the byte is an `s`.

use super::COMMAND_NAME;

const NAME: &[u8] = COMMAND_NAME.as_bytes();

/// Bytes quote removal may delete from between the letters of a word.
fn deletable(b: u8) -> bool {
    matches!(b, b'\'' | b'"' | b'\\' | b'\n' | b'\r' | b'$')
}

/// `false` proves that no word of `line` becomes the command's name after
/// quote removal; `true` means the line must be lexed to know.
pub(super) fn may_hold_name(line: &[u8]) -> bool {
    let mut matched = 0;
    for (i, &b) in line.iter().enumerate() {
        if b == NAME[matched] {
            matched += 1;
            if matched == NAME.len() {
                return true;
            }
        } else if deletable(b) {
            if b == b'$' && line.get(i + 1) == Some(&b'\'') {
                return true;
            }
        } else {
            matched = usize::from(b == NAME[0]);
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_name_passes() {
        assert!(may_hold_name(b"spear-capability list"));
        assert!(may_hold_name(b"cd x && spear-capability"));
        assert!(may_hold_name(b"sspear-capability"));
    }

    #[test]
    fn quoted_and_escaped_names_pass() {
        for line in [
            "'spear-capability'",
            "spear'-'capability",
            "sp\"\"ear-capability",
            "spear\\-capability",
            "spear-\\\ncapability",
            "spear-\\\r\ncapability",
            "spear$\"-capability\"",
        ] {
            assert!(may_hold_name(line.as_bytes()), "{line:?}");
        }
    }

    #[test]
    fn ansi_c_quotes_always_pass() {
        assert!(may_hold_name(b"$'\\x73pear-capability'"));
        assert!(may_hold_name(b"cut -d$'\\t' -f1"));
    }

    #[test]
    fn lines_without_the_letters_in_order_fail() {
        for line in [
            "ls -la",
            "git commit -m 'fix capability parsing'",
            "spear capability",
            "spear-capabilit",
            "spear-cap ability",
            "echo $HOME",
            "",
        ] {
            assert!(!may_hold_name(line.as_bytes()), "{line:?}");
        }
    }
}
