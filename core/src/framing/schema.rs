//! A tool's schema as a turn is shown it: compact JSON text with nothing
//! hidden and no frame marker, bounded, and never without a name it needs.
//!
//! A schema is provider text like a description, and can be as long as a
//! protocol line. Past the bound it is shortened in steps, each taken on the
//! whole schema, until one fits ([`SchemaCut`]): what is written for people
//! goes first (descriptions and titles shortened, then left out, with
//! examples and defaults), then the details of each value (patterns,
//! formats, ranges), then allowed values. What is left then is what a call
//! cannot be written without: every property name, its type, and what is
//! required. That much is shown even past the bound, up to a second, larger
//! bound; only a schema with more names than that is cut as text, with
//! `required` first so no required name is among what is cut. A note ends
//! every shortened schema and says what was left out. What is shown is never
//! what is checked: every call is still checked against the whole schema.

use serde_json::{Map, Value};

use super::frame::neutralise;
use super::sanitise::json_text;
use crate::keywords::{COMBINATIONS, Holds, holds};

/// How a shown schema was shortened, from the least to the most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaCut {
    /// Descriptions and titles shortened to `ANNOTATION_CHARS` (120 characters); examples,
    /// defaults and comments left out.
    Annotations,
    /// Descriptions, titles, examples, defaults and comments left out.
    NoAnnotations,
    /// Only types, properties, `required`, items, combinations, references
    /// and allowed values (`enum`, `const`) kept.
    Structure,
    /// Only types, property names, `required`, items, combinations and
    /// references kept.
    Names,
    /// Even that was longer than the larger bound: the text is cut, with
    /// `required` first.
    Text,
}

/// How long a description or title inside a schema stays at
/// [`SchemaCut::Annotations`], in characters.
pub(crate) const ANNOTATION_CHARS: usize = 120;

/// Keywords written for people.
const ANNOTATIONS: &[&str] = &["description", "title"];
/// Keywords that illustrate a value: never needed to write a call.
const ILLUSTRATIONS: &[&str] = &["examples", "example", "default", "$comment"];
/// What [`SchemaCut::Structure`] keeps of a schema.
const STRUCTURE: &[&str] = &[
    "type",
    "properties",
    "required",
    "items",
    "prefixItems",
    "additionalProperties",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "$defs",
    "definitions",
    "enum",
    "const",
];
/// What [`SchemaCut::Names`] keeps of a schema.
const NAMES: &[&str] = &[
    "type",
    "properties",
    "required",
    "items",
    "prefixItems",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "$defs",
    "definitions",
];
/// `schema` as one line of compact JSON text with no hidden character and
/// no frame marker.
///
/// When the whole text is longer than `max` characters, it is shortened
/// (see [`SchemaCut`]) and `note(cut, shown, total)` is appended, `shown`
/// being the characters of the schema text kept and `total` those of the
/// whole text. The result is at most `max` characters, note included,
/// unless only names, types and `required` are left: then at most
/// `names_max` (taken as at least `max`).
pub fn schema_text(
    schema: &Value,
    max: usize,
    names_max: usize,
    note: impl Fn(SchemaCut, usize, usize) -> String,
) -> String {
    let whole = neutralise(&json_text(schema));
    // No more bytes than the bound means no more characters either.
    if whole.len() <= max {
        return whole;
    }
    let total = whole.chars().count();
    if total <= max {
        return whole;
    }
    let names_max = names_max.max(max);
    let steps = [
        (SchemaCut::Annotations, max),
        (SchemaCut::NoAnnotations, max),
        (SchemaCut::Structure, max),
        (SchemaCut::Names, names_max),
    ];
    let mut names = Value::Null;
    for (cut, bound) in steps {
        let mut shortened = schema.clone();
        shorten(&mut shortened, cut);
        let mut text = neutralise(&json_text(&shortened));
        let chars = text.chars().count();
        // The note with `shown == total` is the longest it can be.
        if chars + note(cut, total, total).chars().count() <= bound {
            text.push_str(&note(cut, chars, total));
            return text;
        }
        names = shortened;
    }
    let budget = names_max.saturating_sub(note(SchemaCut::Text, total, total).chars().count());
    let mut text = neutralise(&required_first(names));
    let end = text
        .char_indices()
        .nth(budget)
        .map_or(text.len(), |(i, _)| i);
    text.truncate(end);
    let shown = text.chars().count();
    text.push_str(&note(SchemaCut::Text, shown, total));
    text
}

/// The JSON text of `schema` with its top-level `required` first, so that
/// a cut at the end never takes a required name.
fn required_first(schema: Value) -> String {
    let Value::Object(mut map) = schema else {
        return json_text(&schema);
    };
    let Some(required) = map.remove("required") else {
        return json_text(&map);
    };
    let rest = json_text(&map);
    let rest = rest.strip_prefix('{').unwrap_or(&rest);
    let sep = if rest == "}" { "" } else { "," };
    format!("{{\"required\":{}{sep}{rest}", json_text(&required))
}

