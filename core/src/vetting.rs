//! The vetting of a tool's input schema when its provider lists it: cheap,
//! structural, and bounded by budgets, so that a tool whose schema cannot be
//! used, or would cost more than a schema may, is never offered.
//!
//! A schema is vetted once per listing (the same schema on many tools once):
//! it must be a JSON object of `"type": "object"`, at most
//! [`MAX_SCHEMA_BYTES`] of compact JSON, with every `$ref` local and
//! resolving, at most [`MAX_SCHEMA_NODES`] schema nodes reachable when every
//! `$ref` is followed, and every regular expression (`pattern`, the keys of
//! `patternProperties`) compiling within [`MAX_PATTERN_SIZE`]. One listing's
//! distinct schemas may come to at most [`MAX_LISTING_SCHEMA_BYTES`], and
//! their distinct expressions to [`MAX_LISTING_PATTERN_BYTES`] compiled. Vetting also finds which
//! argument names the schema declares ([`Declared`]).
//!
//! The full compile of the schema is not done here: it waits for the tool's
//! first call ([`crate::checks::ToolSchema`]), under the same pattern budget.
//!
//! The budgets are kept here; the walks over a schema are
//! `vetting/walk.rs` (one counts the nodes and finds the patterns, a second
//! finds the declared names, reusing the first's index of anchors), the
//! compile of one pattern `vetting/patterns.rs`.

mod patterns;
mod walk;

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::io::{self, Write};

use serde_json::Value;

use crate::compiled::guarded;
use crate::framing::one_line;
use patterns::{Failed, compile_pattern, pattern_problem};
use walk::{Walk, declared};

pub use crate::compiled::MAX_PATTERN_SIZE;

/// The most bytes of compact JSON one tool's input schema may have: room
/// for long descriptions (a turn is shown them cut, see
/// `framing::MAX_SHOWN_SCHEMA_CHARS`); the work a schema can cause is
/// bounded by [`MAX_SCHEMA_NODES`], [`MAX_SCHEMA_DEPTH`] and the pattern
/// budgets.
pub(crate) const MAX_SCHEMA_BYTES: usize = 1024 * 1024;

/// The most schema nodes validation of one schema can reach when every
/// `$ref` is followed (a `$ref` back to a schema it is inside counts once).
/// It bounds the work of one check: the 32-level schema whose every level
/// refers twice to the next reaches about 2^34 nodes and is refused.
pub const MAX_SCHEMA_NODES: u64 = 100_000;

/// The most bytes of compact JSON all the distinct schemas of one listing
/// may come to.
pub(crate) const MAX_LISTING_SCHEMA_BYTES: usize = 16 * 1024 * 1024;

/// The most bytes the distinct regular expressions of one listing may take
/// compiled, all together (a pattern that fails counts as much as the limit
/// it failed at). Each is compiled once at listing and dropped: this bounds
/// the start's work on patterns, and what the first calls can compile.
pub const MAX_LISTING_PATTERN_BYTES: usize = 4 * 1024 * 1024;

/// The deepest a schema may nest, counting every `$ref` followed.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 128;

/// The argument names a schema declares or admits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Declared {
    /// Names under `properties`, at the top or in a subschema applied to the
    /// same object (`allOf`, `anyOf`, `oneOf`, `if`/`then`/`else`,
    /// `dependentSchemas`, local `$ref`s).
    pub names: BTreeSet<String>,
    /// The keys of `patternProperties` found the same way: a name matching
    /// one is declared.
    pub patterns: BTreeSet<String>,
    /// Whether some `additionalProperties` (or `unevaluatedProperties`)
    /// found the same way is present and not `false`: every name is
    /// declared.
    pub open: bool,
}

/// What vetting found of a usable schema.
#[derive(Debug, Clone)]
pub struct Vetted {
    /// The names it declares.
    pub declared: Declared,
    /// The schema nodes validation can reach, every `$ref` followed.
    pub nodes: u64,
    /// Whether it has a regular expression (`pattern`, a key of
    /// `patternProperties`), whose matching time depends on the input.
    pub has_patterns: bool,
}

/// Which of a tool's schemas is vetted: its reasons say which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    /// The schema of its arguments (`inputSchema`).
    Input,
    /// The schema of its structured results (`outputSchema`).
    Output,
}

