//! The plainest answers read by hand, in one pass over their bytes.
//!
//! Nearly every line a server writes is the answer to one of our requests:
//! `{"jsonrpc":"2.0","id":7,"result":{...}}`, and a `tools/call` result is
//! nearly always text blocks. Read through serde_json's visitors
//! (`codec.rs`, `wire.rs`) such an answer cost more than all the rest of a
//! call's work in the client; read here, byte by byte, it costs a fraction.
//!
//! A server lays its answers out the same way each time, so an answer laid
//! out as the last plain call answer is read by comparing the bytes around
//! its id and its text with that one's ([`Shape`]), without reading its
//! members again.
//!
//! This reader is only a shortcut. It answers `None` wherever it is not
//! sure, and the serde_json path then reads the line and has the last word:
//! a member it does not know the meaning of, a key or a `jsonrpc` with
//! escapes, an `id` that is not a plain unsigned integer, an escape for a
//! UTF-16 surrogate, a value nested deeper than [`MAX_DEPTH`], anything
//! that is not JSON. Where it answers, it answers exactly as that path
//! does; the fuzz target `mcp_stdout` checks that on every line it reads.

use std::ops::Range;

use serde_json::Value;
use spear_capabilities::{CallResult, Content};

use crate::codec::{Body, Incoming, Raw};

/// Deeper than this, a value is left to serde_json (whose limit is 128).
const MAX_DEPTH: usize = 64;

/// An answer with a result, or `None` when the serde_json path must read
/// `line`. With `is_call`, a `result` after an `id` that `is_call` names is
/// read as a `tools/call` result, as `codec::decode_as` does. With `shape`,
/// a line laid out as the last plain call answer is read by comparing it
/// with that one ([`Shape`]), and an answer read here may be kept as the
/// next one's shape.
pub(crate) fn answer(
    line: &str,
    is_call: &mut Option<&mut dyn FnMut(&Value) -> bool>,
    mut shape: Option<&mut Shape>,
) -> Option<Incoming> {
    if let (Some(shape), Some(is_call)) = (shape.as_deref(), is_call.as_mut()) {
        if let Some(answer) = shape.read(line, *is_call) {
            return Some(answer);
        }
    }
    let mut s = Scan::new(line);
    let mut version = false;
    let mut id = None;
    let mut id_at = 0..0;
    let mut result = None;
    s.object(|s, key| {
        match key? {
            "jsonrpc" if !version => {
                s.plain_string_is("2.0")?;
                version = true;
            }
            "id" if id.is_none() => {
                let start = s.at;
                id = Some(s.id()?);
                id_at = start..s.at;
            }
            "result" if result.is_none() => {
                let call = match (is_call.as_mut(), id) {
                    (Some(is_call), Some(id)) => is_call(&Value::from(id)),
                    _ => false,
                };
                result = Some(if call {
                    Body::Call(s.call_result()?)
                } else {
                    Body::Text(Raw::checked(s.value_text()?))
                });
            }
            "jsonrpc" | "id" | "result" | "method" | "error" => return None,
            _ => s.skip(1)?,
        }
        Some(())
    })?;
    s.end()?;
    version.then_some(())?;
    let result = result?;
    if let (Some(shape), Body::Call(call), Some(text_at)) = (shape.as_mut(), &result, s.text_at) {
        if call.content.len() == 1 {
            shape.keep(line, id_at, text_at, call.is_error);
        }
    }
    Some(Incoming::Response {
        id: Value::from(id?),
        outcome: Ok(result),
    })
}

/// The layout of the last plain call answer read on a connection, so that
/// the next one laid out the same is read by comparing bytes.
///
/// A server writes its answers the same way each time: the same members in
/// the same order with the same spacing, only the id and the text
/// changing. So when an answer read by hand holds a call result of one
/// text block without escapes, the bytes around its id's digits and its
/// text are kept (at most [`MOST_KEPT`]). A later line made of those same
/// bytes around an id and a text without a quote, backslash or control
/// character has every other member as that answer had it: read by hand it
/// would give the same result, with its own id and text. It is read so
/// from the comparison alone, which costs a fraction of reading it member
/// by member. Any other line is read by hand (and may be kept in turn).
#[derive(Debug, Default)]
pub(crate) struct Shape {
    kept: Option<Kept>,
}

