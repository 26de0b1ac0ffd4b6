//! The capabilities file's text edited in place: an entry appended,
//! entries taken out, keys of one entry given new values.
//!
//! The text is read as the concrete syntax tree the core builds with the
//! parser and options of its own reading (`edit_tree`, dprint's
//! `jsonc-parser`), and an entry is found by its index as the registry
//! numbers it, never by a reading of our own: so what an edit changes is
//! what the registry reads. Every other byte keeps its layout, key order,
//! unknown keys and numbers as written; what is new is laid out by the
//! crate, in the indentation it infers from the file.

use jsonc_parser::cst::{
    CstArray, CstInputValue, CstObject, CstObjectProp, CstRootNode, CstWhitespace,
};
use serde_json::Value;
use spear_capabilities::internals::registry::edit_tree;

/// The text of a new capabilities file, before its first entry.
pub(crate) const EMPTY: &str = "{\n  \"providers\": []\n}\n";

/// Why one entry's keys could not be changed.
#[derive(Debug)]
pub(crate) enum Unchanged {
    /// `--unset-env NAME` of a variable the entry does not have.
    NoVariable(String),
    /// The entry's `env` is not an object, so it has no variable to set.
    EnvNotAnObject,
    /// The text cannot be edited (a registry the core has read always can).
    Text(String),
}

/// What `set` changes in one entry: keys given new values (added at its
/// end when absent), and variables of its `env` set or taken out.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    pub(crate) keys: Vec<(&'static str, Value)>,
    pub(crate) set_env: Vec<(String, String)>,
    pub(crate) unset_env: Vec<String>,
}

/// The registry's text with `entry` appended to `providers`.
pub(crate) fn with_entry(text: &str, entry: &[(&str, Value)]) -> Result<String, String> {
    let root = edit_tree(text)?;
    let entry = entry
        .iter()
        .map(|(key, value)| ((*key).to_owned(), input(value)))
        .collect();
    providers(&root)?.append(CstInputValue::Object(entry));
    Ok(root.to_string())
}

/// The registry's text without the entries at `indices` of `providers`.
pub(crate) fn without_entries(text: &str, indices: &[usize]) -> Result<String, String> {
    let root = edit_tree(text)?;
    // From the last, so that the indices before it still hold.
    let elements = providers(&root)?.elements();
    for &index in indices.iter().rev() {
        elements
            .get(index)
            .cloned()
            .ok_or_else(|| format!("providers[{index}] is not in the file"))?
            .remove();
    }
    Ok(root.to_string())
}

/// The registry's text with the entry at `index` of `providers` changed
/// as `changes` says, and nothing else.
pub(crate) fn with_changes(
    text: &str,
    index: usize,
    changes: &Changes,
) -> Result<String, Unchanged> {
    let root = edit_tree(text).map_err(Unchanged::Text)?;
    let entry = providers(&root)
        .map_err(Unchanged::Text)?
        .elements()
        .get(index)
        .and_then(|e| e.as_object())
        .ok_or_else(|| Unchanged::Text(format!("providers[{index}] is not an object")))?;
    for (key, value) in &changes.keys {
        set(&entry, key, value);
    }
    if !changes.set_env.is_empty() || !changes.unset_env.is_empty() {
        let env = match entry.get("env") {
            Some(prop) => prop.object_value().ok_or(Unchanged::EnvNotAnObject)?,
            None if changes.unset_env.is_empty() => entry.object_value_or_set("env"),
            None => return Err(Unchanged::NoVariable(changes.unset_env[0].clone())),
        };
        for (name, value) in &changes.set_env {
            set(&env, name, &Value::String(value.clone()));
        }
        for name in &changes.unset_env {
            env.get(name)
                .ok_or_else(|| Unchanged::NoVariable(name.clone()))?
                .remove();
        }
    }
    Ok(root.to_string())
}

/// `key` of `object` given `value`: in its place when it is there, at the
/// end when it is not, on a line of its own indented as the key before it
/// when that one has a line of its own.
fn set(object: &CstObject, key: &str, value: &Value) {
    match object.get(key) {
        Some(prop) => prop.set_value(input(value)),
        None => {
            let added = object.append(key, input(value));
            let before = added.previous_property();
            if let (Some(theirs), Some(ours)) = (before.and_then(|p| indent(&p)), indent(&added)) {
                ours.set_value(theirs.value());
            }
        }
    }
}

