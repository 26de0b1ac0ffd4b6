//! Checks of a tool's argument schema and of a call's arguments.
//!
//! Schemas are compiled once per session, **offline**: `jsonschema` is built
//! without its http and file resolvers, so a `$ref` outside the schema fails
//! the compilation instead of reaching the network or the disk, and the tool
//! is left out. A call's arguments must validate against the schema and name
//! only properties it declares.
//!
//! It is not where a tool is admitted ([`crate::admission`] calls
//! [`ArgumentSchema::compile`]) nor where a refusal is worded
//! ([`crate::messages`]).

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::{Map, Value};

use crate::framing::one_line;

/// The most schema errors reported for one call.
pub const MAX_ARGUMENT_ERRORS: usize = 8;

/// A compiled argument schema.
#[derive(Debug)]
pub struct ArgumentSchema {
    validator: jsonschema::Validator,
    properties: BTreeSet<String>,
}

impl ArgumentSchema {
    /// Compiles `schema`, which must be an object schema (`"type": "object"`)
    /// needing nothing outside itself.
    ///
    /// # Errors
    /// A short reason, for the audit trail.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        let Value::Object(map) = schema else {
            return Err("the input schema is not a JSON object".to_owned());
        };
        if map.get("type") != Some(&Value::String("object".to_owned())) {
            return Err("the input schema is not of type \"object\"".to_owned());
        }
        let properties = match map.get("properties") {
            None => BTreeSet::new(),
            Some(Value::Object(p)) => p.keys().cloned().collect(),
            Some(_) => return Err("the input schema's \"properties\" is not an object".to_owned()),
        };
        // A hostile schema must not take the runtime down with it.
        let compiled = catch_unwind(AssertUnwindSafe(|| {
            jsonschema::options().offline().build(schema)
        }))
        .map_err(|_| "the input schema crashed the schema compiler".to_owned())?;
        let validator = compiled.map_err(|e| {
            format!(
                "the input schema does not compile: {}",
                one_line(&e.to_string(), 300)
            )
        })?;
        Ok(Self {
            validator,
            properties,
        })
    }

    /// Checks `arguments`, the JSON object a call would send: it must name
    /// only declared properties and validate against the schema (anything
    /// but an object fails the schema's `"type": "object"`).
    ///
    /// # Errors
    /// Every problem (at most [`MAX_ARGUMENT_ERRORS`]), each one plain line.
    pub fn check(&self, arguments: &Value) -> Result<(), Vec<String>> {
        let empty = Map::new();
        let keys = arguments.as_object().unwrap_or(&empty).keys();
        let mut errors: Vec<String> = keys
            .filter(|k| !self.properties.contains(*k))
            .map(|k| {
                let declared = if self.properties.is_empty() {
                    "it declares none".to_owned()
                } else {
                    format!(
                        "declared: {}",
                        self.properties
                            .iter()
                            .map(String::as_str)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                one_line(&format!("unknown argument {k:?}; {declared}"), 400)
            })
            .collect();
        // `is_valid` is true exactly when `iter_errors` finds nothing: the
        // errors are gathered only when there are some.
        let validation = match catch_unwind(AssertUnwindSafe(|| self.validator.is_valid(arguments)))
        {
            Ok(true) => Ok(Vec::new()),
            Ok(false) => catch_unwind(AssertUnwindSafe(|| {
                self.validator
                    .iter_errors(arguments)
                    .take(MAX_ARGUMENT_ERRORS)
                    .map(|e| {
                        let at = e.instance_path().to_string();
                        let at = if at.is_empty() {
                            "arguments".to_owned()
                        } else {
                            format!("at {at}")
                        };
                        one_line(&format!("{at}: {e}"), 300)
                    })
                    .collect::<Vec<_>>()
            })),
            Err(panic) => Err(panic),
        };
        match validation {
            Ok(found) => errors.extend(found),
            Err(_) => errors
                .push("the arguments could not be checked (the validator panicked)".to_owned()),
        }
        errors.truncate(MAX_ARGUMENT_ERRORS);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn valid_arguments_with_many_unknown_ones_report_at_most_the_cap() {
        let s = ArgumentSchema::compile(&json!({"type": "object", "properties": {"q": {}}}))
            .expect("compiles");
        let many: serde_json::Map<String, Value> =
            (0..12).map(|i| (format!("x{i:02}"), json!(i))).collect();
        let e = s.check(&Value::Object(many)).expect_err("undeclared");
        assert_eq!(e.len(), MAX_ARGUMENT_ERRORS);
        assert!(e[0].starts_with(r#"unknown argument "x00""#), "{e:?}");
        assert!(s.check(&json!({"q": 1})).is_ok());
        assert!(s.check(&json!([1])).is_err());
    }

    #[test]
    fn only_object_schemas_compile() {
        assert!(ArgumentSchema::compile(&json!({"type": "object"})).is_ok());
        assert!(ArgumentSchema::compile(&json!({"type": "string"})).is_err());
        assert!(ArgumentSchema::compile(&json!({})).is_err());
        assert!(ArgumentSchema::compile(&json!("object")).is_err());
        assert!(ArgumentSchema::compile(&json!({"type": "object", "properties": []})).is_err());
    }

    #[test]
    fn remote_and_file_refs_are_refused_without_resolving() {
        for r in [
            "http://127.0.0.1:9/schema.json",
            "file:///etc/passwd",
            "https://example.invalid/s",
        ] {
            let s = json!({"type": "object", "properties": {"a": {"$ref": r}}});
            let err = ArgumentSchema::compile(&s).expect_err(r);
            assert!(
                err.starts_with("the input schema does not compile"),
                "{r}: {err}"
            );
        }
        let local = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {"type": "string"}}});
        let s = ArgumentSchema::compile(&local).expect("local refs resolve");
        assert!(s.check(&json!({"a": 1})).is_err());
        assert!(s.check(&json!({"a": "x"})).is_ok());
    }

    #[test]
    fn arguments_must_be_declared_and_valid() {
        let s = ArgumentSchema::compile(&json!({
            "type": "object",
            "properties": {"q": {"type": "string"}, "n": {"type": "integer", "maximum": 5}},
            "required": ["q"],
            "additionalProperties": true
        }))
        .expect("compiles");
        assert!(s.check(&json!({"q": "x", "n": 2})).is_ok());
        let e = s
            .check(&json!({"q": "x", "extra": 1}))
            .expect_err("undeclared");
        assert_eq!(e, [r#"unknown argument "extra"; declared: n, q"#]);
        let e = s.check(&json!({"n": 9})).expect_err("invalid");
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e.iter().any(|m| m.starts_with("at /n: ")), "{e:?}");
        assert!(
            e.iter()
                .any(|m| m.starts_with("arguments: ") && m.contains("\"q\"")),
            "{e:?}"
        );
    }
}
