//! A place in the capabilities file, as an editor counts it: so that a
//! refused entry's problems name a line and column, as a syntax error does.

/// A place in the capabilities file: 1-based line and column (in
/// characters, as editors count; a byte-order mark is not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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

/// Byte offsets of one text to lines and columns.
#[derive(Debug)]
pub(super) struct Lines<'a> {
    text: &'a str,
    /// The offset each line starts at.
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        let starts = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1))
            .collect();
        Lines { text, starts }
    }

    /// Where the character at byte `offset` is.
    pub(super) fn position(&self, offset: usize) -> Position {
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts[line - 1];
        let column = self
            .text
            .get(start..offset)
            .map_or(1, |s| s.chars().count() + 1);
        Position { line, column }
    }
}