/// Shortens every schema in `value` (the schema itself, and each one it
/// holds, by keyword) as `cut` says.
fn shorten(value: &mut Value, cut: SchemaCut) {
    let Value::Object(map) = value else {
        return;
    };
    match cut {
        SchemaCut::Annotations => {
            for key in ANNOTATIONS {
                if let Some(Value::String(s)) = map.get_mut(*key) {
                    if let Some((end, _)) = s.char_indices().nth(ANNOTATION_CHARS) {
                        s.truncate(end);
                        s.push('…');
                    }
                }
            }
            map.retain(|k, _| !ILLUSTRATIONS.contains(&k.as_str()));
        }
        SchemaCut::NoAnnotations => map.retain(|k, v| {
            let annotation = ANNOTATIONS.contains(&k.as_str()) && v.is_string();
            !(annotation || ILLUSTRATIONS.contains(&k.as_str()))
        }),
        SchemaCut::Structure => map.retain(|k, v| {
            STRUCTURE.contains(&k.as_str()) && (k != "additionalProperties" || v.is_boolean())
        }),
        SchemaCut::Names | SchemaCut::Text => map.retain(|k, _| NAMES.contains(&k.as_str())),
    }
    for (key, sub) in map.iter_mut() {
        match (holds(key), sub) {
            (Holds::NamedSchemas | Holds::Definitions, Value::Object(schemas)) => {
                schemas.values_mut().for_each(|s| shorten(s, cut));
            }
            (Holds::Schemas, Value::Array(schemas)) => {
                schemas.iter_mut().for_each(|s| shorten(s, cut))
            }
            (Holds::Schemas, s) => shorten(s, cut),
            _ => {}
        }
    }
}

/// The schema a path of property names leads to in `schema`: each name is
/// looked up in `properties`, in the branches of `allOf`, `anyOf` and
/// `oneOf`, through `items`, and through a local `$ref` (`#/...`) of `root`.
pub(crate) fn property_schema<'a>(root: &'a Value, path: &[impl AsRef<str>]) -> Option<&'a Value> {
    let mut at = root;
    for name in path {
        at = property(root, at, name.as_ref(), 0)?;
    }
    Some(at)
}

/// How many references and combinations a lookup follows at most.
const LOOKUP_DEPTH: usize = 16;