impl fmt::Display for Which {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Which::Input => "input schema",
            Which::Output => "output schema",
        })
    }
}

/// Why a regular expression of a listing cannot be used, kept to be said
/// of every schema that has it.
#[derive(Debug, Clone, Copy)]
enum Unusable {
    /// It does not compile within [`MAX_PATTERN_SIZE`].
    Pattern,
    /// The listing's patterns are over [`MAX_LISTING_PATTERN_BYTES`].
    Listing,
}

/// The budget of one listing: what its schemas have used so far, and the
/// verdict on each regular expression already compiled.
#[derive(Debug, Default)]
pub struct ListingBudget {
    schema_bytes: usize,
    pattern_bytes: usize,
    patterns: HashMap<String, Result<(), Unusable>>,
}

impl ListingBudget {
    /// Vets `schema`, a tool's input schema, counting it against this
    /// listing's budget.
    ///
    /// # Errors
    /// Why the schema cannot be used: a short reason, for the audit trail.
    pub fn vet(&mut self, schema: &Value) -> Result<Vetted, String> {
        self.vet_as(schema, Which::Input)
    }

    /// Vets `schema`, a tool's output schema, as [`ListingBudget::vet`]
    /// does an input schema; its reasons name the output schema.
    ///
    /// # Errors
    /// Why the schema cannot be used: a short reason, for the audit trail.
    pub fn vet_output(&mut self, schema: &Value) -> Result<Vetted, String> {
        self.vet_as(schema, Which::Output)
    }

    fn vet_as(&mut self, schema: &Value, which: Which) -> Result<Vetted, String> {
        let Value::Object(map) = schema else {
            return Err(format!("the {which} is not a JSON object"));
        };
        if map.get("type") != Some(&Value::String("object".to_owned())) {
            return Err(format!("the {which} is not of type \"object\""));
        }
        if !matches!(map.get("properties"), None | Some(Value::Object(_))) {
            return Err(format!("the {which}'s \"properties\" is not an object"));
        }
        let bytes = compact_len(schema, MAX_SCHEMA_BYTES).ok_or_else(|| {
            format!("the {which} is larger than the budget of {MAX_SCHEMA_BYTES} bytes")
        })?;
        if self.schema_bytes + bytes > MAX_LISTING_SCHEMA_BYTES {
            return Err(format!(
                "the provider's schemas come to more than the budget of {MAX_LISTING_SCHEMA_BYTES} bytes in all"
            ));
        }
        let mut walk = Walk::new(schema, which);
        let nodes = walk.reach(schema, 0)?;
        for pattern in &walk.patterns {
            self.pattern(pattern).map_err(|unusable| match unusable {
                Unusable::Pattern => pattern_problem(which, pattern),
                Unusable::Listing => format!(
                    "the provider's patterns come to more than the budget of {MAX_LISTING_PATTERN_BYTES} bytes compiled in all"
                ),
            })?;
        }
        let declared = declared(schema, &mut walk)?;
        meta_valid(schema, which)?;
        self.schema_bytes += bytes;
        let has_patterns = !walk.patterns.is_empty();
        Ok(Vetted {
            declared,
            nodes,
            has_patterns,
        })
    }

    /// Compiles `pattern` once per listing, under [`MAX_PATTERN_SIZE`] and
    /// what is left of [`MAX_LISTING_PATTERN_BYTES`].
    fn pattern(&mut self, pattern: &str) -> Result<(), Unusable> {
        if let Some(&verdict) = self.patterns.get(pattern) {
            return verdict;
        }
        let left = MAX_LISTING_PATTERN_BYTES.saturating_sub(self.pattern_bytes);
        let limit = left.min(MAX_PATTERN_SIZE);
        let compiled = if left == 0 {
            Err(Failed::Size)
        } else {
            compile_pattern(pattern, limit)
        };
        let verdict = match compiled {
            Ok(size) => {
                self.pattern_bytes += size;
                Ok(())
            }
            Err(Failed::Size) if limit < MAX_PATTERN_SIZE => {
                self.pattern_bytes = MAX_LISTING_PATTERN_BYTES;
                Err(Unusable::Listing)
            }
            Err(failed) => {
                if failed == Failed::Size {
                    self.pattern_bytes += limit;
                }
                Err(Unusable::Pattern)
            }
        };
        self.patterns.insert(pattern.to_owned(), verdict);
        verdict
    }
}

