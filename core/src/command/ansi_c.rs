//! `$'...'` quoting: the escapes bash applies inside it.
//!
//! A shell turns `$'\x73pear-capability'` into `spear-capability`, so the
//! recognizer must decode these strings exactly as quote removal would.

/// Decodes the body of a `$'...'` string starting at `pos` (just after the
/// opening `$'`) into `out`. Returns the offset just past the closing quote,
/// or `None` when the line ends first.
pub(super) fn decode(src: &str, mut pos: usize, out: &mut String) -> Option<usize> {
    let bytes = src.as_bytes();
    while pos < bytes.len() {
        match bytes[pos] {
            b'\'' => return Some(pos + 1),
            b'\\' => pos = escape(src, pos + 1, out),
            _ => {
                let run_end = bytes[pos..]
                    .iter()
                    .position(|&b| b == b'\'' || b == b'\\')
                    .map_or(bytes.len(), |n| pos + n);
                out.push_str(&src[pos..run_end]);
                pos = run_end;
            }
        }
    }
    None
}

/// Decodes the escape whose letter is at `pos`; returns where the text goes on.
fn escape(src: &str, pos: usize, out: &mut String) -> usize {
    let bytes = src.as_bytes();
    let Some(&letter) = bytes.get(pos) else {
        out.push('\\');
        return pos;
    };
    let simple = match letter {
        b'a' => Some('\x07'),
        b'b' => Some('\x08'),
        b'e' | b'E' => Some('\x1b'),
        b'f' => Some('\x0c'),
        b'n' => Some('\n'),
        b'r' => Some('\r'),
        b't' => Some('\t'),
        b'v' => Some('\x0b'),
        b'\\' => Some('\\'),
        b'\'' => Some('\''),
        b'"' => Some('"'),
        b'?' => Some('?'),
        _ => None,
    };
    if let Some(c) = simple {
        out.push(c);
        return pos + 1;
    }
    match letter {
        b'0'..=b'7' => {
            let (value, end) = number(bytes, pos, 3, 8);
            out.push(char::from((value & 0xff) as u8));
            end
        }
        b'x' | b'u' | b'U' => {
            let max = match letter {
                b'x' => 2,
                b'u' => 4,
                _ => 8,
            };
            let (value, end) = number(bytes, pos + 1, max, 16);
            if end == pos + 1 {
                // No digits: bash keeps the escape as written.
                out.push('\\');
                out.push(char::from(letter));
            } else if let Some(c) = char::from_u32(value) {
                out.push(c);
            }
            end
        }
        b'c' if pos + 1 < bytes.len() && bytes[pos + 1].is_ascii() => {
            out.push(char::from(bytes[pos + 1] & 0x1f));
            pos + 2
        }
        _ => {
            // Unknown escapes stay as written, backslash included.
            out.push('\\');
            pos
        }
    }
}

/// Reads up to `max` digits of `radix` from `pos`.
fn number(bytes: &[u8], pos: usize, max: usize, radix: u32) -> (u32, usize) {
    let mut value: u32 = 0;
    let mut end = pos;
    while end < bytes.len() && end - pos < max {
        match char::from(bytes[end]).to_digit(radix) {
            Some(d) => value = value.wrapping_mul(radix).wrapping_add(d),
            None => break,
        }
        end += 1;
    }
    (value, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(body: &str) -> (String, Option<usize>) {
        let mut out = String::new();
        let end = decode(body, 0, &mut out);
        (out, end)
    }

    #[test]
    fn escapes_decode_as_bash_does() {
        assert_eq!(run(r"\x73pear'").0, "spear");
        assert_eq!(run(r"\163p'").0, "sp");
        assert_eq!(run(r"\u0073\U00000070'").0, "sp");
        assert_eq!(run(r"a\tb\nc\\d\'e'").0, "a\tb\nc\\d'e");
        assert_eq!(run(r"\ca'").0, "\x01");
    }

    #[test]
    fn unknown_and_empty_escapes_stay_as_written() {
        assert_eq!(run(r"\q\x'").0, r"\q\x");
    }

    #[test]
    fn end_is_after_the_closing_quote_or_none() {
        assert_eq!(run("ab'cd"), ("ab".into(), Some(3)));
        assert_eq!(run(r"ab\'"), ("ab'".into(), None));
        assert_eq!(run("é'"), ("é".into(), Some(3)));
    }

    #[test]
    fn a_trailing_backslash_does_not_panic() {
        assert_eq!(run("\\"), ("\\".into(), None));
    }
}
