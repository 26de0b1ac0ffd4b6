//! The capabilities file read once, into a tree that knows where each key
//! is and which keys are given twice: the one reading of the file, for the
//! registry and for the operator's editor.
//!
//! jsonc-parser reads the text, strict ([`strict`]: no comment, trailing
//! comma or other JSON5 liberty). Its tree keeps each value's place and
//! every key of an object, a repeated one too, which serde_json would fold
//! into its last copy and another reader into its first. So a repeated key
//! has no meaning here: inside an entry it refuses the entry
//! ([`Repeat`]), outside the entries it is a fault of the file. The CLI
//! edits the file through the concrete syntax tree the same parser builds
//! from the same text with the same options ([`edit_tree`]), and finds an
//! entry by its index as this reading numbers it, so an edit changes what
//! the registry reads and nothing else.

use jsonc_parser::ast::{self, ObjectPropName};
use jsonc_parser::common::{Range, Ranged};
use jsonc_parser::cst::CstRootNode;
use jsonc_parser::{CollectOptions, ParseOptions, parse_to_ast};
use serde_json::{Map, Value};

use super::position::{Lines, Position};
use super::problem::closest;

/// A UTF-8 byte-order mark: accepted at the start of the file, and not
/// counted in its columns.
pub const BYTE_ORDER_MARK: &str = "\u{feff}";

/// Why the file cannot be read as a registry.
#[derive(Debug)]
pub(super) enum Fault {
    /// Not JSON (or not UTF-8, or a key given twice outside the entries),
    /// at a place.
    Syntax { at: Position, message: String },
    /// JSON, but not `{"providers": [...]}`.
    Shape(String),
}

/// The file's entries, as read.
#[derive(Debug)]
pub(super) struct Document {
    /// The entries of `providers`, in file order.
    pub(super) entries: Vec<Node>,
}

/// One entry of `providers`.
#[derive(Debug)]
pub(super) struct Node {
    /// Where it begins (its `{`).
    pub(super) at: Position,
    /// Its value; of a key given twice, the first copy.
    pub(super) value: Value,
    /// Where each of its keys is (the first copy's opening quote), in file
    /// order.
    pub(super) keys: Places,
    /// Every key given twice inside it, at any depth, in file order.
    pub(super) repeats: Vec<Repeat>,
}

impl Node {
    /// Where `key` is; the entry's own place for the entry as a whole (an
    /// empty key) or a key it lacks.
    pub(super) fn place_of(&self, key: &str) -> Position {
        self.keys
            .iter()
            .find(|(k, _)| k == key)
            .map_or(self.at, |(_, p)| *p)
    }
}

/// Keys and where each is, in file order.
type Places = Vec<(String, Position)>;

/// A key given a second time inside an entry.
#[derive(Debug)]
pub(super) struct Repeat {
    /// The entry's key it is, or is inside of.
    pub(super) key: String,
    /// The repeated key, when it is inside the value of `key`.
    pub(super) inner: Option<String>,
    /// Where the first copy is.
    pub(super) first: Position,
    /// Where this copy is.
    pub(super) at: Position,
}

impl Repeat {
    /// What is wrong, for the problem of `key`.
    pub(super) fn message(&self) -> String {
        let what = match &self.inner {
            Some(inner) => format!("{inner:?} given twice"),
            None => "given twice".to_owned(),
        };
        format!("{what} (first at {}); a key may be given once", self.first)
    }
}

/// The parser's options: JSON, nothing more. Each is named, so that a
/// liberty a new version of the parser adds cannot be taken silently.
fn strict() -> ParseOptions {
    ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// The concrete syntax tree of `text` (the file's text, its byte-order
/// mark left out) that the CLI edits: built by the same parser with the
/// same options as the registry's reading, so its `providers` elements are
/// the registry's entries, index for index.
///
/// # Errors
/// The parser's message, when `text` is not JSON.
pub fn edit_tree(text: &str) -> Result<CstRootNode, String> {
    CstRootNode::parse(text, &strict()).map_err(|e| e.to_string())
}

/// The text of the file's `bytes`: UTF-8, a byte-order mark left out.
pub(super) fn text(bytes: &[u8]) -> Result<&str, Fault> {
    let at_start = Position { line: 1, column: 1 };
    if let Some(mark) = [[0xff, 0xfe], [0xfe, 0xff]]
        .iter()
        .find(|m| bytes.starts_with(&m[..]))
    {
        return Err(Fault::Syntax {
            at: at_start,
            message: format!(
                "the file is UTF-16 (it starts with the byte-order mark {:02X} {:02X}); save it as UTF-8",
                mark[0], mark[1]
            ),
        });
    }
    let bytes = bytes
        .strip_prefix(BYTE_ORDER_MARK.as_bytes())
        .unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|e| {
        let valid = std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default();
        Fault::Syntax {
            at: Lines::new(valid).position(valid.len()),
            message: format!(
                "not UTF-8 (the byte {:#04x}); save the file as UTF-8",
                bytes[e.valid_up_to()]
            ),
        }
    })
}