/// The most bytes a [`Shape`] keeps: an answer whose other members are
/// longer is not kept, so a server cannot make a connection hold much.
const MOST_KEPT: usize = 512;

#[derive(Debug)]
struct Kept {
    /// The answer without its id's digits and its text: the part before
    /// the id, the part between the two (from `between`), the part after
    /// the text (from `after`). A result is read as a call's only after its
    /// id, so the id comes first.
    parts: Vec<u8>,
    between: usize,
    after: usize,
    is_error: bool,
}

impl Shape {
    /// Keeps the layout of `line`, a plain call answer read by hand whose
    /// id's digits stand at `id` and its one text block's text at `text`.
    fn keep(&mut self, line: &str, id: Range<usize>, text: Range<usize>, is_error: bool) {
        let bytes = line.as_bytes();
        let (Some(before), Some(between), Some(after)) = (
            bytes.get(..id.start),
            bytes.get(id.end..text.start),
            bytes.get(text.end..),
        ) else {
            return;
        };
        let len = before.len() + between.len() + after.len();
        if len > MOST_KEPT {
            self.kept = None;
            return;
        }
        let mut parts = Vec::with_capacity(len);
        parts.extend_from_slice(before);
        parts.extend_from_slice(between);
        parts.extend_from_slice(after);
        self.kept = Some(Kept {
            parts,
            between: before.len(),
            after: before.len() + between.len(),
            is_error,
        });
    }

    /// `line` read as the answer to a call, if it is laid out as the kept
    /// answer and `is_call` names its id.
    fn read(&self, line: &str, is_call: &mut dyn FnMut(&Value) -> bool) -> Option<Incoming> {
        let kept = self.kept.as_ref()?;
        let mut s = Scan::new(line);
        s.part(kept.parts.get(..kept.between)?)?;
        let id = s.id()?;
        s.part(kept.parts.get(kept.between..kept.after)?)?;
        let text = s.plain_text()?;
        // What ended the text must be the quote the last part starts with.
        (s.bytes().get(s.at..)? == kept.parts.get(kept.after..)?).then_some(())?;
        let id = Value::from(id);
        is_call(&id).then_some(())?;
        let result = CallResult::new(vec![Content::text(text)]).with_error(kept.is_error);
        Some(Incoming::Response {
            id,
            outcome: Ok(Body::Call(result)),
        })
    }
}

/// A `tools/call` result read from its text, or `None` when
/// `wire::call_result` (and behind it the `Value` path) must read it.
pub(crate) fn call_result(json: &str) -> Option<CallResult> {
    let mut s = Scan::new(json);
    let result = s.call_result()?;
    s.end()?;
    Some(result)
}

/// A cursor over JSON text.
struct Scan<'a> {
    text: &'a str,
    at: usize,
    /// Where the text of the last text block read stands, when it has no
    /// escapes (for [`Shape`]).
    text_at: Option<Range<usize>>,
}

impl<'a> Scan<'a> {
    fn new(text: &'a str) -> Self {
        Scan {
            text,
            at: 0,
            text_at: None,
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// `part`, byte for byte.
    fn part(&mut self, part: &[u8]) -> Option<()> {
        (self.bytes().get(self.at..self.at + part.len())? == part).then_some(())?;
        self.at += part.len();
        Some(())
    }

    /// The run of plain string bytes from the cursor ([`plain_run`]), as
    /// text: what ends it is left for the caller to check.
    fn plain_text(&mut self) -> Option<&'a str> {
        let start = self.at;
        self.at = plain_run(self.bytes(), start);
        self.text.get(start..self.at)
    }

    /// Skips JSON whitespace.
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    /// Nothing but whitespace is left.
    fn end(&mut self) -> Option<()> {
        self.ws();
        (self.at == self.text.len()).then_some(())
    }

    /// An object, each member handed to `member` with its key (`None` for a
    /// key with escapes, which only a skipped object may take), the cursor
    /// at its value. `member` reads the value.
    fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, Option<&'a str>) -> Option<()>,
    ) -> Option<()> {
        self.ws();
        self.items(b'{', b'}', |s| {
            let (key, escaped) = s.string()?;
            s.ws();
            s.eat(b':')?;
            s.ws();
            member(s, (!escaped).then_some(key))
        })
    }

