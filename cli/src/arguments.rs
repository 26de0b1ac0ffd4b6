//! `invoke`'s arguments: one JSON object given on the command line, in a
//! file (`@FILE`), or on standard input (`-`), as `curl -d` takes them.
//! A JSON object never starts with `@` or is `-`, so neither form hides one.
//! A file or standard input is read up to [`MAX_ARGUMENTS_BYTES`], never
//! past it.

use std::io::Read;

use serde_json::{Map, Value};

/// The most bytes of arguments read from a file or standard input (16 MiB,
/// what a server may leave unread of its standard input before it is
/// failed: `spear_mcp_stdio::MAX_UNREAD`).
pub(crate) const MAX_ARGUMENTS_BYTES: u64 = 16 << 20;

/// All of `source` (the arguments from `from`), if it has at most
/// [`MAX_ARGUMENTS_BYTES`]: the rest is never read.
fn bounded(source: impl Read, from: &str) -> Result<String, String> {
    let mut bytes = Vec::new();
    source
        .take(MAX_ARGUMENTS_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the arguments from {from}: {e}"))?;
    if bytes.len() as u64 > MAX_ARGUMENTS_BYTES {
        return Err(format!(
            "the arguments (from {from}) are more than 16 MiB ({MAX_ARGUMENTS_BYTES} bytes); arguments may have at most that"
        ));
    }
    String::from_utf8(bytes).map_err(|e| format!("the arguments (from {from}) are not UTF-8: {e}"))
}

/// The arguments `given` names, parsed: none is `{}`.
///
/// # Errors
///
/// What is wrong, naming where the arguments came from: a file or standard
/// input that cannot be read, text that is not JSON, JSON that is not one
/// object.
pub(crate) fn parse(given: Option<&str>) -> Result<Map<String, Value>, String> {
    let Some(given) = given else {
        return Ok(Map::new());
    };
    let (text, from) = match given {
        "-" => (
            bounded(std::io::stdin().lock(), "standard input")?,
            " (from standard input)".to_owned(),
        ),
        _ => match given.strip_prefix('@') {
            Some(path) => {
                let file = std::fs::File::open(path)
                    .map_err(|e| format!("cannot read the arguments from {path}: {e}"))?;
                (bounded(file, path)?, format!(" (from {path})"))
            }
            None => (given.to_owned(), String::new()),
        },
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(format!("the arguments{from} must be one JSON object")),
        Err(e) => Err(format!("the arguments{from} are not JSON: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_and_each_error_names_where_the_arguments_came_from() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("args.json");
        std::fs::write(&file, r#"{"id": 1}"#).expect("write");
        let at = format!("@{}", file.display());
        assert_eq!(parse(Some(&at)).expect("parses")["id"], 1);
        assert_eq!(parse(Some(r#"{"id": 2}"#)).expect("parses")["id"], 2);
        assert!(parse(None).expect("none is {}").is_empty());
        std::fs::write(&file, "[1]").expect("write");
        assert_eq!(
            parse(Some(&at)),
            Err(format!(
                "the arguments (from {}) must be one JSON object",
                file.display()
            ))
        );
        let missing = dir.path().join("missing.json");
        let err = parse(Some(&format!("@{}", missing.display()))).expect_err("missing");
        assert!(
            err.starts_with(&format!(
                "cannot read the arguments from {}: ",
                missing.display()
            )),
            "{err}"
        );
        assert!(
            parse(Some("{"))
                .expect_err("not JSON")
                .starts_with("the arguments are not JSON: ")
        );
    }
}