/// Reads `text` as `{"providers": [...]}`.
pub(super) fn read(text: &str) -> Result<Document, Fault> {
    let mut reader = Reader {
        text,
        lines: Lines::new(text),
        repeats: Vec::new(),
    };
    let parsed = parse_to_ast(text, &CollectOptions::default(), &strict()).map_err(|e| {
        let message = e.kind().to_string();
        let mut chars = message.chars();
        Fault::Syntax {
            at: reader.lines.position(e.range().start),
            // Ours are lower-case, as every message of the crate.
            message: chars
                .next()
                .map(|c| c.to_lowercase().chain(chars).collect())
                .unwrap_or(message),
        }
    })?;
    let shape = |message: &str| Fault::Shape(message.to_owned());
    let Some(ast::Value::Object(top)) = parsed.value else {
        return Err(match parsed.value {
            None => reader.fault(
                text.len(),
                r#"the file is empty; expected an object {"providers": [...]}"#.to_owned(),
            ),
            Some(_) => shape(r#"expected an object {"providers": [...]}"#),
        });
    };
    let mut seen: Vec<(String, Position)> = Vec::new();
    let mut providers = None;
    for prop in &top.properties {
        let name = reader.name(&prop.name)?;
        let at = reader.lines.position(prop.range.start);
        if let Some((_, first)) = seen.iter().find(|(k, _)| *k == name) {
            return Err(Fault::Syntax {
                at,
                message: format!(
                    "key {name:?} given twice (first at {first}); a key may be given once"
                ),
            });
        }
        if name == "providers" {
            providers = Some(&prop.value);
        }
        seen.push((name, at));
    }
    if let Some((key, _)) = seen.iter().find(|(k, _)| k != "providers") {
        return Err(Fault::Shape(match closest(key, ["providers"]) {
            Some(near) => format!("unknown top-level key {key:?}; did you mean {near:?}?"),
            None => format!("unknown top-level key {key:?}; allowed: \"providers\""),
        }));
    }
    let Some(ast::Value::Array(items)) = providers else {
        return Err(shape(r#"expected "providers" to be an array of entries"#));
    };
    let mut entries = Vec::with_capacity(items.elements.len());
    for item in &items.elements {
        let at = reader.lines.position(item.range().start);
        let (value, keys) = match item {
            ast::Value::Object(object) => {
                let (map, keys) = reader.object(object, None)?;
                (Value::Object(map), keys)
            }
            other => (reader.value(other, None)?, Vec::new()),
        };
        entries.push(Node {
            at,
            value,
            keys,
            repeats: std::mem::take(&mut reader.repeats),
        });
    }
    Ok(Document { entries })
}

/// The tree to values, collecting the repeated keys of the entry it reads.
struct Reader<'t> {
    text: &'t str,
    lines: Lines<'t>,
    repeats: Vec<Repeat>,
}

impl Reader<'_> {
    fn fault(&self, offset: usize, message: String) -> Fault {
        Fault::Syntax {
            at: self.lines.position(offset),
            message,
        }
    }

    /// `v` as a value; `key` is the entry's key it is inside of.
    fn value(&mut self, v: &ast::Value<'_>, key: Option<&str>) -> Result<Value, Fault> {
        Ok(match v {
            ast::Value::StringLit(s) => {
                self.plain(s.range)?;
                Value::String(s.value.to_string())
            }
            ast::Value::NumberLit(n) => serde_json::from_str::<serde_json::Number>(n.value)
                .map(Value::Number)
                .map_err(|_| {
                    self.fault(
                        n.range.start,
                        format!("the number {} is out of range", n.value),
                    )
                })?,
            ast::Value::BooleanLit(b) => Value::Bool(b.value),
            ast::Value::NullKeyword(_) => Value::Null,
            ast::Value::Array(a) => Value::Array(
                a.elements
                    .iter()
                    .map(|e| self.value(e, key))
                    .collect::<Result<_, _>>()?,
            ),
            ast::Value::Object(o) => Value::Object(self.object(o, key)?.0),
        })
    }

    /// `o` as a map, with where each key is; a key given again is kept as
    /// a [`Repeat`], its first copy in the map.
    fn object(
        &mut self,
        o: &ast::Object<'_>,
        key: Option<&str>,
    ) -> Result<(Map<String, Value>, Places), Fault> {
        let mut map = Map::new();
        let mut places = Places::new();
        for prop in &o.properties {
            let name = self.name(&prop.name)?;
            let at = self.lines.position(prop.range.start);
            // A repeated copy is still read: what is not JSON in it is a
            // fault of the file.
            let value = self.value(&prop.value, Some(key.unwrap_or(&name)))?;
            if let Some((_, first)) = places.iter().find(|(k, _)| *k == name) {
                self.repeats.push(Repeat {
                    key: key.unwrap_or(&name).to_owned(),
                    inner: key.map(|_| name.clone()),
                    first: *first,
                    at,
                });
                continue;
            }
            map.insert(name.clone(), value);
            places.push((name, at));
        }
        Ok((map, places))
    }

    fn name(&self, name: &ObjectPropName<'_>) -> Result<String, Fault> {
        match name {
            ObjectPropName::String(s) => {
                self.plain(s.range)?;
                Ok(s.value.to_string())
            }
            // Not with the strict options; refused all the same.
            ObjectPropName::Word(w) => Err(self.fault(
                w.range.start,
                format!("expected a string for the key, found {}", w.value),
            )),
        }
    }

    /// A string literal must hold no raw control character: JSON writes
    /// them as escapes, and the parser lets them through.
    fn plain(&self, range: Range) -> Result<(), Fault> {
        let literal = &self.text[range.start..range.end];
        match literal.char_indices().find(|(_, c)| c.is_ascii_control() && *c != '\u{7f}') {
            Some((i, c)) => Err(self.fault(
                range.start + i,
                format!(
                    "a control character (U+{:04X}) inside a string; JSON writes it as an escape (\\u{:04x})",
                    u32::from(c),
                    u32::from(c)
                ),
            )),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(text: &str) -> String {
        match read(text) {
            Ok(_) => panic!("{text:?} was read"),
            Err(Fault::Syntax { at, message }) => format!("{at}: {message}"),
            Err(Fault::Shape(message)) => message,
        }
    }

    #[test]
    fn what_json_forbids_is_a_fault_with_its_place() {
        assert_eq!(
            fault("{\"providers\": [\"a\nb\"]}"),
            "1:18: a control character (U+000A) inside a string; JSON writes it as an escape (\\u000a)"
        );
        assert_eq!(
            fault("{\"providers\": [1e400]}"),
            "1:16: the number 1e400 is out of range"
        );
        assert_eq!(
            fault("{\"providers\": [] // note\n}"),
            "1:18: comments are not allowed"
        );
        assert_eq!(
            fault("{\"providers\": [.5]}"),
            "1:16: leading or trailing decimal points on numbers are not allowed"
        );
        assert_eq!(
            fault("  "),
            "1:3: the file is empty; expected an object {\"providers\": [...]}"
        );
    }

    #[test]
    fn a_repeated_key_is_kept_with_both_places_and_the_first_copy_read() {
        let doc = read("{\"providers\": [\n {\"a\": 1, \"b\": {\"c\": 2, \"c\": 3}, \"a\": 4}]}")
            .expect("reads");
        let entry = &doc.entries[0];
        assert_eq!(entry.value, serde_json::json!({"a": 1, "b": {"c": 2}}));
        let repeats: Vec<String> = entry
            .repeats
            .iter()
            .map(|r| format!("{} {:?} {} {}", r.key, r.inner, r.first, r.at))
            .collect();
        assert_eq!(repeats, ["b Some(\"c\") 2:17 2:25", "a None 2:3 2:34"]);
        assert_eq!(entry.place_of("b").to_string(), "2:11");
        assert_eq!(entry.place_of("").to_string(), "2:2");
    }

    #[test]
    fn a_byte_order_mark_is_left_out_and_utf16_is_named() {
        assert_eq!(text(b"\xef\xbb\xbf{}").ok(), Some("{}"));
        assert!(matches!(
            text(b"\xff\xfe{\x00"),
            Err(Fault::Syntax { message, .. }) if message.starts_with("the file is UTF-16")
        ));
        assert!(matches!(
            text(b"{\n \"a\xff\": 1}"),
            Err(Fault::Syntax { at, message })
                if at.to_string() == "2:4" && message == "not UTF-8 (the byte 0xff); save the file as UTF-8"
        ));
    }
}