    /// An array, `element` called with the cursor at each element.
    fn array(&mut self, element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.items(b'[', b']', element)
    }

    /// `open`, items separated by commas, `close`: `item` reads each, the
    /// cursor at its start.
    fn items(
        &mut self,
        open: u8,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.eat(open)?;
        self.ws();
        if self.peek() == Some(close) {
            self.at += 1;
            return Some(());
        }
        loop {
            item(self)?;
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b if b == close => return Some(()),
                _ => return None,
            }
        }
    }

    /// A string, checked: its text between the quotes as written, and
    /// whether that has escapes.
    // Inlined: a plain answer has about nine strings, and calling out for
    // each cost nearly a third of what reading them does (callgrind).
    #[inline]
    fn string(&mut self) -> Option<(&'a str, bool)> {
        self.eat(b'"')?;
        let start = self.at;
        let end = plain_run(self.bytes(), start);
        if self.bytes().get(end) == Some(&b'"') {
            self.at = end + 1;
            return Some((self.text.get(start..end)?, false));
        }
        self.at = end;
        self.escaped_string(start)
    }

    /// The rest of a string from `start` that stopped at an escape (or a
    /// control character, which no string holds), as [`Scan::string`].
    #[cold]
    fn escaped_string(&mut self, start: usize) -> Option<(&'a str, bool)> {
        loop {
            match self.next()? {
                b'"' => return Some((self.text.get(start..self.at - 1)?, true)),
                b'\\' => {
                    self.escape()?;
                }
                _ => return None, // a control character
            }
            self.at = plain_run(self.bytes(), self.at);
        }
    }

    /// A string without escapes that is `want`; `None` for any other.
    fn plain_string_is(&mut self, want: &str) -> Option<()> {
        match self.string()? {
            (s, false) if s == want => Some(()),
            _ => None,
        }
    }

    /// A string, its escapes decoded.
    fn owned_string(&mut self) -> Option<String> {
        let (raw, escaped) = self.string()?;
        if !escaped {
            return Some(raw.to_owned());
        }
        let mut out = String::with_capacity(raw.len());
        let mut rest = raw;
        while let Some(i) = rest.find('\\') {
            out.push_str(&rest[..i]);
            let mut s = Scan::new(rest.get(i + 1..)?);
            out.push(s.escape()?);
            rest = rest.get(i + 1 + s.at..)?;
        }
        out.push_str(rest);
        Some(out)
    }

    /// The escape after a backslash: the character it stands for. A UTF-16
    /// surrogate (half of a pair, or alone) is left to serde_json.
    fn escape(&mut self) -> Option<char> {
        Some(match self.next()? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hex = self.text.get(self.at..self.at + 4)?;
                if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                self.at += 4;
                char::from_u32(u32::from_str_radix(hex, 16).ok()?)?
            }
            _ => return None,
        })
    }

    /// An `id`: an unsigned integer as serde_json reads one into a `u64`.
    fn id(&mut self) -> Option<u64> {
        let start = self.at;
        let mut n: u64 = 0;
        while let Some(b @ b'0'..=b'9') = self.peek() {
            n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
            self.at += 1;
        }
        let digits = self.at - start;
        let leading_zero = digits > 1 && self.bytes()[start] == b'0';
        if digits == 0 || leading_zero || matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some(n)
    }

    /// The text of one value, checked.
    fn value_text(&mut self) -> Option<&'a str> {
        let start = self.at;
        self.skip(1)?;
        self.text.get(start..self.at)
    }

    /// Checks one value, `depth` containers deep, and steps over it.
    fn skip(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' if depth < MAX_DEPTH => self.object(|s, _| s.skip(depth + 1)),
            b'[' if depth < MAX_DEPTH => self.array(|s| s.skip(depth + 1)),
            b'"' => self.string().map(drop),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.text.get(self.at..)?.starts_with(word).then_some(())?;
        self.at += word.len();
        Some(())
    }

    /// A number, by RFC 8259's grammar.
    fn number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            self.some_digits()?;
        }
        Some(())
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.at;
        self.digits();
        (self.at > start).then_some(())
    }

    /// A `tools/call` result of text blocks, and `isError`; any member of
    /// another meaning is left to the other paths.
    fn call_result(&mut self) -> Option<CallResult> {
        let mut content = None;
        let mut is_error = None;
        self.object(|s, key| {
            match key? {
                "content" if content.is_none() => content = Some(s.blocks()?),
                "isError" if is_error.is_none() => is_error = Some(s.boolean()?),
                "content" | "isError" | "structuredContent" => return None,
                _ => s.skip(2)?,
            }
            Some(())
        })?;
        let result = CallResult::new(content.unwrap_or_default());
        Some(match is_error {
            Some(is_error) => result.with_error(is_error),
            None => result,
        })
    }

    fn boolean(&mut self) -> Option<bool> {
        match self.peek()? {
            b't' => self.literal("true").map(|()| true),
            b'f' => self.literal("false").map(|()| false),
            _ => None,
        }
    }

    /// The `content` array: text blocks only.
    fn blocks(&mut self) -> Option<Vec<Content>> {
        // Most results hold one block.
        let mut blocks = Vec::with_capacity(1);
        self.array(|s| {
            blocks.push(s.text_block()?);
            Some(())
        })?;
        Some(blocks)
    }

    /// `{"type":"text","text":...}`, with members that no block kind reads
    /// (`annotations`, `_meta`) skipped.
    fn text_block(&mut self) -> Option<Content> {
        let mut kind = false;
        let mut text = None;
        self.object(|s, key| {
            match key? {
                "type" if !kind => {
                    s.plain_string_is("text")?;
                    kind = true;
                }
                "text" if text.is_none() => {
                    let start = s.at;
                    let read = s.owned_string()?;
                    // Every escape is longer than what it stands for: a
                    // text as long as its bytes between the quotes has none.
                    s.text_at = (s.at - start == read.len() + 2).then(|| start + 1..s.at - 1);
                    text = Some(read);
                }
                "type" | "text" | "mimeType" | "data" | "uri" | "name" | "title"
                | "description" | "size" | "resource" | "blob" => return None,
                _ => s.skip(3)?,
            }
            Some(())
        })?;
        kind.then_some(())?;
        Some(Content::text(text?))
    }
}

