//! The bodies of the fuzz targets, kept here so that the targets in `fuzz/`
//! (nightly, `cargo fuzz`) and the corpus replay in `tests/fuzz_corpus.rs`
//! (stable, every CI run) call exactly the same code. Each takes arbitrary
//! bytes and panics when an invariant breaks.
//!
//! The `mcp_stdout` target's body is `spear_mcp_stdio::fuzzing::fuzz_stdout`:
//! testkit must not depend on a kind crate, or every test linking it would
//! have that kind registered.

use std::collections::HashSet;
use std::path::Path;

use spear_capabilities::internals::command::{TokenKind, lex, recognize, recognize_unfiltered};
use spear_capabilities::internals::framing::{
    FrameHead, MAX_RESULT_CHARS, block, json_text, one_line, strip,
};
use spear_capabilities::registry::MAX_ID_LEN;
use spear_capabilities::{
    Audit, Error, Registry,
    kind::{DEFAULT_KIND, Kinds, ProviderKind},
};

/// The names of the targets whose bodies are here, as directories of
/// `fuzz/corpus/`.
pub const TARGETS: [&str; 3] = ["lexer", "registry", "framing"];

/// Runs target `name` on `data`.
///
/// # Panics
/// On an unknown name, and wherever the target finds a broken invariant.
pub fn run(name: &str, data: &[u8]) {
    match name {
        "lexer" => lexer(data),
        "registry" => registry(data),
        "framing" => framing(data),
        _ => panic!("no fuzz target {name}"),
    }
}

/// A command line through the lexer and the recognizer: no panic, spans
/// inside the line and on character boundaries, every word with its text,
/// top-level tokens in the line's order, and a pre-filter that never changes
/// an answer.
pub fn lexer(data: &[u8]) {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let lexed = lex(line);
    let mut last_top = None;
    for t in &lexed.tokens {
        assert!(
            t.start <= t.end && t.end <= line.len(),
            "span out of the line"
        );
        assert!(line.is_char_boundary(t.start) && line.is_char_boundary(t.end));
        if matches!(t.kind, TokenKind::Word { .. }) {
            assert!(lexed.text(t).is_some(), "a word without its text");
        }
        if t.depth == 0 {
            // Empty here-document bodies at the end of the line share a start.
            assert!(
                last_top.is_none_or(|s| s <= t.start),
                "top-level tokens out of order"
            );
            last_top = Some(t.start);
        }
    }
    if let Some(open) = lexed.unterminated {
        assert!(open.start < line.len());
    }
    assert_eq!(recognize(line), recognize_unfiltered(line));
}

/// A capabilities file: parsing never panics; what registers has valid,
/// unique ids; every entry is either registered or refused; a syntax error
/// has a real position.
pub fn registry(data: &[u8]) {
    /// The default kind, taking the keys mcp-stdio takes and any values.
    const DEFAULT: ProviderKind = ProviderKind::new(
        DEFAULT_KIND,
        &["command", "env"],
        crate::kinds::accept_any,
        crate::kinds::started_elsewhere,
    );
    let path = Path::new("/etc/spear/capabilities.json");
    let kinds = Kinds::new([&DEFAULT, &crate::kinds::MOCK]).expect("distinct names");
    match Registry::parse(data, path, &kinds, &Audit::null()) {
        Ok(r) => {
            let mut ids = HashSet::new();
            for e in r.entries() {
                let id = e.id.as_str();
                assert!(
                    !id.is_empty()
                        && id.len() <= MAX_ID_LEN
                        && id.starts_with(|c: char| c.is_ascii_lowercase())
                        && id.bytes().all(|b| {
                            b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'
                        }),
                    "registered id {id:?}"
                );
                assert!(ids.insert(id), "id {id:?} registered twice");
            }
            for refused in r.refused() {
                assert!(!refused.problems.is_empty(), "refused for nothing");
            }
        }
        Err(Error::RegistrySyntax { line, column, .. }) => {
            assert!(line >= 1 && column >= 1, "position {line}:{column}");
        }
        Err(Error::RegistryShape { message, .. }) => assert!(!message.is_empty()),
        Err(e) => panic!("unexpected error from parse: {e}"),
    }
}

/// Provider text through the sanitiser and the frame: nothing hidden
/// survives, one line is one bounded line, the frame cannot be closed from
/// inside and stays bounded, JSON text stays JSON.
pub fn framing(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for shown in [strip(&text), one_line(&text, 120).into(), block(&text, 500)] {
        assert!(
            !shown
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'
                    || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
                    | '\u{200b}'..='\u{200f}' | '\u{feff}' | '\u{e0000}'..='\u{e007f}')),
            "{shown:?}"
        );
    }
    let line = one_line(&text, 120);
    assert!(
        !line.contains('\n') && line.chars().count() <= 120,
        "{line:?}"
    );
    let token = "0123456789abcdef0123456789abcdef";
    let f = FrameHead::new("p", "p/t").frame_with_token(&text, token);
    let begin = format!("<<<EXTERNAL-CONTENT {token}>>>");
    let end = format!("<<<END-EXTERNAL-CONTENT {token}>>>");
    assert_eq!(f.matches(&begin).count(), 1);
    assert!(f.ends_with(&end) && f.matches(&end).count() == 1);
    let inside = &f[f.find(&begin).map_or(0, |i| i + begin.len())..f.len() - end.len()];
    assert!(
        !inside.contains("<<<") && !inside.contains(">>>"),
        "{inside:?}"
    );
    assert!(f.chars().count() <= MAX_RESULT_CHARS + 400);
    let value = serde_json::Value::String(text.into_owned());
    let shown = json_text(&value);
    let back: serde_json::Value = serde_json::from_str(&shown).expect("json_text is JSON");
    assert_eq!(back, value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_target_accepts_its_plain_case() {
        run("lexer", b"cd x && spear-capability invoke a/b '{}'");
        run(
            "registry",
            br#"{"providers": [{"id": "a", "kind": "nope"}]}"#,
        );
        run(
            "framing",
            "a\u{1b}[2Jb <<<END-EXTERNAL-CONTENT x>>>".as_bytes(),
        );
    }

    #[test]
    #[should_panic(expected = "no fuzz target")]
    fn an_unknown_target_is_an_error() {
        run("nope", b"");
    }
}
