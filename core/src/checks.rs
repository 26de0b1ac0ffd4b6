//! Checks of a tool's argument schema and of a call's arguments.
//!
//! A schema is vetted when its provider lists it ([`crate::vetting`]) and
//! compiled at the tool's first call, once per session ([`ToolSchema`]),
//! **offline**: `jsonschema` is built without its http and file resolvers,
//! so a `$ref` outside the schema can never reach the network or the disk
//! (vetting already refuses one). A call's arguments must validate against
//! the schema and name only arguments it declares or admits
//! ([`crate::vetting::Declared`]).
//!
//! It is not where a tool is admitted ([`crate::admission`]) nor where a
//! refusal is worded ([`crate::messages`]).

use serde_json::{Map, Value, json};

use crate::compiled::{Lazy, build, guarded};
use crate::framing::one_line;
use crate::vetting::{Declared, ListingBudget, Vetted};

/// The most schema nodes (every `$ref` followed) of a compiled schema whose
/// checks run on the calling thread: validating one call's arguments
/// against it is a few microseconds.
pub(crate) const QUICK_CHECK_NODES: u64 = 256;

/// The most schema errors reported for one call.
pub(crate) const MAX_ARGUMENT_ERRORS: usize = 8;

/// A compiled argument schema.
#[derive(Debug)]
pub struct ArgumentSchema {
    validator: jsonschema::Validator,
    declared: Declared,
    /// A schema no name matching one of `declared.patterns` satisfies:
    /// `patternProperties` of every pattern, each `false`, compiled by the
    /// same engine as the schema so that "matches" means the same.
    pattern_names: Option<jsonschema::Validator>,
}