/// Where the run of plain string bytes from `at` ends: at the first quote,
/// backslash or control character, or the end. Eight bytes at a time.
/// These are also the bytes a JSON string must escape ([`is_plain`]).
fn plain_run(bytes: &[u8], mut at: usize) -> usize {
    while let Some(chunk) = bytes.get(at..at + 8) {
        let special = specials(u64::from_le_bytes(chunk.try_into().unwrap_or_default()));
        if special != 0 {
            return at + special.trailing_zeros() as usize / 8;
        }
        at += 8;
    }
    while let Some(&b) = bytes.get(at) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            return at;
        }
        at += 1;
    }
    at
}

/// Whether `bytes` holds no quote, backslash or control character:
/// [`plain_run`] to the end, but with no byte at a time. The bytes after
/// the last whole word are read in a word that overlaps the one before,
/// and fewer than eight in two overlapping halves (or three single bytes):
/// a byte read twice changes nothing.
pub(crate) fn is_plain(bytes: &[u8]) -> bool {
    let n = bytes.len();
    let word = |at: usize| {
        bytes
            .get(at..at + 8)
            .map_or(0, |w| u64::from_le_bytes(w.try_into().unwrap_or_default()))
    };
    let half = |at: usize| {
        bytes.get(at..at + 4).map_or(0, |w| {
            u64::from(u32::from_le_bytes(w.try_into().unwrap_or_default()))
        })
    };
    let last = match n {
        0 => return true,
        // Three bytes cover one to three; the rest of the word is plain.
        1..4 => {
            let byte = |at: usize| u64::from(bytes.get(at).copied().unwrap_or(b'a'));
            byte(0) | byte(n / 2) << 8 | byte(n - 1) << 16 | PLAIN_HIGH_BYTES
        }
        4..8 => half(0) | half(n - 4) << 32,
        _ => {
            let mut at = 0;
            while at + 8 < n {
                if specials(word(at)) != 0 {
                    return false;
                }
                at += 8;
            }
            word(n - 8)
        }
    };
    specials(last) == 0
}

