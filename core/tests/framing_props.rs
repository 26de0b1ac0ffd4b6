//! Properties of framing over arbitrary provider content: the frame cannot be
//! closed from inside, nothing hidden survives, the size stays bounded, and a
//! schema as a turn is shown it is bounded, one line, and whole JSON when it
//! fits.

use proptest::prelude::*;
use serde_json::{Value, json};
use spear_capabilities::internals::framing::{
    FrameHead, MAX_RESULT_CHARS, SchemaCut, block, json_text, neutralise, one_line, schema_text,
    strip,
};

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

/// A schema-shaped value whose strings are [`hostile`]: nested
/// properties, each with a description and a title, and an enum.
fn hostile_schema() -> impl Strategy<Value = Value> {
    let leaf = (hostile(), hostile(), prop::collection::vec(hostile(), 0..3)).prop_map(
        |(description, title, values)| {
            json!({"type": "string", "description": description, "title": title, "enum": values})
        },
    );
    leaf.prop_recursive(3, 16, 4, |inner| {
        (prop::collection::btree_map("[a-z<>]{1,6}", inner, 0..4), hostile()).prop_map(
            |(properties, description)| {
                json!({"type": "object", "properties": properties, "description": description})
            },
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    #[test]
    fn a_shown_schema_is_bounded_plain_and_whole_json_when_it_fits(
        schema in hostile_schema(),
        max in 40usize..3000,
    ) {
        let note = |_: SchemaCut, shown: usize, total: usize| format!(" … ({shown} of {total} shown)");
        let t = schema_text(&schema, max, max, note);
        prop_assert!(t.chars().count() <= max, "{} > {max}", t.chars().count());
        prop_assert!(!t.contains('\n') && !t.contains("<<<") && !t.contains(">>>"), "{:?}", t);
        prop_assert!(!t.chars().any(|c| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200b}'..='\u{200f}' | '\u{e0000}'..='\u{e007f}')), "{:?}", t);
        let whole = json_text(&schema);
        if whole.chars().count() <= max && !whole.contains("<<<") && !whole.contains(">>>") {
            prop_assert_eq!(&t, &whole);
            let back: Value = serde_json::from_str(&t).expect("whole JSON");
            prop_assert_eq!(back, schema);
        } else if !t.ends_with(" shown)") {
            // Not cut, only marker-neutralised: still the whole text.
            prop_assert!(whole.chars().count() <= max, "{:?}", t);
        }
    }

    #[test]
    fn a_shortened_schema_keeps_every_property_name_and_what_is_required(
        schema in hostile_schema().prop_map(|mut s| {
            s["required"] = json!(s["properties"].as_object().map(|p| p.keys().cloned().collect::<Vec<_>>()));
            s
        }),
        max in 40usize..3000,
    ) {
        let note = |cut: SchemaCut, _: usize, _: usize| format!(" … ({cut:?})");
        // A larger bound than any of these schemas' names need.
        let t = schema_text(&schema, max, 1_000_000, note);
        let json = t.rsplit_once(" … (").map_or(t.as_str(), |(json, _)| json);
        let back: Value = serde_json::from_str(json).expect("whole JSON");
        // Names are shown as every provider text is: no marker imitated.
        // As sets: neutralising a name can change where it sorts.
        let mut want: Vec<String> = names(&schema).iter().map(|n| neutralise(n)).collect();
        let mut got = names(&back);
        want.sort();
        got.sort();
        prop_assert_eq!(got, want);
        let required = schema["required"].as_array().map(|names| {
            names.iter().filter_map(Value::as_str).map(neutralise).collect::<Vec<_>>()
        });
        prop_assert_eq!(&back["required"], &json!(required));
    }
}

/// Every property name of `schema`, by path.
fn names(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(properties) = schema["properties"].as_object() {
        for (name, sub) in properties {
            out.push(name.clone());
            out.extend(names(sub).into_iter().map(|n| format!("{name}.{n}")));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn a_frame_is_bounded(len in 0usize..300_000) {
        let f = FrameHead::new("p", "p/t").frame(&"x".repeat(len)).expect("a token");
        prop_assert!(f.chars().count() <= MAX_RESULT_CHARS + 400);
    }
}