/// Checks `schema` against its draft's meta-schema (bundled, offline).
fn meta_valid(schema: &Value, which: Which) -> Result<(), String> {
    let checked =
        guarded(|| jsonschema::meta::validate(schema).map_err(|e| one_line(&e.to_string(), 300)));
    match checked {
        Some(Ok(())) => Ok(()),
        Some(Err(e)) => Err(format!("the {which} is not a valid JSON Schema: {e}")),
        None => Err(format!("the {which} crashed the meta-schema check")),
    }
}

/// The length of `value`'s compact JSON, or `None` past `limit`, found
/// without keeping the text.
fn compact_len(value: &Value, limit: usize) -> Option<usize> {
    struct Count(usize, usize);
    impl Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            if self.0 > self.1 {
                return Err(io::Error::other("over"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0, limit);
    serde_json::to_writer(&mut count, value).ok()?;
    Some(count.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, json};

    fn vet(schema: &Value) -> Result<Vetted, String> {
        ListingBudget::default().vet(schema)
    }

    /// The schema of issue 18.1: `levels` levels, each referring twice to
    /// the next, under a top-level `$ref`.
    pub(crate) fn doubling(levels: usize) -> Value {
        let mut defs = Map::new();
        for i in 0..levels {
            defs.insert(
                format!("d{i}"),
                json!({"allOf": [{"$ref": format!("#/$defs/d{}", i + 1)},
                                 {"$ref": format!("#/$defs/d{}", i + 1), "minLength": 0}]}),
            );
        }
        defs.insert(format!("d{levels}"), json!({}));
        json!({"type": "object", "$ref": "#/$defs/d0", "$defs": defs})
    }

    #[test]
    fn the_doubling_schema_is_over_the_expansion_budget_and_a_shallower_one_is_not() {
        let err = vet(&doubling(32)).expect_err("over budget");
        assert!(
            err.contains("more than the budget of 100000 schema nodes"),
            "{err}"
        );
        let under = vet(&doubling(14)).expect("under budget");
        assert!(under.nodes > MAX_SCHEMA_NODES / 4 && under.nodes <= MAX_SCHEMA_NODES);
        assert!(vet(&doubling(15)).is_err());
    }

    #[test]
    fn refs_must_be_local_and_resolve_and_cycles_are_counted_once() {
        for r in [
            "http://x/s",
            "file:///etc/passwd",
            "other.json#/a",
            "#/$defs/nope",
            "#nope",
            "#/%zz",
        ] {
            let s = json!({"type": "object", "properties": {"a": {"$ref": r}}, "$defs": {}});
            let err = vet(&s).expect_err(r);
            assert!(
                err.starts_with("the input schema has a $ref outside itself"),
                "{r}: {err}"
            );
        }
        let cyclic = json!({"type": "object", "properties": {"child": {"$ref": "#"}},
                            "$defs": {"a": {"$anchor": "here", "type": "string"}},
                            "allOf": [{"$ref": "#here"}, {"$ref": "#/$defs/a%20b"}]});
        let err = vet(&cyclic).expect_err("a%20b is not there");
        assert!(err.contains("a%20b"), "{err}");
        let mut fixed = cyclic;
        fixed["$defs"]["a b"] = json!({});
        let v = vet(&fixed).expect("resolves");
        assert!(v.nodes < 10, "{}", v.nodes);
    }

    #[test]
    fn a_deep_chain_of_refs_is_refused_not_a_stack_overflow() {
        let mut defs = Map::new();
        for i in 0..1_000 {
            defs.insert(
                format!("a{i}"),
                json!({"$ref": format!("#/$defs/a{}", i + 1)}),
            );
        }
        let s = json!({"type": "object", "$ref": "#/$defs/a0", "$defs": defs});
        let err = vet(&s).expect_err("too deep");
        assert!(
            err.contains("deeper than the budget of 128 levels"),
            "{err}"
        );
    }

    #[test]
    fn schema_and_listing_bytes_are_budgeted() {
        let big = json!({"type": "object", "description": "x".repeat(MAX_SCHEMA_BYTES)});
        let err = vet(&big).expect_err("too big");
        assert_eq!(
            err,
            format!("the input schema is larger than the budget of {MAX_SCHEMA_BYTES} bytes")
        );
        let mut listing = ListingBudget::default();
        let mut refused = 0;
        for i in 0..100 {
            let s = json!({"type": "object", "description": format!("{i}{}", "x".repeat(200_000))});
            if let Err(e) = listing.vet(&s) {
                assert!(e.contains("in all"), "{e}");
                refused += 1;
            }
        }
        assert_eq!(refused, 100 - MAX_LISTING_SCHEMA_BYTES / 200_002);
    }

    #[test]
    fn patterns_over_the_size_budget_are_refused_and_counted_per_listing() {
        let with = |p: &str| json!({"type": "object", "properties": {"a": {"pattern": p}}});
        assert!(vet(&with("^[a-z]+$")).is_ok());
        let err = vet(&with("((")).expect_err("invalid");
        assert!(
            err.starts_with(r#"the input schema's pattern "((" does not compile"#),
            "{err}"
        );
        let costly =
            json!({"type": "object", "patternProperties": {r"^[\p{L}\p{N}_-]{1,200}$": {}}});
        let err = vet(&costly).expect_err("over the regex budget");
        assert!(
            err.ends_with("larger than the budget of 262144 bytes"),
            "{err}"
        );
        // Lookbehind: compiled whole by jsonschema's engine, under the limit.
        assert!(vet(&with("(?<=a)b")).is_ok());
        // About 200 KiB each: the listing's 4 MiB take some 20 of them.
        let mut listing = ListingBudget::default();
        let verdicts: Vec<_> = (0..30)
            .map(|i| listing.vet(&with(&format!(r"^[\p{{L}}\p{{N}}_-]{{1,12}}{i}$"))))
            .collect();
        let kept = verdicts.iter().take_while(|v| v.is_ok()).count();
        assert!((12..26).contains(&kept), "{kept}");
        for v in &verdicts[kept..] {
            let err = v.as_ref().expect_err("over the listing's budget");
            assert_eq!(
                err,
                "the provider's patterns come to more than the budget of 4194304 bytes compiled in all"
            );
        }
        // A pattern seen before keeps its verdict.
        assert!(listing.vet(&with(r"^[\p{L}\p{N}_-]{1,12}0$")).is_ok());
    }

    #[test]
    fn declared_names_come_through_applicators_and_refs() {
        let d = |s: Value| vet(&s).expect("usable").declared;
        let all = d(json!({"type": "object", "allOf": [
            {"properties": {"query": {"type": "string"}}, "required": ["query"]},
            {"properties": {"limit": {"type": "integer"}}}]}));
        assert_eq!(all.names, ["limit", "query"].map(String::from).into());
        assert!(!all.open);
        let open = d(
            json!({"type": "object", "properties": {}, "additionalProperties": {"type": "string"}}),
        );
        assert!(open.open);
        let closed =
            d(json!({"type": "object", "properties": {"a": {}}, "additionalProperties": false}));
        assert!(!closed.open);
        let pat = d(
            json!({"type": "object", "patternProperties": {"^x_": {"type": "integer"}},
                           "additionalProperties": false}),
        );
        assert_eq!(pat.patterns, ["^x_".to_owned()].into());
        let referred = d(json!({"type": "object", "$ref": "#/$defs/args",
                                "$defs": {"args": {"type": "object", "properties": {"id": {"type": "integer"}}}}}));
        assert_eq!(referred.names, ["id".to_owned()].into());
        let branches = d(json!({"type": "object", "if": {"properties": {"a": {}}},
                                "then": {"properties": {"b": {}}}, "else": {"properties": {"c": {}}},
                                "anyOf": [{"properties": {"d": {}}}], "oneOf": [{"$ref": "#"}],
                                "properties": {"nested": {"properties": {"not_top": {}}}}}));
        assert_eq!(
            branches.names,
            ["a", "b", "c", "d", "nested"].map(String::from).into()
        );
    }
}