/// The whitespace that indents `prop`, when it begins a line.
fn indent(prop: &CstObjectProp) -> Option<CstWhitespace> {
    let mut before = prop.previous_siblings();
    let whitespace = before.next()?.as_whitespace()?;
    before.next()?.is_newline().then_some(whitespace)
}

fn providers(root: &CstRootNode) -> Result<CstArray, String> {
    root.object_value()
        .and_then(|top| top.array_value("providers"))
        .ok_or_else(|| "expected \"providers\" to be an array of entries".to_owned())
}

/// `value` as the tree's input, numbers spelt as `serde_json` spells them.
fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(members) => {
            CstInputValue::Object(members.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const LAID_OUT: &str = r#"{"providers": [
  {"id": "a",
   "command": ["x"],   "timeout": 10,
   "zzz": 1.50},
  {"id": "b", "command": ["y"]}
]}
"#;

    #[test]
    fn an_added_entry_leaves_every_other_byte_as_it_was() {
        let text = with_entry(
            LAID_OUT,
            &[("id", json!("c")), ("command", json!(["z", "a \"b\""]))],
        )
        .expect("adds");
        assert!(text.starts_with(&LAID_OUT[..LAID_OUT.len() - 4]), "{text}");
        let v: Value = serde_json::from_str(&text).expect("parses");
        assert_eq!(
            v["providers"][2],
            json!({"id": "c", "command": ["z", "a \"b\""]})
        );
        assert_eq!(v["providers"][0]["zzz"], json!(1.50));
        assert!(text.ends_with("]}\n"), "{text}");
    }

    #[test]
    fn a_removed_entry_takes_only_its_own_bytes() {
        let text = without_entries(LAID_OUT, &[1]).expect("removes");
        assert_eq!(
            text,
            "{\"providers\": [\n  {\"id\": \"a\",\n   \"command\": [\"x\"],   \"timeout\": 10,\n   \"zzz\": 1.50}\n]}\n"
        );
        assert_eq!(without_entries(LAID_OUT, &[]).expect("parses"), LAID_OUT);
        let none = without_entries(LAID_OUT, &[0, 1]).expect("removes both");
        let v: Value = serde_json::from_str(&none).expect("parses");
        assert_eq!(v, json!({"providers": []}));
    }

    #[test]
    fn a_changed_key_keeps_its_place_and_a_new_one_goes_last() {
        let changes = Changes {
            keys: vec![("timeout", json!(5)), ("scope", json!("global"))],
            set_env: vec![("A".into(), "1".into())],
            unset_env: Vec::new(),
        };
        let text = with_changes(LAID_OUT, 0, &changes).expect("changes");
        assert!(
            text.starts_with("{\"providers\": [\n  {\"id\": \"a\",\n   \"command\": [\"x\"],   \"timeout\": 5,\n   \"zzz\": 1.50,"),
            "{text}"
        );
        assert!(
            text.ends_with("  {\"id\": \"b\", \"command\": [\"y\"]}\n]}\n"),
            "{text}"
        );
        let v: Value = serde_json::from_str(&text).expect("parses");
        assert_eq!(v["providers"][0]["scope"], "global");
        assert_eq!(v["providers"][0]["env"], json!({"A": "1"}));
        let unset = Changes {
            unset_env: vec!["A".into()],
            ..Changes::default()
        };
        let back = with_changes(&text, 0, &unset).expect("unsets");
        let v: Value = serde_json::from_str(&back).expect("parses");
        assert_eq!(v["providers"][0]["env"], json!({}));
        assert!(matches!(
            with_changes(&back, 0, &unset),
            Err(Unchanged::NoVariable(name)) if name == "A"
        ));
        assert!(matches!(
            with_changes(LAID_OUT, 1, &unset),
            Err(Unchanged::NoVariable(_))
        ));
    }

    #[test]
    fn the_first_entry_of_a_new_file_is_laid_out_in_two_spaces() {
        let text = with_entry(EMPTY, &[("id", json!("a")), ("timeout", json!(5))]).expect("adds");
        assert_eq!(
            text,
            "{\n  \"providers\": [\n    {\n      \"id\": \"a\",\n      \"timeout\": 5\n    }\n  ]\n}\n"
        );
    }
}