/// The five bytes of a word above its third: plain (`a`s).
const PLAIN_HIGH_BYTES: u64 = u64::from_le_bytes([0, 0, 0, b'a', b'a', b'a', b'a', b'a']);

/// The bytes of `word` that a JSON string must escape, flagged by their
/// high bit: exact in the lowest one flagged (which is all [`plain_run`]
/// reads of it), and zero exactly when there is none.
fn specials(word: u64) -> u64 {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    // The bytes of `word` equal to zero.
    let zero = |word: u64| word.wrapping_sub(ONES) & !word & HIGH;
    zero(word ^ (ONES * u64::from(b'"')))
        | zero(word ^ (ONES * u64::from(b'\\')))
        // Below 0x20: a byte minus 0x20 that borrows, from a byte without
        // its high bit set.
        | (word.wrapping_sub(ONES * 0x20) & !word & HIGH)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::decode_json;

    /// Whether a shortcut read `line` (`fast`); where it did, serde_json
    /// must read it the same, as the answer to a call when `call`.
    fn read_as_serde_json(fast: Option<Incoming>, line: &str, call: bool) -> bool {
        if let Some(fast) = &fast {
            let slow = decode_json(line, Some(&mut |_: &Value| call));
            assert_eq!(fast, &slow, "{line}");
        }
        fast.is_some()
    }

    /// Reads `line` by hand, as the answer to a call and not ([`read_as_serde_json`]).
    fn read_by_hand(line: &str) -> [bool; 2] {
        [true, false].map(|call| {
            let mut named = |_: &Value| call;
            read_as_serde_json(answer(line, &mut Some(&mut named), None), line, call)
        })
    }

    #[test]
    fn plain_answers_are_read_by_hand_as_serde_json_reads_them() {
        let answered = [
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
            r#" { "jsonrpc" : "2.0" ,	"id" : 0 , "result" : { } } "#,
            r#"{"result":{"content":[]},"id":3,"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a\"\n\u00e9\\\/\b\f\r\t\u0000 é"}]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[{"text":"x","type":"text","annotations":{"audience":["user"]},"_meta":{}}],"_meta":{"n":[-0.5e+10,0,1E5,-0,2.25E-3,true,false,null,"x\u0041",{},[]]}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"isError":false}}"#,
            r#"{"jsonrpc":"2.0","id":2,"extra":{"a":[1,{"b":null}],"k\"ey":"v"},"result":{"tools":[]}}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\u{7f}\"}]}}\r",
        ];
        for line in answered {
            let [_, as_text] = read_by_hand(line);
            assert!(as_text, "not read by hand: {line}");
        }
        // A result that is no call result is read as text, by serde_json.
        for result in ["null", "\"text\"", "[1, 2]", r#"{"content":5}"#] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":2,"result":{result}}}"#);
            assert_eq!(read_by_hand(&line), [false, true], "{line}");
        }
    }

    #[test]
    fn anything_else_is_left_to_serde_json() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"deep":{}1{}}}}}"#,
            "[".repeat(70),
            "]".repeat(70)
        );
        let left = [
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            r#"{"id":1,"result":{}}"#,
            r#"{"jsonrpc":"2\u002e0","id":1,"result":{}}"#,
            r#"{"jsonrpc":null,"id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"a","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":-1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1.0,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":01,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1e2,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":{}}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{}}"#,
            r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"result":{}}"#,
            r#"{"jsonrpc":"2.0","\u0069d":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\ud83d\ude00"}]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"x":"\udc00"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"x":"\u12"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"x":"\q"}}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":\"a\tb\"}}",
            r#"{"jsonrpc":"2.0","id":1,"result":{"x":01}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"x":1.}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"x":-}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"x":.5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"x":1e}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"x":tru}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"x":[1,]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"x":1,}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"x" 1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}x"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}"#,
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
            r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":\"\u{0}\"}}",
            "",
            "log line",
            &deep,
        ];
        for line in left {
            assert_eq!(read_by_hand(line), [false, false], "read by hand: {line}");
        }
    }

    #[test]
    fn call_results_of_other_kinds_are_left_to_the_other_paths() {
        let read = [
            r#"{"content":[{"type":"text","text":"hi"}]}"#,
            r#"{}"#,
            r#"{"isError":true,"_meta":{"a":[1,2]},"type":"x","text":5}"#,
        ];
        let left = [
            r#"{"content":[],"structuredContent":{"n":1}}"#,
            r#"{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}"#,
            r#"{"content":[{"type":"text","text":"x","mimeType":"text/plain"}]}"#,
            r#"{"content":[{"type":"t\u0065xt","text":"hi"}]}"#,
            r#"{"content":[{"type":"text"}]}"#,
            r#"{"content":[{"text":"x"}]}"#,
            r#"{"content":[{"type":"text","text":null}]}"#,
            r#"{"content":[{"type":"text","type":"text","text":"x"}]}"#,
            r#"{"content":null}"#,
            r#"{"content":{}}"#,
            r#"{"content":[],"content":[]}"#,
            r#"{"isError":null}"#,
            r#"{"isError":"yes"}"#,
            r#"[]"#,
            "null",
        ];
        for json in read.iter().chain(&left) {
            let fast = call_result(json);
            assert_eq!(fast.is_some(), read.contains(json), "{json}");
            if let Some(fast) = fast {
                assert_eq!(Some(fast), crate::wire::call_result(json), "{json}");
            }
        }
    }

    /// `line` read by hand as the answer to a call, `shape` kept from it.
    fn keep(shape: &mut Shape, line: &str) {
        let mut named = |_: &Value| true;
        assert!(
            answer(line, &mut Some(&mut named), Some(shape)).is_some(),
            "{line}"
        );
    }

    /// `line` read through `shape` alone ([`read_as_serde_json`]).
    fn read_by_shape(shape: &Shape, line: &str, call: bool) -> bool {
        read_as_serde_json(shape.read(line, &mut |_: &Value| call), line, call)
    }

    #[test]
    fn an_answer_laid_out_as_the_last_is_read_by_comparing_with_it() {
        let kept = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}"#;
        let mut shape = Shape::default();
        keep(&mut shape, kept);
        let read = [
            kept,
            "{\"jsonrpc\":\"2.0\",\"id\":18446744073709551615,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a longer text, é \u{7f}\"}]}}",
            r#"{"jsonrpc":"2.0","id":0,"result":{"content":[{"type":"text","text":""}]}}"#,
        ];
        for line in read {
            assert!(
                read_by_shape(&shape, line, true),
                "not read by shape: {line}"
            );
        }
        // `kept` with one thing changed.
        let changed = |from: &str, to: &str| kept.replacen(from, to, 1);
        let left = [
            // Not the answer to a call.
            (kept.to_owned(), false),
            // An id or a text that the kept answer's reading does not cover.
            (changed(":7,", ":07,"), true),
            (changed(":7,", ":7.5,"), true),
            (changed(":7,", ":1e2,"), true),
            (changed(":7,", ":18446744073709551616,"), true),
            (changed(":7,", ":-7,"), true),
            (changed(":7,", ":\"7\","), true),
            (changed(":7,", ":,"), true),
            (changed("hi", "h\\ni"), true),
            (changed("hi", "h\"}]}}\""), true),
            (changed("hi", "h\ti"), true),
            // Laid out otherwise, or cut short, or with more after it.
            (changed("]}}", "],\"isError\":true}}"), true),
            (changed(",\"id\"", ", \"id\""), true),
            (
                changed("}]", "},{\"type\":\"text\",\"text\":\"hi\"}]"),
                true,
            ),
            (kept[..kept.len() - 1].to_owned(), true),
            (format!("{kept} "), true),
            (format!("{kept}}}"), true),
            (r#"{"jsonrpc":"2.0","id":7}"#.to_owned(), true),
            (String::new(), true),
        ];
        for (line, call) in left {
            assert!(!read_by_shape(&shape, &line, call), "read by shape: {line}");
        }
    }

    #[test]
    fn what_an_answer_says_beside_its_id_and_text_is_kept_with_its_layout() {
        let kept = r#"{ "jsonrpc": "2.0", "id": 3, "result": {"isError": true, "content": [{"type": "text", "text": "no", "_meta": {"k": [1, "\u00e9"]}}], "_meta": {}} }"#;
        let mut shape = Shape::default();
        keep(&mut shape, kept);
        let line = kept.replace("3", "40").replace("no", "not found");
        assert!(read_by_shape(&shape, &line, true), "{line}");
        let mut named = |_: &Value| true;
        match shape.read(&line, &mut named) {
            Some(Incoming::Response {
                id,
                outcome: Ok(Body::Call(result)),
            }) => {
                assert_eq!(id, 40);
                assert_eq!(result, CallResult::text("not found").with_error(true));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn only_a_plain_call_answer_of_one_text_without_escapes_is_kept() {
        let not_kept = [
            // Read as text: not the answer to a call, or its result before its id.
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
                false,
            ),
            (
                r#"{"result":{"content":[{"type":"text","text":"hi"}]},"jsonrpc":"2.0","id":7}"#,
                true,
            ),
            // Not one text, or one with escapes.
            (r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#, true),
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a\/b"}]}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"\u0041"}]}}"#,
                true,
            ),
            // Read by serde_json.
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"\ud83d\ude00"}]}}"#,
                true,
            ),
        ];
        for (line, call) in not_kept {
            let mut shape = Shape::default();
            let mut named = |_: &Value| call;
            let _ = answer(line, &mut Some(&mut named), Some(&mut shape));
            assert!(shape.kept.is_none(), "kept: {line}");
        }
        // Past the bound, what was kept before is let go.
        let mut shape = Shape::default();
        keep(
            &mut shape,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
        );
        let pad = "x".repeat(MOST_KEPT);
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":7,"pad":"{pad}","result":{{"content":[{{"type":"text","text":"hi"}}]}}}}"#
        );
        keep(&mut shape, &long);
        assert!(shape.kept.is_none());
        // A text of any length is not kept: only what is around it.
        let text = "y".repeat(10 * MOST_KEPT);
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#
        );
        keep(&mut shape, &line);
        let kept = shape.kept.as_ref().map(|k| k.parts.len());
        assert_eq!(kept, Some(line.len() - text.len() - 1));
    }

    #[test]
    fn a_string_is_plain_when_no_byte_of_it_needs_an_escape() {
        let text = "abcdefghijklmnopqrstuvwxyzé\u{7f}";
        for len in 0..=text.len() {
            let Some(plain) = text.get(..len) else {
                continue;
            };
            assert!(is_plain(plain.as_bytes()), "{plain:?}");
            for special in ["\"", "\\", "\u{0}", "\u{1f}", "\n"] {
                for at in 0..=len {
                    if !plain.is_char_boundary(at) {
                        continue;
                    }
                    let s = format!("{}{special}{}", &plain[..at], &plain[at..]);
                    assert!(!is_plain(s.as_bytes()), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn a_run_of_plain_bytes_ends_at_the_first_special_one() {
        let text = "abcdefghijklmnopqrstuvwxyzé\u{7f}";
        for special in ["\"", "\\", "\u{0}", "\u{1f}", "\n"] {
            for at in 0..text.len() {
                if !text.is_char_boundary(at) {
                    continue;
                }
                let s = format!("{}{special}{}", &text[..at], &text[at..]);
                assert_eq!(plain_run(s.as_bytes(), 0), at, "{s:?}");
                assert_eq!(plain_run(s.as_bytes(), at), at, "{s:?}");
            }
        }
        assert_eq!(plain_run(text.as_bytes(), 3), text.len());
    }
}