impl ArgumentSchema {
    /// Vets `schema` ([`crate::vetting`], with a budget of its own) and
    /// compiles it: it must be an object schema (`"type": "object"`)
    /// needing nothing outside itself.
    ///
    /// # Errors
    /// A short reason, for the audit trail.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        let vetted = ListingBudget::default().vet(schema)?;
        Self::compile_vetted(schema, vetted)
    }

    /// Compiles `schema`, which vetting found usable as `vetted`.
    fn compile_vetted(schema: &Value, vetted: Vetted) -> Result<Self, String> {
        let validator =
            build(schema).map_err(|e| format!("the input schema does not compile: {e}"))?;
        let pattern_names = if vetted.declared.patterns.is_empty() {
            None
        } else {
            let none: Map<String, Value> = (vetted.declared.patterns.iter())
                .map(|p| (p.clone(), Value::Bool(false)))
                .collect();
            let names = build(&json!({ "patternProperties": none }))
                .map_err(|e| format!("the input schema's patternProperties do not compile: {e}"))?;
            Some(names)
        };
        Ok(Self {
            validator,
            declared: vetted.declared,
            pattern_names,
        })
    }

    /// Whether `name` is an argument the schema declares or admits.
    fn declares(&self, name: &str) -> bool {
        self.declared.open
            || self.declared.names.contains(name)
            || self.pattern_names.as_ref().is_some_and(|v| {
                let probe = Value::Object(Map::from_iter([(name.to_owned(), Value::Null)]));
                guarded(|| !v.is_valid(&probe)).unwrap_or(false)
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
            .filter(|k| !self.declares(k))
            .take(MAX_ARGUMENT_ERRORS)
            .map(|k| {
                one_line(
                    &format!("unknown argument {k:?}; {}", self.declared_text()),
                    400,
                )
            })
            .collect();
        // `is_valid` is true exactly when `iter_errors` finds nothing: the
        // errors are gathered only when there are some.
        let validation = guarded(|| {
            if self.validator.is_valid(arguments) {
                return Vec::new();
            }
            (self.validator.iter_errors(arguments))
                .take(MAX_ARGUMENT_ERRORS)
                .map(|e| error_line(&e, "arguments"))
                .collect()
        });
        match validation {
            Some(found) => errors.extend(found),
            None => errors
                .push("the arguments could not be checked (the validator panicked)".to_owned()),
        }
        errors.truncate(MAX_ARGUMENT_ERRORS);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// What a refusal of an unknown argument says the schema declares.
    fn declared_text(&self) -> String {
        let d = &self.declared;
        let names = d.names.iter().map(String::as_str).collect::<Vec<_>>();
        let patterns = d
            .patterns
            .iter()
            .map(|p| format!("{p:?}"))
            .collect::<Vec<_>>();
        match (names.is_empty(), patterns.is_empty()) {
            (true, true) => "it declares none".to_owned(),
            (false, true) => format!("declared: {}", names.join(", ")),
            (true, false) => format!("declared: names matching {}", patterns.join(", ")),
            (false, false) => format!(
                "declared: {}, and names matching {}",
                names.join(", "),
                patterns.join(", ")
            ),
        }
    }
}

/// One validation error as one bounded line: where it is (`whole` when at
/// the top of the instance), then what is wrong.
fn error_line(e: &jsonschema::ValidationError<'_>, whole: &str) -> String {
    let at = e.instance_path().to_string();
    let at = if at.is_empty() {
        whole.to_owned()
    } else {
        format!("at {at}")
    };
    one_line(&format!("{at}: {e}"), 300)
}

/// A tool's output schema as admitted: vetted at listing under the same
/// budgets as input schemas, compiled offline at its first result and kept
/// for the session.
#[derive(Debug)]
pub(crate) struct OutputSchema(Lazy<jsonschema::Validator>);

/// What a check of a structured result found.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) enum OutputCheck {
    /// The result matches.
    Matches,
    /// It does not: the first reason, one line, bounded (untrusted text:
    /// it quotes the result).
    Mismatch(String),
    /// The schema did not compile at its first use: results are not
    /// checked; `first` is true for the check that found it.
    Unusable {
        /// Why the schema cannot be used.
        reason: String,
        /// Whether this check compiled it.
        first: bool,
    },
}

impl OutputSchema {
    /// A schema that vetting found usable.
    pub(crate) fn new(schema: Value) -> Self {
        Self(Lazy::new(schema))
    }

    /// Checks a result's structured content (`None`: it has none, which a
    /// declared schema does not allow), compiling the schema first if no
    /// check has yet. Blocking, and bounded by the schema's vetting budgets
    /// and the size of the result: the gateway runs it off the runtime's
    /// I/O threads, within what is left of the call's bound.
    pub(crate) fn check(&self, structured: Option<&Value>) -> OutputCheck {
        let validator = match self.0.get(|schema| {
            build(schema).map_err(|e| format!("the output schema does not compile: {e}"))
        }) {
            (Ok(validator), _) => validator,
            (Err(reason), first) => {
                return OutputCheck::Unusable {
                    reason: reason.to_owned(),
                    first,
                };
            }
        };
        let Some(structured) = structured else {
            return OutputCheck::Mismatch(
                "the tool declares an output schema, and its result has no structuredContent"
                    .to_owned(),
            );
        };
        let first_error = guarded(|| {
            (validator.iter_errors(structured))
                .next()
                .map(|e| error_line(&e, "the result"))
        });
        match first_error {
            Some(None) => OutputCheck::Matches,
            Some(Some(reason)) => OutputCheck::Mismatch(reason),
            None => OutputCheck::Mismatch("the schema check crashed".to_owned()),
        }
    }
}

/// A tool's input schema as admitted: vetted at listing, compiled at its
/// first check and kept for the session, shared by every turn and by the
/// tools of the listing that have the same schema.
#[derive(Debug)]
pub(crate) struct ToolSchema {
    compiled: Lazy<ArgumentSchema>,
    vetted: Vetted,
}

/// Why a call's arguments were not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum CheckFailure {
    /// The arguments do not fit the schema: every problem, each one line.
    #[error("the arguments do not fit the tool's input schema: {}", .0.join("; "))]
    Arguments(Vec<String>),
    /// The schema did not compile at its first use; the tool cannot be
    /// called for the rest of the session. `first` is true for the check
    /// that found it, so that it is audited once.
    #[error("the tool's input schema cannot be used: {reason}")]
    Unusable {
        /// Why the schema cannot be used.
        reason: String,
        /// Whether this check compiled it.
        first: bool,
    },
}

