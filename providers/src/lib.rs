//! The built-in provider kinds of SPEAR's external capabilities, as one set.
//!
//! [`kinds`] is every built-in kind; [`registry`] loads a capabilities file
//! with them, the one call an embedding program needs before it opens
//! sessions. Naming either links the kind crates, so no registration can
//! silently go missing:
//!
//! ```
//! let kinds = spear_providers::kinds().expect("built-in kinds have distinct names");
//! assert_eq!(kinds.names(), spear_providers::BUILT_IN_KINDS);
//! ```
//!
//! The operator CLI `spear-capabilities` is its own package (`cli/`), so
//! that linking the kinds costs an embedder only the kinds.
#![forbid(unsafe_code)]

use std::path::Path;

use spear_capabilities::{Audit, Error, Kinds, Registry};

/// The names of the built-in kinds, sorted.
pub const BUILT_IN_KINDS: &[&str] = &[spear_mcp_stdio::NAME];

/// Every built-in kind.
///
/// # Errors
/// [`Error::DuplicateKind`] if two built-in kinds shared a name (a bug of
/// this crate, pinned by its tests).
pub fn kinds() -> Result<Kinds, Error> {
    Kinds::new([&spear_mcp_stdio::KIND])
}

/// Loads the capabilities file at `path` with the built-in kinds
/// ([`Registry::load`]).
///
/// # Errors
/// As [`Registry::load`].
pub fn registry(path: &Path, audit: &Audit) -> Result<Registry, Error> {
    Registry::load(path, &kinds()?, audit)
}

/// The README's embedding program, compiled as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
