//! The fast "not ours" scan that runs before any lexing.
//!
//! Quote removal only ever *deletes* characters from a word: quotes,
//! backslashes, line continuations (`\` + newline) and the `$` of `$'...'` /
//! `$"..."`. So a word that becomes `spear-capability` is, in the line, the
//! name's sixteen characters in order with nothing between them but such
//! deletable characters. The one exception is `$'...'`, whose escapes
//! (`\x73`, `\163`) *create* characters: a line holding `$'` is always lexed.
//!
//! Every such word holds the name's `-`, which is not deletable. So the scan
//! finds each `-` (and each `$`, for `$'`) with `memchr2`, and reads
//! outwards from it: `spear` before it and `capability` after it, skipping
//! deletable bytes. Most lines have a few dashes, and each check fails within
//! a byte or two.

use super::COMMAND_NAME;

const NAME: &[u8] = COMMAND_NAME.as_bytes();
/// Where the name's `-` is.
const DASH: usize = 5;

/// Bytes quote removal may delete from between the letters of a word.
fn deletable(b: u8) -> bool {
    matches!(b, b'\'' | b'"' | b'\\' | b'\n' | b'\r' | b'$')
}

/// `false` proves that no word of `line` becomes the command's name after
/// quote removal; `true` means the line must be lexed to know.
pub(super) fn may_hold_name(line: &str) -> bool {
    let bytes = line.as_bytes();
    // One `memchr2` pass finds both: `str::contains` and `match_indices`
    // were two passes whose cost hung on what the compiler chose to inline.
    memchr::memchr2_iter(b'-', b'$', bytes).any(|at| {
        if bytes[at] == b'$' {
            bytes.get(at + 1) == Some(&b'\'')
        } else {
            before_dash(bytes, at) && after_dash(bytes, at)
        }
    })
}

/// Whether the name's letters before its `-` end just before `dash`.
fn before_dash(bytes: &[u8], dash: usize) -> bool {
    let (head, _) = NAME.split_at(DASH);
    let mut at = dash;
    for &want in head.iter().rev() {
        loop {
            let Some(next) = at.checked_sub(1) else {
                return false;
            };
            at = next;
            if !deletable(bytes[at]) {
                break;
            }
        }
        if bytes[at] != want {
            return false;
        }
    }
    true
}

/// Whether the name's letters after its `-` start just after `dash`.
fn after_dash(bytes: &[u8], dash: usize) -> bool {
    let (_, tail) = NAME.split_at(DASH + 1);
    let mut rest = bytes[dash + 1..].iter().filter(|&&b| !deletable(b));
    tail.iter().all(|want| rest.next() == Some(want))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dash_is_where_it_should_be() {
        assert_eq!(NAME[DASH], b'-');
        assert_eq!(NAME.iter().filter(|&&b| b == b'-').count(), 1);
    }

    #[test]
    fn the_plain_name_passes() {
        assert!(may_hold_name("spear-capability list"));
        assert!(may_hold_name("cd x && spear-capability"));
        assert!(may_hold_name("sspear-capability"));
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
            assert!(may_hold_name(line), "{line:?}");
        }
    }

    #[test]
    fn ansi_c_quotes_always_pass() {
        assert!(may_hold_name("$'\\x73pear-capability'"));
        assert!(may_hold_name("cut -d$'\\t' -f1"));
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
            assert!(!may_hold_name(line), "{line:?}");
        }
    }
}
