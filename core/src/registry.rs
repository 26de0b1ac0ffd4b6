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
mod entry;
mod fields;
mod position;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::Error;
use crate::audit::{Audit, AuditEvent};
use crate::kind::Kinds;

pub use check::{EntryCheck, EntryWarning};
pub use entry::{EntryProblem, ProviderEntry, RefusedEntry, RequestClass, WritePolicy};
pub use fields::{Fields, type_name};
pub use position::Position;

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
    /// use spear_capabilities::{CAPABILITIES_FILE_VAR, Registry};
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

    /// Loads the file at `path`, checks each entry with the kind it names
    /// from `kinds`, and audits every entry.
    ///
    /// A missing file is an empty registry that says so
    /// ([`Registry::notice`]), not an error.
    ///
    /// # Errors
    /// [`Error::RegistryRead`] when the file exists but cannot be read,
    /// [`Error::RegistrySyntax`] (with line and column) when it is not JSON,
    /// [`Error::RegistryShape`] when it is not `{"providers": [...]}`.
    pub fn load(path: &Path, kinds: &Kinds, audit: &Audit) -> Result<Registry, Error> {
        match std::fs::read(path) {
            Ok(bytes) => Self::parse(&bytes, path, kinds, audit),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Registry {
                missing: true,
                ..Registry::empty(path, kinds)
            }),
            Err(source) => Err(Error::RegistryRead {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Parses `bytes` as the content of the capabilities file at `path`
    /// (used for messages and as the base of relative paths), and audits
    /// every entry.
    ///
    /// # Errors
    /// As [`Registry::load`], except that nothing is read.
    pub fn parse(
        bytes: &[u8],
        path: &Path,
        kinds: &Kinds,
        audit: &Audit,
    ) -> Result<Registry, Error> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| Error::RegistrySyntax {
            path: path.to_path_buf(),
            line: e.line(),
            // serde_json says column 0 when the fault is before the first
            // character of a line (an empty file, a cut-off last line);
            // ours are 1-based, as editors count.
            column: e.column().max(1),
            message: strip_position(&e.to_string()),
        })?;
        let shape = |message: &str| Error::RegistryShape {
            path: path.to_path_buf(),
            message: message.to_owned(),
        };
        let Value::Object(top) = value else {
            return Err(shape(r#"expected an object {"providers": [...]}"#));
        };
        if let Some(key) = top.keys().find(|k| *k != "providers") {
            return Err(shape(&format!(
                "unknown top-level key {key:?}; allowed: \"providers\""
            )));
        }
        let Some(Value::Array(items)) = top.get("providers") else {
            return Err(shape(r#"expected "providers" to be an array of entries"#));
        };
        let mut registry = Registry::empty(path, kinds);
        let mut claimed: Vec<(String, usize)> = Vec::new();
        let mut places = None;
        for (index, item) in items.iter().enumerate() {
            match entry::parse_entry(index, item, &registry.base_dir, kinds, &mut claimed) {
                Ok(entry) => registry.entries.push(entry),
                Err(mut refused) => {
                    // Read only when an entry is refused: most files have none.
                    let places = places.get_or_insert_with(|| position::entry_places(bytes));
                    if let Some(place) = places.get(index) {
                        refused.position = place.at;
                        for problem in &mut refused.problems {
                            problem.position = place.of(&problem.key);
                        }
                    }
                    registry.refused.push(refused);
                }
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

/// serde_json appends " at line L column C"; we report those separately.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}