fn property<'a>(root: &'a Value, at: &'a Value, name: &str, depth: usize) -> Option<&'a Value> {
    if depth > LOOKUP_DEPTH {
        return None;
    }
    let map: &Map<String, Value> = at.as_object()?;
    if let Some(found) = map
        .get("properties")
        .and_then(Value::as_object)
        .and_then(|p| p.get(name))
    {
        return Some(found);
    }
    let reference = map
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer));
    let branches = COMBINATIONS
        .iter()
        .filter_map(|k| map.get(*k).and_then(Value::as_array))
        .flatten();
    reference
        .into_iter()
        .chain(branches)
        .chain(map.get("items").filter(|i| i.is_object()))
        .find_map(|sub| property(root, sub, name, depth + 1))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn note(cut: SchemaCut, shown: usize, total: usize) -> String {
        format!(" [{cut:?} {shown}/{total}]")
    }

    fn parsed(t: &str) -> (Value, &str) {
        let (json, rest) = t.split_once(" [").expect("a note");
        (serde_json::from_str(json).expect("whole JSON"), rest)
    }

    #[test]
    fn a_schema_within_the_bound_is_shown_whole_and_compact() {
        let s = json!({"type": "object", "properties": {"q": {"type": "string"}}});
        assert_eq!(
            schema_text(&s, 100, 100, note),
            r#"{"properties":{"q":{"type":"string"}},"type":"object"}"#
        );
    }

    #[test]
    fn descriptions_are_shortened_and_examples_left_out_first() {
        let long = "d".repeat(500);
        let s = json!({"type": "object", "title": long, "properties": {
            "q": {"type": "string", "description": long, "examples": [long], "default": "x"},
            "description": {"type": "string", "pattern": "^a+$"}
        }, "required": ["q", "description"]});
        let t = schema_text(&s, 600, 600, note);
        let (back, rest) = parsed(&t);
        assert_eq!(back["required"], json!(["q", "description"]));
        // A property named `description` is a name, not an annotation.
        assert_eq!(
            back["properties"]["description"],
            json!({"type": "string", "pattern": "^a+$"})
        );
        let cut = format!("{}…", "d".repeat(ANNOTATION_CHARS));
        assert_eq!(
            back["properties"]["q"],
            json!({"type": "string", "description": cut})
        );
        assert_eq!(back["title"], json!(cut));
        let whole = json_text(&s).chars().count();
        let shown = t.split_once(" [").map(|(j, _)| j.chars().count());
        assert_eq!(rest, format!("Annotations {}/{whole}]", shown.unwrap()));
        assert!(t.chars().count() <= 600);
    }

    #[test]
    fn then_descriptions_go_then_details_then_allowed_values() {
        let many: Map<String, Value> = (0..40)
            .map(|i| {
                (
                    format!("p{i:02}"),
                    json!({"type": "string", "description": "x".repeat(200),
                           "pattern": "^[a-z]{1,40}$", "enum": ["alpha", "beta"]}),
                )
            })
            .collect();
        let s = json!({"type": "object", "properties": many, "required": ["p39"]});
        let no_annotations = schema_text(&s, 3200, 3200, note);
        let (back, rest) = parsed(&no_annotations);
        assert!(rest.starts_with("NoAnnotations "), "{rest}");
        assert_eq!(back["properties"]["p07"]["pattern"], json!("^[a-z]{1,40}$"));
        assert_eq!(back["properties"]["p07"].get("description"), None);

        let structure = schema_text(&s, 2100, 2100, note);
        let (back, rest) = parsed(&structure);
        assert!(rest.starts_with("Structure "), "{rest}");
        assert_eq!(
            back["properties"]["p07"],
            json!({"type": "string", "enum": ["alpha", "beta"]})
        );

        let names = schema_text(&s, 1100, 1100, note);
        let (back, rest) = parsed(&names);
        assert!(rest.starts_with("Names "), "{rest}");
        assert_eq!(back["properties"]["p07"], json!({"type": "string"}));
        assert_eq!(back["properties"].as_object().map(Map::len), Some(40));
        assert_eq!(back["required"], json!(["p39"]));
        assert!(names.chars().count() <= 1100);
    }

    #[test]
    fn names_are_shown_past_the_bound_up_to_the_larger_one() {
        let many: Map<String, Value> = (0..100)
            .map(|i| (format!("p{i:03}"), json!({"type": "integer", "minimum": 0})))
            .collect();
        let s = json!({"type": "object", "properties": many, "required": ["p099"]});
        let t = schema_text(&s, 500, 4000, note);
        let (back, rest) = parsed(&t);
        assert!(rest.starts_with("Names "), "{rest}");
        assert_eq!(back["properties"].as_object().map(Map::len), Some(100));
        assert!(t.chars().count() > 500 && t.chars().count() <= 4000);
    }

    #[test]
    fn past_the_larger_bound_the_text_is_cut_with_required_first() {
        let many: Map<String, Value> = (0..1000)
            .map(|i| (format!("p{i:04}"), json!({"type": "integer"})))
            .collect();
        let s = json!({"type": "object", "properties": many, "required": ["p0999", "zz"]});
        let t = schema_text(&s, 300, 1200, note);
        assert!(
            t.starts_with(r#"{"required":["p0999","zz"],"properties":{"p0000":"#),
            "{t}"
        );
        let total = json_text(&s).chars().count();
        let budget = 1200 - note(SchemaCut::Text, total, total).chars().count();
        assert!(t.ends_with(&note(SchemaCut::Text, budget, total)), "{t}");
        assert!(t.chars().count() <= 1200);
        assert_eq!(
            required_first(json!({"required": []})),
            r#"{"required":[]}"#
        );
        assert_eq!(required_first(json!({"a": 1})), r#"{"a":1}"#);
    }

    #[test]
    fn a_cut_never_splits_a_character_nor_shows_a_marker() {
        let s = json!({"required": [format!("{}<<<END-EXTERNAL-CONTENT>>>", "é".repeat(300))],
                       "enum": ["日本語".repeat(200)]});
        for max in [50, 51, 52, 53, 200, 201] {
            let t = schema_text(&s, max, max, note);
            assert!(t.chars().count() <= max, "{max}: {t}");
            assert!(!t.contains("<<<") && !t.contains(">>>"), "{t}");
        }
    }

    #[test]
    fn a_draft_7_dependency_is_shortened_as_a_dependent_schema_is() {
        let long = "d".repeat(500);
        let cut = format!("{}…", "d".repeat(ANNOTATION_CHARS));
        for keyword in ["dependencies", "dependentSchemas"] {
            let s = json!({"type": "object", "properties": {"a": {}, "b": {}},
                           keyword: {"a": {"description": long, "required": ["b"]}, "b": ["a"]}});
            let text = schema_text(&s, 300, 300, note);
            let (back, rest) = parsed(&text);
            assert!(rest.starts_with("Annotations "), "{keyword}: {rest}");
            assert_eq!(
                back[keyword],
                json!({"a": {"description": cut, "required": ["b"]}, "b": ["a"]}),
                "{keyword}"
            );
        }
    }

    #[test]
    fn a_property_is_found_through_combinations_items_and_local_references() {
        let s = json!({
            "type": "object",
            "properties": {"filter": {"$ref": "#/$defs/filter"}},
            "allOf": [{"properties": {"page": {"type": "integer"}}}],
            "$defs": {"filter": {"type": "array", "items": {"properties": {"on": {"type": "string"}}}}}
        });
        assert_eq!(
            property_schema(&s, &["page"]),
            Some(&json!({"type": "integer"}))
        );
        assert_eq!(
            property_schema(&s, &["filter", "on"]),
            Some(&json!({"type": "string"}))
        );
        assert_eq!(property_schema(&s, &["nope"]), None);
        assert_eq!(property_schema(&s, &["page", "on"]), None);
        let looped = json!({"$ref": "#", "properties": {}});
        assert_eq!(property_schema(&looped, &["x"]), None);
    }
}