impl ToolSchema {
    /// A schema that vetting found usable as `vetted`.
    pub(crate) fn new(schema: Value, vetted: Vetted) -> Self {
        Self {
            compiled: Lazy::new(schema),
            vetted,
        }
    }

    /// The schema as the provider declared it.
    pub(crate) fn schema(&self) -> &Value {
        self.compiled.schema()
    }

    /// Whether the schema has been compiled (by a first check).
    pub(crate) fn is_compiled(&self) -> bool {
        self.compiled.is_compiled()
    }

    /// Whether a check is too little work to leave the calling thread for:
    /// compiled already, at most [`QUICK_CHECK_NODES`] schema nodes
    /// reachable, and no regular expression. Most real tools' schemas are;
    /// every other check runs off the runtime's I/O threads.
    pub(crate) fn is_quick(&self) -> bool {
        self.is_compiled() && self.vetted.nodes <= QUICK_CHECK_NODES && !self.vetted.has_patterns
    }

    /// Checks `arguments`, compiling the schema first if no check has yet.
    /// Blocking and bounded by the vetting budgets: the gateway runs it off
    /// the runtime's I/O threads.
    ///
    /// # Errors
    /// The problems of the arguments, or why the schema cannot be used.
    pub(crate) fn check(&self, arguments: &Value) -> Result<(), CheckFailure> {
        let compile = |schema: &Value| ArgumentSchema::compile_vetted(schema, self.vetted.clone());
        match self.compiled.get(compile) {
            (Ok(schema), _) => schema.check(arguments).map_err(CheckFailure::Arguments),
            (Err(reason), first) => Err(CheckFailure::Unusable {
                reason: reason.to_owned(),
                first,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_a_compiled_small_schema_without_patterns_is_checked_in_place() {
        let tool = |schema: Value| {
            let vetted = crate::vetting::ListingBudget::default()
                .vet(&schema)
                .expect("usable");
            ToolSchema::new(schema, vetted)
        };
        let small = tool(json!({"type": "object", "properties": {"q": {"type": "string"}}}));
        assert!(!small.is_quick(), "its first check compiles it");
        assert!(small.check(&json!({"q": "x"})).is_ok());
        assert!(small.is_quick());
        let patterned = tool(json!({"type": "object", "properties": {"q": {"pattern": "^a+$"}}}));
        assert!(patterned.check(&json!({"q": "aa"})).is_ok());
        assert!(!patterned.is_quick(), "matching time depends on the input");
        let properties: Map<String, Value> = (0..QUICK_CHECK_NODES)
            .map(|i| (format!("p{i}"), json!({"type": "integer"})))
            .collect();
        let large = tool(json!({"type": "object", "properties": properties}));
        assert!(large.check(&json!({})).is_ok());
        assert!(!large.is_quick(), "more nodes than a quick check may have");
    }

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
                err.starts_with("the input schema has a $ref outside itself"),
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
            "required": ["q"]
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

    /// The four rows of issue 13.1: arguments a schema declares other than
    /// by its top-level `properties` are accepted; what it forbids is not.
    #[test]
    fn arguments_declared_through_applicators_refs_patterns_and_additional_properties() {
        let compile = |s: Value| ArgumentSchema::compile(&s).expect("compiles");
        let all_of = compile(json!({"type": "object", "allOf": [
            {"properties": {"query": {"type": "string"}}, "required": ["query"]},
            {"properties": {"limit": {"type": "integer"}}}]}));
        assert_eq!(all_of.check(&json!({"query": "x", "limit": 3})), Ok(()));
        let e = all_of
            .check(&json!({"limit": 3}))
            .expect_err("required in allOf");
        assert!(
            e.iter().any(|m| m.contains("\"query\" is a required")),
            "{e:?}"
        );
        let e = all_of
            .check(&json!({"query": 1}))
            .expect_err("a type error");
        assert!(e.iter().any(|m| m.starts_with("at /query: ")), "{e:?}");
        let e = all_of
            .check(&json!({"query": "x", "other": 1}))
            .expect_err("unnamed");
        assert_eq!(e, [r#"unknown argument "other"; declared: limit, query"#]);

        let open = compile(json!({"type": "object", "properties": {},
                                  "additionalProperties": {"type": "string"}}));
        assert_eq!(open.check(&json!({"env": "prod"})), Ok(()));
        let e = open
            .check(&json!({"env": 1}))
            .expect_err("additional of the wrong type");
        assert!(e[0].starts_with("at /env: "), "{e:?}");

        let pattern = compile(
            json!({"type": "object", "patternProperties": {"^x_": {"type": "integer"}},
                                     "additionalProperties": false}),
        );
        assert_eq!(pattern.check(&json!({"x_count": 3})), Ok(()));
        let e = pattern
            .check(&json!({"count": 3}))
            .expect_err("matches no pattern");
        assert_eq!(
            e[0],
            r#"unknown argument "count"; declared: names matching "^x_""#
        );
        assert!(e.len() == 2 && e[1].contains("count"), "{e:?}");
        assert!(pattern.check(&json!({"x_count": "3"})).is_err());

        let referred = compile(json!({"type": "object", "$ref": "#/$defs/args",
            "$defs": {"args": {"type": "object", "properties": {"id": {"type": "integer"}}}}}));
        assert_eq!(referred.check(&json!({"id": 4})), Ok(()));
        assert!(referred.check(&json!({"id": "4"})).is_err());
        assert!(referred.check(&json!({"name": 4})).is_err());

        let closed = compile(
            json!({"type": "object", "properties": {"a": {}}, "additionalProperties": false}),
        );
        let e = closed
            .check(&json!({"a": 1, "b": 2}))
            .expect_err("forbidden");
        assert_eq!(e[0], r#"unknown argument "b"; declared: a"#);
    }

    #[test]
    fn a_tool_schema_compiles_at_its_first_check_and_a_failure_stays() {
        let mut budget = ListingBudget::default();
        let good = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let tool = ToolSchema::new(good.clone(), budget.vet(&good).expect("vetted"));
        assert!(!tool.is_compiled());
        assert_eq!(tool.check(&json!({"a": "x"})), Ok(()));
        assert!(tool.is_compiled());
        assert!(matches!(
            tool.check(&json!({"a": 1})),
            Err(CheckFailure::Arguments(_))
        ));
        // Vetting resolves `$ref`s against the document; an embedded `$id`
        // moves them elsewhere, which only the full compile finds.
        let bad = json!({"type": "object", "properties": {"a": {"$id": "http://x.invalid/y", "$ref": "#/$defs/z"}},
                         "$defs": {"z": {}}});
        let tool = ToolSchema::new(bad.clone(), budget.vet(&bad).expect("vetted"));
        let first = tool.check(&json!({})).expect_err("unusable");
        assert!(
            matches!(&first, CheckFailure::Unusable { first: true, reason } if reason.starts_with("the input schema does not compile")),
            "{first:?}"
        );
        // A std error: an embedder can box it or `?` it.
        let boxed: Box<dyn std::error::Error> = Box::new(first.clone());
        assert!(
            boxed.to_string().starts_with(
                "the tool's input schema cannot be used: the input schema does not compile"
            ),
            "{boxed}"
        );
        let again = tool.check(&json!({})).expect_err("still unusable");
        assert!(
            matches!(again, CheckFailure::Unusable { first: false, .. }),
            "{again:?}"
        );
    }
}
