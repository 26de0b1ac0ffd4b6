//! Where each entry of `capabilities.json`, and each of its keys, is in
//! the file: so that a refused entry's problems name a line and column, as
//! a syntax error does.
//!
//! serde_json's values keep no positions; the text (already known to be
//! JSON) is read a second time by jsonc-parser, whose tree does.

use jsonc_parser::ast::{self, ObjectPropName};
use jsonc_parser::common::Ranged;
use jsonc_parser::{CollectOptions, ParseOptions, parse_to_ast};

/// A place in the capabilities file: 1-based line and column (in
/// characters, as editors count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Position {
    /// The line, from 1.
    pub line: usize,
    /// The column, from 1.
    pub column: usize,
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// Where one entry and its keys start.
#[derive(Debug, Default)]
pub(super) struct EntryPlaces {
    /// The entry's first character (its `{`).
    pub(super) at: Option<Position>,
    /// Each key's first character (its opening quote), in file order.
    keys: Vec<(String, Position)>,
}

impl EntryPlaces {
    /// Where `key` is; the entry's own place for the entry as a whole (an
    /// empty key) or a key it lacks.
    pub(super) fn of(&self, key: &str) -> Option<Position> {
        self.keys
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, p)| *p)
            .or(self.at)
    }
}

/// The places of the entries of `providers` in `text`, in file order;
/// empty when the text cannot be read so (then nothing is placed).
pub(super) fn entry_places(text: &[u8]) -> Vec<EntryPlaces> {
    let Ok(text) = std::str::from_utf8(text) else {
        return Vec::new();
    };
    let Ok(parsed) = parse_to_ast(text, &CollectOptions::default(), &ParseOptions::default())
    else {
        return Vec::new();
    };
    let Some(ast::Value::Object(top)) = parsed.value else {
        return Vec::new();
    };
    let Some(ast::Value::Array(providers)) = top.get("providers").map(|p| &p.value) else {
        return Vec::new();
    };
    let lines = Lines::new(text);
    providers
        .elements
        .iter()
        .map(|item| EntryPlaces {
            at: Some(lines.position(item.start())),
            keys: match item {
                ast::Value::Object(entry) => entry
                    .properties
                    .iter()
                    .map(|p| (name(&p.name), lines.position(p.start())))
                    .collect(),
                _ => Vec::new(),
            },
        })
        .collect()
}

fn name(name: &ObjectPropName<'_>) -> String {
    match name {
        ObjectPropName::String(s) => s.value.to_string(),
        ObjectPropName::Word(w) => w.value.to_owned(),
    }
}

/// Byte offsets to lines and columns.
struct Lines<'a> {
    text: &'a str,
    /// The offset each line starts at.
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        let starts = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1))
            .collect();
        Lines { text, starts }
    }

    fn position(&self, offset: usize) -> Position {
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts[line - 1];
        let column = self
            .text
            .get(start..offset)
            .map_or(1, |s| s.chars().count() + 1);
        Position { line, column }
    }
}
