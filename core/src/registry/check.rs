//! Whether an accepted entry could start, without starting it: is its
//! program there and runnable. What `spear-capabilities check` says,
//! for an embedder to say before the first turn.
//!
//! The core cannot tell (it knows no transport): an entry's kind can, with
//! its optional [`crate::kind::ProviderKind::check`]. A program that cannot run
//! refuses an entry some turn would start, and is only a warning for one
//! nothing starts (disabled, or without a scope, which applies nowhere).

use std::path::Path;

use super::{ProviderEntry, Registry};

/// What a check found of one accepted entry beyond its validation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EntryCheck {
    /// The provider's id.
    pub provider: String,
    /// Why its program cannot run, in the words a start uses (`cannot
    /// start `x`: No such file or directory (os error 2)`), when a turn
    /// would start it: the entry should be refused.
    pub cannot_run: Option<String>,
    /// What the operator should know and that refuses nothing.
    pub warnings: Vec<EntryWarning>,
}

impl EntryCheck {
    /// Whether nothing stands in its way: its program can run, or its kind
    /// cannot tell.
    pub fn is_ok(&self) -> bool {
        self.cannot_run.is_none()
    }
}

/// Something an operator should know of an entry, which refuses nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EntryWarning {
    /// It has no scope, so it applies nowhere.
    #[error("no scope, so it applies nowhere (add `scope` to use it)")]
    NoScope,
    /// Its program cannot run, and nothing starts it: it is disabled
    /// (`disabled`) or has no scope.
    #[error("{reason}; a warning only: {}, so nothing starts it", if *.disabled { "it is disabled" } else { "it has no scope" })]
    CannotRunUnused {
        /// Why its program cannot run.
        reason: String,
        /// Whether it is disabled (else it has no scope).
        disabled: bool,
    },
}

impl Registry {
    /// Checks every accepted entry, in file order, with its kind's
    /// [`crate::kind::ProviderKind::check`]: whether its program is there and
    /// runnable. Nothing is started.
    pub fn check(&self) -> Vec<EntryCheck> {
        self.entries().iter().map(|e| self.check_entry(e)).collect()
    }

    /// Checks one entry of this registry, as [`Registry::check`] does.
    pub fn check_entry(&self, entry: &ProviderEntry) -> EntryCheck {
        let mut check = EntryCheck {
            provider: entry.id.clone(),
            cannot_run: None,
            warnings: Vec::new(),
        };
        if entry.scope.is_none() {
            check.warnings.push(EntryWarning::NoScope);
        }
        let Some(reason) = cannot_run(self, entry, self.base_dir()) else {
            return check;
        };
        if !entry.enabled || entry.scope.is_none() {
            check.warnings.push(EntryWarning::CannotRunUnused {
                reason,
                disabled: !entry.enabled,
            });
        } else {
            check.cannot_run = Some(reason);
        }
        check
    }
}

/// Why `entry`'s program cannot run, if its kind can tell.
fn cannot_run(registry: &Registry, entry: &ProviderEntry, base: &Path) -> Option<String> {
    let kind = registry.kinds().find(&entry.kind).ok()?;
    (kind.check?)(&entry.settings, base).err()
}
