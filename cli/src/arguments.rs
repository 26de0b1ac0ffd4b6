//! `invoke`'s arguments: one JSON object given on the command line, in a
//! file (`@FILE`), or on standard input (`-`), as `curl -d` takes them.
//! A JSON object never starts with `@` or is `-`, so neither form hides one.

use std::io::Read;

use serde_json::{Map, Value};

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
        "-" => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| format!("cannot read the arguments from standard input: {e}"))?;
            (text, " (from standard input)".to_owned())
        }
        _ => match given.strip_prefix('@') {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read the arguments from {path}: {e}"))?;
                (text, format!(" (from {path})"))
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
