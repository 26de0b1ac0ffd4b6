//! Provider text made plain: no control, escape, bidi, zero-width or tag
//! character survives, and length is capped with a visible mark.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde::Serialize;

/// Whether `c` is never shown: controls but newline and tab, bidi controls,
/// zero-width and invisible formatting characters, tag characters.
pub(super) fn is_hidden(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
        | '\u{180b}'..='\u{180f}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}'
        | '\u{ffa0}' | '\u{fff0}'..='\u{fffb}' | '\u{e0000}'..='\u{e0fff}'
        | '\u{1d173}'..='\u{1d17a}')
}

/// A byte that [`strip`] keeps as it is, whatever surrounds it: printable
/// ASCII, tab and newline. Every other byte (controls, `\r`, escape, DEL and
/// the bytes of non-ASCII characters) may start something to remove.
pub(super) const fn plain_byte(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b' '..=b'~')
}

/// Removes ANSI escape sequences (CSI, OSC, and two-character escapes, in
/// their 7-bit and 8-bit forms) and every hidden character; keeps newlines
/// and tabs; turns `\r\n`, lone `\r` and the Unicode line and paragraph
/// separators into `\n`. Borrows `text` when there is nothing to remove.
pub fn strip(text: &str) -> Cow<'_, str> {
    if text.bytes().all(plain_byte) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates up to a final byte @..~
                Some('[') => skip_csi(&mut chars),
                // OSC, DCS, SOS, PM, APC: up to BEL or ST (ESC \)
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push('\n');
                }
            }
            '\u{2028}' | '\u{2029}' | '\u{85}' => out.push('\n'),
            c if is_hidden(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            break;
        }
    }
}

fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => break,
            '\u{1b}' if chars.peek() == Some(&'\\') => {
                chars.next();
                break;
            }
            _ => {}
        }
    }
}

/// Provider text as one plain line of at most `max` characters: stripped,
/// every run of white space made one space, cut with `…` when longer.
pub fn one_line(text: &str, max: usize) -> String {
    let stripped = strip(text);
    let joined = stripped.split_whitespace().collect::<Vec<_>>().join(" ");
    cap(&joined, max, |_| "…".to_owned()).unwrap_or(joined)
}

/// Provider text as plain lines of at most `max` characters in all: stripped,
/// trailing white space removed, cut with a note saying how much was cut.
/// Borrows `text` when it is plain and short enough already.
pub fn block(text: &str, max: usize) -> Cow<'_, str> {
    let mark = |cut| format!("… [{cut} more characters not shown]");
    match strip(text) {
        Cow::Borrowed(plain) => {
            let trimmed = plain.trim_end();
            cap(trimmed, max, mark).map_or(Cow::Borrowed(trimmed), Cow::Owned)
        }
        Cow::Owned(stripped) => Cow::Owned(
            cap(stripped.trim_end(), max, mark).unwrap_or_else(|| stripped.trim_end().to_owned()),
        ),
    }
}

/// `text` cut to `max` characters with `mark` at its end, or `None` when it
/// is not longer than that.
fn cap(text: &str, max: usize, mark: impl Fn(usize) -> String) -> Option<String> {
    // No more bytes than the bound means no more characters either.
    if text.len() <= max {
        return None;
    }
    text.char_indices().nth(max)?;
    let total = text.chars().count();
    let keep = max.saturating_sub(1);
    let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
    let mut out = text[..end].to_owned();
    out.push_str(&mark(total - keep));
    Some(out)
}

/// `value` as one compact line of JSON text with nothing hidden: the hidden
/// characters that JSON does not escape itself (bidi, zero-width, tags, and
/// controls that survive as raw characters) are written as `\uXXXX` escapes,
/// so the text is still the same JSON.
pub fn json_text<T: Serialize + ?Sized>(value: &T) -> String {
    // Serialising a JSON value or map cannot fail; anything else that can is
    // shown as JSON null.
    let raw = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
    // serde_json escapes every control below 0x20; all that can be hidden
    // from there on is DEL and non-ASCII characters.
    if raw.is_ascii() && !raw.as_bytes().contains(&0x7f) {
        return raw;
    }
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        if is_hidden(c) || matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}') {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{u:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_bidi_zero_width_and_tags_are_removed() {
        let nasty = "\u{1b}[31mred\u{1b}[0m \u{1b}]0;title\u{7}ok\u{202e}evil\u{200b}\u{e0041}\u{7}!\r\nnext";
        assert_eq!(strip(nasty), "red okevil!\nnext");
        assert_eq!(strip("a\u{9b}2Jb\u{2028}c\td"), "ab\nc\td");
    }

    #[test]
    fn one_line_collapses_and_caps_with_a_mark() {
        assert_eq!(one_line("  a\n\n b\t c  ", 120), "a b c");
        assert_eq!(one_line("abcdefghij", 5), "abcd…");
        assert_eq!(one_line("abcde", 5), "abcde");
    }

    #[test]
    fn block_keeps_lines_and_says_how_much_was_cut() {
        assert_eq!(block("a\nb\n\n", 10), "a\nb");
        assert_eq!(
            block("0123456789xyz", 10),
            "012345678… [4 more characters not shown]"
        );
    }

    #[test]
    fn plain_text_passes_strip_unchanged_and_anything_else_is_looked_at() {
        let plain = "line one\n\tline two: {\"a\": [1, 2]} ~!";
        assert!(matches!(strip(plain), Cow::Borrowed(p) if p == plain));
        assert_eq!(strip("a\u{7f}b\rc\r\nd\u{1b}[31me\u{200b}"), "ab\nc\nde");
        assert_eq!(block("abc", 3), "abc");
        assert_eq!(block("abcd", 3), "ab… [2 more characters not shown]");
        assert_eq!(block("éé", 2), "éé");
    }

    #[test]
    fn json_text_stays_json_but_shows_no_hidden_character() {
        let ascii = serde_json::json!({"a": "plain \u{1} text"});
        assert_eq!(json_text(&ascii), ascii.to_string());
        let del = serde_json::json!({"a": "x\u{7f}y"});
        assert_eq!(json_text(&del), r#"{"a":"x\u007fy"}"#);
        let v = serde_json::json!({"description": "a\u{202e}b\u{200b}c\u{1b}"});
        let t = json_text(&v);
        assert!(!t.chars().any(is_hidden), "{t}");
        let back: serde_json::Value = serde_json::from_str(&t).expect("still json");
        assert_eq!(back, v);
    }
}
