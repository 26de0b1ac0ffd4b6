//! Array subscripts and `$[...]`: where bash reads `[...]` as one piece,
//! so that a `<<` inside is a shift, not a here-document.

use super::{FrameKind, Lexer};

/// Whether `raw`, a word as typed, is an assignment (`name=`, `name+=`,
/// `name[...]=`), after which bash still reads assignments.
#[inline(always)]
pub(super) fn is_assignment(raw: &str) -> bool {
    let b = raw.as_bytes();
    let ident = b
        .iter()
        .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_'))
        .unwrap_or(b.len());
    if ident == 0 || b[0].is_ascii_digit() {
        return false;
    }
    let mut rest = &raw[ident..];
    if rest.starts_with('[') {
        match rest.find(']') {
            Some(n) => rest = &rest[n + 1..],
            None => return false,
        }
    }
    rest.starts_with('=') || rest.starts_with("+=")
}

/// Whether `raw` is a name bash could assign to (`[A-Za-z_][A-Za-z0-9_]*`).
fn is_identifier(raw: &str) -> bool {
    let b = raw.as_bytes();
    !b.is_empty()
        && !b[0].is_ascii_digit()
        && b.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

impl Lexer<'_> {
    /// `[` and `]`: a subscript or `$[...]` opens and closes; elsewhere
    /// they are ordinary characters.
    pub(super) fn bracket(&mut self, b: u8) {
        let at = self.pos;
        let kind = self.frame().kind;
        if matches!(kind, FrameKind::Bracket | FrameKind::Subscript) {
            let frame = self.frame();
            match b {
                b'[' => frame.brackets += 1,
                _ if frame.brackets > 0 => frame.brackets -= 1,
                _ => return self.close(1),
            }
        } else if b == b'['
            && let Some(Some(word)) = self.frames.last().map(|f| &f.word)
            && word.assign_pos
            && word.dquote.is_none()
            && is_identifier(&self.src[word.start..at])
        {
            return self.open_in_word(FrameKind::Subscript, at, 1);
        }
        self.word().text.push(char::from(b));
        self.pos = at + 1;
    }
}
