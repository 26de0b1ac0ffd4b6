//! The capabilities file as `add` and `remove` see it: its text read and
//! the registry the core reads from it, its text edited in place, and an
//! atomic write.
//!
//! An edit changes the bytes of the entry it adds or removes and nothing
//! else: the file is read as a concrete syntax tree (`jsonc-parser`'s
//! `cst`, dprint's), so every other entry keeps its layout, its key order,
//! its unknown keys and its numbers as written; only the new entry is laid
//! out by the crate, in the indentation it infers from the file. The core
//! (`serde_json`) reads the file first, so the tree is only ever built from
//! strict JSON.
//!
//! A write never leaves a half-written file: the new text goes to a
//! temporary file in the same folder, which is flushed to disk (`fsync`),
//! given the old file's permissions and renamed over it; then the folder
//! itself is flushed, so the rename survives a crash. A failure before the
//! rename removes the temporary file and leaves the old one as it was.

use std::io::Write;
use std::path::{Path, PathBuf};

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstRootNode};
use serde_json::Value;
use spear_capabilities::{Audit, Registry};

use crate::error::Failure;
use crate::flags::missing;

/// The file's text and the registry the core reads from it; `None` when
/// the file does not exist.
pub(crate) fn read(path: &Path) -> Result<Option<(String, Registry)>, Failure> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(missing(path, &e)),
    };
    let registry = registry_of(&text, path).map_err(Failure::Usage)?;
    Ok(Some((text, registry)))
}

/// The registry the core would read from `text`, an edit of the file at
/// `path` not written yet.
pub(crate) fn edited(text: &str, path: &Path) -> Result<Registry, Failure> {
    registry_of(text, path).map_err(|e| {
        Failure::Usage(format!(
            "the edited file would not parse ({e}); nothing written"
        ))
    })
}

fn registry_of(text: &str, path: &Path) -> Result<Registry, String> {
    let kinds = spear_providers::kinds().map_err(|e| e.to_string())?;
    Registry::parse(text.as_bytes(), path, &kinds, &Audit::null()).map_err(|e| e.to_string())
}

/// Replaces the file at `path` with `text` ([`write_atomically`]), saying
/// what went wrong if it could not.
pub(crate) fn write(path: &Path, text: &str) -> Result<(), Failure> {
    write_atomically(path, text).map_err(|e| {
        Failure::Usage(format!(
            "cannot write {}: {e}; it is left as it was",
            path.display()
        ))
    })
}

/// The error of an edit that cannot be made to the file at `path`.
pub(crate) fn cannot_edit(path: &Path) -> impl FnOnce(String) -> Failure + '_ {
    move |e| Failure::Usage(format!("cannot edit {}: {e}", path.display()))
}

/// The `id` of each entry of `providers` in `text`, in file order (`None`
/// for one without a string id).
pub(crate) fn ids(text: &str) -> Vec<Option<String>> {
    let value: Value = serde_json::from_str(text).unwrap_or_default();
    value["providers"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|e| e["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The text of a new capabilities file, before its first entry.
pub(crate) const EMPTY: &str = "{\n  \"providers\": []\n}\n";

/// The registry's text with `entry` appended to `providers`.
///
/// `text` must be a capabilities file the core has read (strict JSON, an
/// object whose `providers` is an array).
pub(crate) fn with_entry(text: &str, entry: &[(&str, Value)]) -> Result<String, String> {
    let root = parse(text)?;
    let providers = root
        .object_value()
        .and_then(|top| top.array_value("providers"))
        .ok_or("expected \"providers\" to be an array of entries")?;
    let entry = entry
        .iter()
        .map(|(key, value)| ((*key).to_owned(), input(value)))
        .collect();
    providers.append(CstInputValue::Object(entry));
    Ok(root.to_string())
}

/// The registry's text without the entries of `providers` whose `id` is
/// `id`, and how many there were.
pub(crate) fn without_entry(text: &str, id: &str) -> Result<(String, usize), String> {
    let root = parse(text)?;
    let providers = root
        .object_value()
        .and_then(|top| top.array_value("providers"))
        .ok_or("expected \"providers\" to be an array of entries")?;
    let mut removed = 0;
    for element in providers.elements() {
        let this_id = element
            .as_object()
            .and_then(|o| o.get("id"))
            .and_then(|p| p.value())
            .and_then(|v| v.as_string_lit())
            .and_then(|s| s.decoded_value().ok());
        if this_id.as_deref() == Some(id) {
            element.remove();
            removed += 1;
        }
    }
    Ok((root.to_string(), removed))
}

fn parse(text: &str) -> Result<CstRootNode, String> {
    // Strict JSON: the core has already read it as such.
    let strict = ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        ..ParseOptions::default()
    };
    CstRootNode::parse(text, &strict).map_err(|e| e.to_string())
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

/// Replaces the file at `path` with `text` atomically (see the module's
/// doc); a file that does not exist yet is created readable and writable
/// by its owner only, since its commands are not public material.
///
/// A symbolic link is followed: the file it names is replaced, the link
/// stays.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let target = match std::fs::canonicalize(path) {
        Ok(real) => real,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => path.to_path_buf(),
        Err(e) => return Err(e),
    };
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(&dir)?;
    temp.write_all(text.as_bytes())?;
    if let Ok(meta) = std::fs::metadata(&target) {
        temp.as_file().set_permissions(meta.permissions())?;
    }
    temp.as_file().sync_all()?;
    temp.persist(&target).map_err(|e| e.error)?;
    std::fs::File::open(&dir)?.sync_all()
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
        let (text, n) = without_entry(LAID_OUT, "b").expect("removes");
        assert_eq!(n, 1);
        assert_eq!(
            text,
            "{\"providers\": [\n  {\"id\": \"a\",\n   \"command\": [\"x\"],   \"timeout\": 10,\n   \"zzz\": 1.50}\n]}\n"
        );
        let (same, none) = without_entry(LAID_OUT, "nope").expect("parses");
        assert_eq!((same.as_str(), none), (LAID_OUT, 0));
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
