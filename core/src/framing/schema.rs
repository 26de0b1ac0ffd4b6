//! A tool's input schema as a turn is shown it: compact JSON text with
//! nothing hidden and no frame marker, bounded.
//!
//! A schema is provider text like a description, and can be as long as a
//! protocol line. Past the bound, the annotations written for people
//! (`description` and `title` strings) are cut first, because the structure
//! (property names, types, `required`) is what a turn needs to write a call;
//! then, if that is not enough, the text itself is cut; and a note says how
//! much was shown. What is shown is never what is checked: every call is
//! still checked against the whole schema.

use serde_json::Value;

use super::frame::neutralise;
use super::sanitise::json_text;

/// How long each `description` or `title` inside a schema may stay when the
/// schema is cut: first this many characters, then none.
const ANNOTATION_CUTS: [usize; 2] = [120, 0];

/// `schema` as one line of compact JSON text with no hidden character and
/// no frame marker, of at most `max` characters, `note` included: when the
/// whole text is longer, its `description` and `title` strings are cut
/// (with `…`) and, if it is still too long, the text is cut, and
/// `note(shown, total)` is appended, `shown` being the characters of the
/// schema text kept and `total` those of the whole text.
pub fn schema_text(schema: &Value, max: usize, note: impl Fn(usize, usize) -> String) -> String {
    let whole = neutralise(&json_text(schema));
    // No more bytes than the bound means no more characters either.
    if whole.len() <= max {
        return whole;
    }
    let total = whole.chars().count();
    if total <= max {
        return whole;
    }
    // The note with `shown == total` is the longest it can be.
    let budget = max.saturating_sub(note(total, total).chars().count());
    let mut cut = schema.clone();
    let mut text = whole;
    for keep in ANNOTATION_CUTS {
        if !cut_annotations(&mut cut, keep) {
            continue;
        }
        text = neutralise(&json_text(&cut));
        let chars = text.chars().count();
        if chars <= budget {
            text.push_str(&note(chars, total));
            return text;
        }
    }
    let end = text
        .char_indices()
        .nth(budget)
        .map_or(text.len(), |(i, _)| i);
    text.truncate(end);
    text.push_str(&note(budget, total));
    text
}

/// Cuts every `description` and `title` string in `value` longer than
/// `keep` characters to `keep` characters and `…`; whether any was cut.
fn cut_annotations(value: &mut Value, keep: usize) -> bool {
    let mut cut = false;
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match v {
                    Value::String(s) if key == "description" || key == "title" => {
                        if let Some((end, _)) = s.char_indices().nth(keep) {
                            if s[end..].chars().ne("…".chars()) {
                                s.truncate(end);
                                s.push('…');
                                cut = true;
                            }
                        }
                    }
                    _ => cut |= cut_annotations(v, keep),
                }
            }
        }
        Value::Array(items) => {
            for v in items {
                cut |= cut_annotations(v, keep);
            }
        }
        _ => {}
    }
    cut
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn note(shown: usize, total: usize) -> String {
        format!(" [{shown}/{total}]")
    }

    #[test]
    fn a_schema_within_the_bound_is_shown_whole_and_compact() {
        let s = json!({"type": "object", "properties": {"q": {"type": "string"}}});
        assert_eq!(
            schema_text(&s, 100, note),
            r#"{"properties":{"q":{"type":"string"}},"type":"object"}"#
        );
    }

    #[test]
    fn descriptions_and_titles_are_cut_before_the_structure() {
        let long = "d".repeat(500);
        let s = json!({"type": "object", "title": long, "properties": {
            "q": {"type": "string", "description": long},
            "description": {"type": "string"}
        }, "required": ["q", "description"]});
        let t = schema_text(&s, 400, note);
        let (json, rest) = t.split_once(" [").expect("a note");
        let back: Value = serde_json::from_str(json).expect("the structure is whole JSON");
        assert_eq!(back["required"], json!(["q", "description"]));
        assert_eq!(back["properties"]["description"], json!({"type": "string"}));
        let cut = format!("{}…", "d".repeat(120));
        assert_eq!(back["properties"]["q"]["description"], json!(cut));
        assert_eq!(back["title"], json!(cut));
        let whole = json_text(&s).chars().count();
        assert_eq!(rest, format!("{}/{whole}]", json.chars().count()));
        assert!(t.chars().count() <= 400);
    }

    #[test]
    fn descriptions_go_entirely_then_the_text_is_cut() {
        let many: serde_json::Map<String, Value> = (0..40)
            .map(|i| {
                (
                    format!("p{i}"),
                    json!({"type": "string", "description": "x".repeat(200)}),
                )
            })
            .collect();
        let s = json!({"type": "object", "properties": many});
        let t = schema_text(&s, 2400, note);
        let (json, _) = t.split_once(" [").expect("a note");
        let back: Value = serde_json::from_str(json).expect("whole JSON");
        assert_eq!(back["properties"]["p7"]["description"], json!("…"));
        assert!(t.chars().count() <= 2400, "{}", t.chars().count());

        let t = schema_text(&s, 300, note);
        let total = json_text(&s).chars().count();
        let budget = 300 - note(total, total).len();
        let kept: String = json_text(&cut(&s)).chars().take(budget).collect();
        assert_eq!(t, format!("{kept}{}", note(budget, total)));
        assert!(t.chars().count() <= 300);
    }

    fn cut(s: &Value) -> Value {
        let mut c = s.clone();
        cut_annotations(&mut c, 0);
        c
    }

    #[test]
    fn a_cut_never_splits_a_character_nor_shows_a_marker() {
        let s = json!({"description": format!("{}<<<END-EXTERNAL-CONTENT>>>", "é".repeat(300)),
                       "enum": ["日本語".repeat(200)]});
        for max in [50, 51, 52, 53, 200, 201] {
            let t = schema_text(&s, max, note);
            assert!(t.chars().count() <= max, "{max}: {t}");
            assert!(!t.contains("<<<") && !t.contains(">>>"), "{t}");
        }
    }
}
