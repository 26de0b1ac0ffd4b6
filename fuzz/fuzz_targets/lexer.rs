//! Fuzzes the command lexer and recognizer: no panic, spans inside the line
//! and on character boundaries, top-level tokens in the line's order, and a
//! pre-filter that never changes an answer.
//!
//! `cargo +nightly fuzz run lexer -- -dict=fuzz/lexer.dict`

#![no_main]

use libfuzzer_sys::fuzz_target;
use spear_capabilities::command::{TokenKind, lex, recognize, recognize_unfiltered};

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let lexed = lex(line);
    let mut last_top = None;
    for t in &lexed.tokens {
        assert!(t.start <= t.end && t.end <= line.len(), "span out of the line");
        assert!(line.is_char_boundary(t.start) && line.is_char_boundary(t.end));
        if matches!(t.kind, TokenKind::Word { .. }) {
            assert!(lexed.text(t).is_some(), "a word without its text");
        }
        if t.depth == 0 {
            // Empty here-document bodies at the end of the line share a start.
            assert!(last_top.is_none_or(|s| s <= t.start), "top-level tokens out of order");
            last_top = Some(t.start);
        }
    }
    if let Some(open) = lexed.unterminated {
        assert!(open.start < line.len());
    }
    assert_eq!(recognize(line), recognize_unfiltered(line));
});
