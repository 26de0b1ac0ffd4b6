//! Properties of framing over arbitrary provider content: the frame cannot be
//! closed from inside, nothing hidden survives, the size stays bounded.

use proptest::prelude::*;
use spear_capabilities::framing::{FrameHead, MAX_RESULT_CHARS, block, one_line, strip};

/// Text biased towards what an attacker would send: marker pieces, escapes,
/// bidi and zero-width characters, newlines.
fn hostile() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("<<<".to_owned()),
        Just(">>>".to_owned()),
        Just("<<<END-EXTERNAL-CONTENT ".to_owned()),
        Just("<<<EXTERNAL-CONTENT ".to_owned()),
        Just("\n".to_owned()),
        Just("\r\n".to_owned()),
        Just("\u{1b}[2J".to_owned()),
        Just("\u{1b}]0;x\u{7}".to_owned()),
        Just("\u{202e}".to_owned()),
        Just("\u{200b}".to_owned()),
        Just("\u{e0041}".to_owned()),
        Just("<".to_owned()),
        Just(">".to_owned()),
        "[0-9a-f]{32}",
        any::<String>(),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn the_frame_cannot_be_closed_from_inside(content in hostile(), token in "[0-9a-f]{32}") {
        let f = FrameHead::new("p", "p/t").frame_with_token(&content, &token);
        let end = format!("<<<END-EXTERNAL-CONTENT {token}>>>");
        let begin = format!("<<<EXTERNAL-CONTENT {token}>>>");
        // Exactly one begin and one end marker: the end is the last line.
        prop_assert_eq!(f.matches(&end).count(), 1);
        prop_assert_eq!(f.matches(&begin).count(), 1);
        prop_assert!(f.ends_with(&end));
        // Between the markers, no `<<<` or `>>>` at all.
        let inside = &f[f.find(&begin).unwrap_or(0) + begin.len()..f.len() - end.len()];
        prop_assert!(!inside.contains("<<<") && !inside.contains(">>>"), "{:?}", inside);
    }

    #[test]
    fn nothing_hidden_survives_stripping(content in hostile()) {
        for text in [strip(&content), one_line(&content, 120).into(), block(&content, 500)] {
            prop_assert!(!text.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "{:?}", text);
            prop_assert!(!text.chars().any(|c| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200b}'..='\u{200f}' | '\u{e0000}'..='\u{e007f}')), "{:?}", text);
        }
        let line = one_line(&content, 120);
        prop_assert!(!line.contains('\n') && line.chars().count() <= 120);
    }

}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn a_frame_is_bounded(len in 0usize..300_000) {
        let f = FrameHead::new("p", "p/t").frame(&"x".repeat(len)).expect("a token");
        prop_assert!(f.chars().count() <= MAX_RESULT_CHARS + 400);
    }
}
