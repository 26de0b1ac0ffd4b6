//! Schemas written to cost the gateway, for the tests of its budgets.

use serde_json::{Map, Value, json};

/// The `$defs` of issue 18.1's schema: `d0` to `d{levels}`, each level
/// referring twice to the next, so that following every `$ref` from `d0`
/// doubles the schema nodes reached at every level (`d{levels}` is `{}`).
pub fn doubling_defs(levels: usize) -> Map<String, Value> {
    let mut defs = Map::new();
    for i in 0..levels {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(
            format!("d{i}"),
            json!({"allOf": [{"$ref": next}, {"$ref": next, "minLength": 0}]}),
        );
    }
    defs.insert(format!("d{levels}"), json!({}));
    defs
}
