//! The built-in provider kinds of SPEAR's external capabilities, linked
//! together.
//!
//! A Cargo dependency alone does not link a crate, and an unlinked crate's
//! `inventory` registration vanishes silently. This crate names every kind
//! crate, so a program that names this crate has them all:
//!
//! ```
//! use spear_providers as _;
//! let names: Vec<_> = spear_capabilities::kinds().unwrap().iter().map(|k| k.name).collect();
//! assert_eq!(names, spear_providers::BUILT_IN_KINDS);
//! ```
#![forbid(unsafe_code)]

use spear_mcp_stdio as _;

/// The names of the built-in kinds, sorted.
pub const BUILT_IN_KINDS: &[&str] = &[spear_mcp_stdio::NAME];

/// Makes sure the kinds are linked; call it once from a program that uses
/// this crate only through the core (it does nothing else).
pub fn link() {
    let _ = &spear_mcp_stdio::KIND;
}
