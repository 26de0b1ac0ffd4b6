//! `jsonschema` as the gateway uses it, in one place: offline, under one
//! pattern budget, behind one guard against its panics, and each schema
//! compiled once, at its first use ([`Lazy`]).
//!
//! A schema is a provider's text: a pattern or a keyword that panics inside
//! `jsonschema` or its regex engines must not take the runtime down with
//! it, so every call into them goes through [`guarded`]. The crate is built
//! without its http and file resolvers (`default-features = false`), and
//! [`options`] also says `offline`: a `$ref` outside the schema never
//! reaches the network or the disk.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use serde_json::Value;

use crate::framing::one_line;

/// The most bytes one compiled regular expression (`pattern` or a key of
/// `patternProperties`) may take: the regex engine's size limit. Patterns
/// as servers write them take a few KiB; a repeated Unicode class such as
/// `^[\p{L}\p{N}_-]{1,64}$` about 1.1 MiB, over the budget.
pub const MAX_PATTERN_SIZE: usize = 256 * 1024;

/// The most backtracking steps one match of a pattern that needs the
/// backtracking engine (lookaround, backreferences) may take before it
/// fails.
pub(crate) const PATTERN_BACKTRACK_LIMIT: usize = 100_000;

/// Runs `work`, a call into `jsonschema` or its regex engines; `None` when
/// it panicked.
pub(crate) fn guarded<T>(work: impl FnOnce() -> T) -> Option<T> {
    catch_unwind(AssertUnwindSafe(work)).ok()
}

/// The options of every compile of a provider's schema: offline, with the
/// regex engine jsonschema defaults to, each pattern within `size_limit`
/// bytes (at most [`MAX_PATTERN_SIZE`]).
pub(crate) fn options(size_limit: usize) -> jsonschema::ValidationOptions<'static> {
    let patterns = jsonschema::PatternOptions::fancy_regex()
        .size_limit(size_limit.min(MAX_PATTERN_SIZE))
        .dfa_size_limit(MAX_PATTERN_SIZE)
        .backtrack_limit(PATTERN_BACKTRACK_LIMIT);
    jsonschema::options()
        .offline()
        .with_pattern_options(patterns)
}

/// Compiles `schema` with [`options`] under [`MAX_PATTERN_SIZE`].
///
/// # Errors
/// Why it does not compile, one bounded line.
pub(crate) fn build(schema: &Value) -> Result<jsonschema::Validator, String> {
    match guarded(|| options(MAX_PATTERN_SIZE).build(schema)) {
        Some(Ok(validator)) => Ok(validator),
        Some(Err(e)) => Err(one_line(&e.to_string(), 300)),
        None => Err("the schema compiler crashed".to_owned()),
    }
}

/// A schema compiled at its first use and kept for the session: one
/// compile, whatever number of checks share it, and the one check that
/// compiled it is told so (a failure is said once).
#[derive(Debug)]
pub(crate) struct Lazy<T> {
    schema: Value,
    compiled: OnceLock<Result<T, String>>,
}

impl<T> Lazy<T> {
    /// `schema`, not compiled yet.
    pub(crate) fn new(schema: Value) -> Self {
        Self {
            schema,
            compiled: OnceLock::new(),
        }
    }

    /// The schema as the provider declared it.
    pub(crate) fn schema(&self) -> &Value {
        &self.schema
    }

    /// Whether a first use has compiled it (or failed to).
    pub(crate) fn is_compiled(&self) -> bool {
        self.compiled.get().is_some()
    }

    /// The compiled schema, or why it cannot be compiled, compiling it with
    /// `compile` if no use has yet; and whether this use compiled it.
    /// Blocking: a use while another compiles waits for it.
    pub(crate) fn get(
        &self,
        compile: impl FnOnce(&Value) -> Result<T, String>,
    ) -> (Result<&T, &str>, bool) {
        let mut first = false;
        let compiled = self.compiled.get_or_init(|| {
            first = true;
            compile(&self.schema)
        });
        (compiled.as_ref().map_err(String::as_str), first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_panic_inside_the_guard_is_none_and_the_caller_goes_on() {
        assert_eq!(guarded(|| 7), Some(7));
        let panicked: Option<()> = guarded(|| panic!("a hostile schema"));
        assert_eq!(panicked, None);
    }

    #[test]
    fn a_lazy_schema_compiles_at_its_first_use_only() {
        let lazy: Lazy<usize> = Lazy::new(json!({"type": "object"}));
        assert!(!lazy.is_compiled());
        let (got, first) = lazy.get(|s| Ok(s.to_string().len()));
        assert_eq!((got, first), (Ok(&17), true));
        let (got, first) = lazy.get(|_| Err("never called".to_owned()));
        assert_eq!((got, first), (Ok(&17), false));
        let failed: Lazy<usize> = Lazy::new(json!(null));
        assert_eq!(failed.get(|_| Err("no".to_owned())), (Err("no"), true));
        assert_eq!(failed.get(|_| Ok(1)), (Err("no"), false));
    }
}
