//! The providers' registry: `capabilities.json`.
//!
//! The file lies beside `projects.json`, or is the one
//! [`CAPABILITIES_FILE_VAR`] names (the variable wins). It is the deployment's
//! own file: commands and server names in it are never shown to a turn.
//!
//! ```json
//! {"providers": [
//!   {"id": "tracker",
//!    "command": ["/opt/tracker-mcp/bin/tracker-mcp"],
//!    "scope": "corpus firmware-a",
//!    "tasks": ["implementation", "mixed"],
//!    "read": ["search_issues", "get_issue"],
//!    "write": "refuse",
//!    "timeout": 10}
//! ]}
//! ```
//!
//! The core checks the common keys; the rest go to the entry's kind
//! ([`crate::kind`]), which checks its own. An invalid entry is refused with
//! every problem it has while the valid ones register; both are audited.
//!
//! It is not where providers start (a session does, with the registry's
//! kinds) nor where a turn's providers are chosen ([`crate::selection`]).

mod check;
pub(crate) mod document;
mod entry;
pub(crate) mod file;
pub(crate) mod position;
pub(crate) mod problem;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::audit::{Audit, AuditEvent};
use crate::error::Error;
use crate::kind::Kinds;

pub use crate::scope::{Scope, ScopeError};
pub use crate::vocabulary::{RequestClass, WritePolicy};
pub use check::{EntryCheck, EntryWarning};
pub use entry::ProviderEntry;
pub use file::MAX_REGISTRY_BYTES;
pub use problem::RefusedEntry;

/// The environment variable naming the capabilities file.
pub const CAPABILITIES_FILE_VAR: &str = "SPEAR_CAPABILITIES_FILE";
/// The capabilities file's name beside `projects.json`.
pub const CAPABILITIES_FILE_NAME: &str = "capabilities.json";
/// How long one request may take when an entry has no `timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest `timeout` an entry may set, in seconds (one day).
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;
/// The longest provider id.
pub const MAX_ID_LEN: usize = 64;

/// The keys every entry may have, whatever its kind.
pub const COMMON_KEYS: &[&str] = &[
    "id", "kind", "scope", "tasks", "read", "write", "enabled", "timeout",
];

/// The loaded registry: its entries, checked, and the kinds that start them.
#[derive(Debug, Clone)]
pub struct Registry {
    file: Option<PathBuf>,
    missing: bool,
    base_dir: PathBuf,
    kinds: Kinds,
    entries: Vec<ProviderEntry>,
    refused: Vec<RefusedEntry>,
}

impl Registry {
    /// Where the capabilities file is: `env_value` (the content of
    /// [`CAPABILITIES_FILE_VAR`]) when set and not empty, else
    /// `capabilities.json` beside `projects_json`.
    ///
    /// ```
    /// use std::path::Path;
    /// use spear_capabilities::{registry::CAPABILITIES_FILE_VAR, Registry};
    /// let file = Registry::locate(
    ///     Path::new("/etc/spear/projects.json"),
    ///     std::env::var_os(CAPABILITIES_FILE_VAR),
    /// );
    /// # let _ = file;
    /// ```
    pub fn locate(projects_json: &Path, env_value: Option<OsString>) -> PathBuf {
        match env_value {
            Some(v) if !v.is_empty() => PathBuf::from(v),
            _ => projects_json
                .parent()
                .unwrap_or(Path::new(""))
                .join(CAPABILITIES_FILE_NAME),
        }
    }

    /// Loads the file at `path` (a symbolic link is followed), checks each
    /// entry with the kind it names from `kinds`, and audits every entry.
    ///
    /// A missing file is an empty registry that says so
    /// ([`Registry::notice`]), not an error. Only a regular file is read
    /// (a FIFO is refused without waiting for a writer), and at most
    /// [`MAX_REGISTRY_BYTES`] of it.
    ///
    /// # Errors
    /// [`Error::RegistryRead`] when the file exists but cannot be read, is
    /// not a regular file or is larger than [`MAX_REGISTRY_BYTES`];
    /// otherwise as [`Registry::parse`].
    pub fn load(path: &Path, kinds: &Kinds, audit: &Audit) -> Result<Registry, Error> {
        let Some(mut opened) = file::open(path)? else {
            return Ok(Registry {
                missing: true,
                ..Registry::empty(path, kinds)
            });
        };
        let bytes = file::read(&mut opened, path)?;
        Self::parse(&bytes, path, kinds, audit)
    }

