//! A call's arguments as the audit trail keeps them: JSON, bounded.
//!
//! Arguments whose compact JSON is at most [`MAX_AUDIT_ARGUMENT_BYTES`]
//! are kept whole. Longer ones are cut *as JSON*, never as text: strings
//! are shortened and the members of objects and arrays that do not fit are
//! left out, so that what is kept is still a JSON value a reader can query,
//! and the record says the whole size (`arguments_cut`).

use serde_json::{Map, Value};

/// The most bytes of a call's arguments (compact JSON) the audit trail
/// keeps.
pub const MAX_AUDIT_ARGUMENT_BYTES: usize = 4096;

/// `arguments` bounded, and their whole size in bytes when they were cut.
pub(crate) fn bounded(arguments: &Map<String, Value>) -> (Value, Option<u64>) {
    let whole = serde_json::to_vec(arguments).map_or(usize::MAX, |v| v.len());
    if whole <= MAX_AUDIT_ARGUMENT_BYTES {
        return (Value::Object(arguments.clone()), None);
    }
    // The braces of the object itself come out of the budget first.
    let mut budget = MAX_AUDIT_ARGUMENT_BYTES - 2;
    let kept = object(arguments, &mut budget);
    (Value::Object(kept), Some(whole as u64))
}

fn object(map: &Map<String, Value>, budget: &mut usize) -> Map<String, Value> {
    let mut kept = Map::new();
    for (key, value) in map {
        // `"key":` and a comma, and at least two bytes of value.
        let cost = escaped_len(key) + 4;
        if *budget < cost + 2 {
            break;
        }
        *budget -= cost;
        kept.insert(key.clone(), bound(value, budget));
    }
    kept
}

fn bound(value: &Value, budget: &mut usize) -> Value {
    match value {
        Value::String(s) => {
            let room = budget.saturating_sub(2);
            let (mut keep, mut used) = (0, 0);
            for (at, c) in s.char_indices() {
                let n = escaped_char_len(c);
                if used + n > room {
                    break;
                }
                used += n;
                keep = at + c.len_utf8();
            }
            *budget = budget.saturating_sub(used + 2);
            Value::String(s[..keep].to_owned())
        }
        Value::Array(items) => {
            *budget = budget.saturating_sub(2);
            let mut kept = Vec::new();
            for item in items {
                if *budget < 3 {
                    break;
                }
                *budget -= 1;
                kept.push(bound(item, budget));
            }
            Value::Array(kept)
        }
        Value::Object(map) => {
            *budget = budget.saturating_sub(2);
            Value::Object(object(map, budget))
        }
        scalar => {
            *budget = budget.saturating_sub(scalar.to_string().len());
            scalar.clone()
        }
    }
}

/// The bytes of `s` inside its quotes, as compact JSON writes it.
fn escaped_len(s: &str) -> usize {
    s.chars().map(escaped_char_len).sum()
}

/// The bytes of `c` in a JSON string, as serde_json writes it.
fn escaped_char_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_arguments_are_kept_whole_and_long_ones_cut_as_json_within_the_bound() {
        let Value::Object(small) = json!({"id": "7", "n": [1, 2]}) else {
            unreachable!()
        };
        assert_eq!(bounded(&small), (Value::Object(small.clone()), None));
        let Value::Object(long) = json!({
            "a_title": "x\"\u{1}".repeat(30),
            "body": "é\n".repeat(5000),
            "tags": (0..2000).collect::<Vec<_>>(),
        }) else {
            unreachable!()
        };
        let (kept, cut) = bounded(&long);
        let whole = serde_json::to_vec(&long).expect("json").len() as u64;
        assert_eq!(cut, Some(whole));
        let text = serde_json::to_string(&kept).expect("json");
        assert!(text.len() <= MAX_AUDIT_ARGUMENT_BYTES, "{}", text.len());
        // What fits is kept as it was; the long string is shortened on a
        // character boundary.
        assert_eq!(kept["a_title"], long["a_title"]);
        let body = kept["body"].as_str().expect("a string");
        assert!(body.len() > 2000 && body.chars().all(|c| c == 'é' || c == '\n'));
        assert!(text.len() > MAX_AUDIT_ARGUMENT_BYTES - 8, "{}", text.len());
    }
}
