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
//! What is a kind's own is reachable from here too: [`mcp_stdio`] is the
//! `mcp-stdio` kind (its limits, `--trace`'s library side), and
//! [`set_non_dumpable`] closes the embedder's memory and environment to
//! the servers it starts.
//!
//! The operator CLI `spear-capabilities` is its own package (`cli/`), so
//! that linking the kinds costs an embedder only the kinds.
#![forbid(unsafe_code)]

use std::path::Path;

use spear_capabilities::{Audit, Error, Registry, kind::Kinds};

/// The `mcp-stdio` kind (crate `spear-mcp-stdio`): its limits
/// (`MAX_LINE`, `MAX_PAGES`, ...), `WIRE` (the `tracing` target of every
/// JSON-RPC line, which the CLI's `--trace` writes out), without a
/// dependency of the embedder's own.
pub use spear_mcp_stdio as mcp_stdio;

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

/// Marks this process non-dumpable (Linux: `prctl(PR_SET_DUMPABLE, 0)`).
///
/// A server runs as the embedder's user, and a process of the same user
/// can read another's `/proc/<pid>/environ` and memory unless that one is
/// non-dumpable; it also stops core dumps of the process. Call it once,
/// before the first session starts a server. The operator CLI calls it at
/// its start.
///
/// # Errors
/// The OS's error when the flag cannot be set; `Unsupported` on a system
/// other than Linux or Android, where there is no such flag.
pub fn set_non_dumpable() -> std::io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use rustix::process::{DumpableBehavior, set_dumpable_behavior};
        set_dumpable_behavior(DumpableBehavior::NotDumpable).map_err(std::io::Error::from)
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

/// The README's embedding program, compiled as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