    /// Parses `bytes` as the content of the capabilities file at `path`
    /// (used for messages, as the base of relative paths and, for
    /// mcp-stdio, as the folder its servers run in, which must exist when
    /// they start), and audits every entry.
    ///
    /// The bytes are UTF-8 JSON (a byte-order mark at the start is
    /// accepted), read strictly: no comment, no trailing comma. A key given
    /// twice means neither copy: in an entry it refuses the entry
    /// ([`crate::kind::EntryProblemKind::DuplicateKey`]), outside the entries it is an
    /// error of the file.
    ///
    /// # Errors
    /// [`Error::RegistrySyntax`] (with line and column) when it is not
    /// UTF-8 JSON or gives a key twice outside the entries,
    /// [`Error::RegistryShape`] when it is not `{"providers": [...]}`.
    pub fn parse(
        bytes: &[u8],
        path: &Path,
        kinds: &Kinds,
        audit: &Audit,
    ) -> Result<Registry, Error> {
        let fault = |fault| match fault {
            document::Fault::Syntax { at, message } => Error::RegistrySyntax {
                path: path.to_path_buf(),
                line: at.line,
                column: at.column,
                message,
            },
            document::Fault::Shape(message) => Error::RegistryShape {
                path: path.to_path_buf(),
                message,
            },
        };
        let document = document::text(bytes)
            .and_then(document::read)
            .map_err(fault)?;
        let mut registry = Registry::empty(path, kinds);
        let mut claimed: Vec<(String, usize)> = Vec::new();
        for (index, node) in document.entries.iter().enumerate() {
            match entry::parse_entry(index, node, &registry.base_dir, kinds, &mut claimed) {
                Ok(entry) => registry.entries.push(entry),
                Err(refused) => registry.refused.push(refused),
            }
        }
        registry.audit(audit);
        Ok(registry)
    }

    /// A registry of no entry, read from `path`.
    fn empty(path: &Path, kinds: &Kinds) -> Registry {
        Registry {
            file: Some(path.to_path_buf()),
            missing: false,
            base_dir: path.parent().unwrap_or(Path::new("")).to_path_buf(),
            kinds: kinds.clone(),
            entries: Vec::new(),
            refused: Vec::new(),
        }
    }

    fn audit(&self, audit: &Audit) {
        let file = self.file.as_ref().map(|p| p.display().to_string());
        for e in &self.entries {
            audit.emit(AuditEvent::ProviderRegistered {
                file: file.clone(),
                provider: e.id.clone(),
                kind: e.kind.clone(),
                scope: e.scope.as_ref().map(ToString::to_string),
                tasks: e.tasks.iter().copied().collect(),
                read: e.read.iter().cloned().collect(),
                write: e.write,
                enabled: e.enabled,
                timeout_secs: e.timeout.as_secs_f64(),
            });
        }
        for r in &self.refused {
            audit.emit(AuditEvent::ProviderRefused {
                file: file.clone(),
                entry: r.label(),
                problems: r.problems.iter().map(ToString::to_string).collect(),
            });
        }
    }

    /// The accepted entries, in file order.
    pub fn entries(&self) -> &[ProviderEntry] {
        &self.entries
    }

    /// The accepted entry with this id.
    pub fn entry(&self, id: &str) -> Option<&ProviderEntry> {
        self.entries.iter().find(|e| e.id == id)
    }

    /// The refused entries, in file order.
    pub fn refused(&self) -> &[RefusedEntry] {
        &self.refused
    }

    /// The file it was read from, if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// The kinds its entries were checked with, which start them.
    pub fn kinds(&self) -> &Kinds {
        &self.kinds
    }

    /// The folder relative paths in the registry are resolved against.
    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }

    /// A line for the operator when the registry is empty because its file
    /// does not exist.
    pub fn notice(&self) -> Option<String> {
        match (&self.file, self.missing) {
            (Some(f), true) => Some(format!(
                "no capabilities file at {}: no providers are registered",
                f.display()
            )),
            _ => None,
        }
    }
}
