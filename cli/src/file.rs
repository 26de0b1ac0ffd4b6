//! The capabilities file as `add`, `remove`, `set`, `enable` and `disable`
//! edit it: the way a small embedded database keeps its file. One writer at
//! a time, a write whole or absent, the file still the operator's.
//!
//! - **One writer**: an edit holds an exclusive `flock` on the file for its
//!   whole read-modify-write ([`lock`]), so every edit sees the one before
//!   it. A second editor waits, at most [`lock::LOCK_WAIT`], then says
//!   which process holds the lock. A file replaced while we waited (the
//!   writer before us renamed its new file over it) is opened again.
//! - **Whole or absent**: the new text goes to a temporary file beside the
//!   old one, readable by its owner only, flushed to disk, then renamed
//!   over it, and the folder flushed ([`write`]). A file that does not
//!   exist yet is created the same way, by a rename that fails if another
//!   editor created it first (then the edit starts again, under the lock).
//! - **Still the operator's**: the owner, group and mode of the file
//!   replaced are kept; a symbolic link is written through to the file it
//!   names, and a dangling one is refused; a file with another hard link,
//!   which a replacement would split, is refused, as is a read-only one.
//!
//! The file is read once, by the core, as the registry reads it (only a
//! regular file, bounded, a byte-order mark kept); the edit itself is the
//! caller's, on that text ([`crate::tree`]).

mod lock;
mod write;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use spear_capabilities::internals::registry::{self as core_file, BYTE_ORDER_MARK};
use spear_capabilities::{Audit, Registry};

use crate::error::Failure;
use crate::tree::EMPTY;

/// The file as an edit found it, under its lock.
#[derive(Debug)]
pub(crate) struct Current {
    /// The file as the operator named it.
    pub(crate) path: PathBuf,
    /// Its text, without a byte-order mark.
    pub(crate) text: String,
    /// The registry the core reads from it.
    pub(crate) registry: Registry,
    /// There is no file yet: `text` is [`EMPTY`], and a write creates it.
    pub(crate) created: bool,
}

impl Current {
    /// The indices in `providers` of the entries with the id `id`,
    /// accepted or refused, in file order.
    pub(crate) fn indices(&self, id: &str) -> Vec<usize> {
        let accepted = self.registry.entries().iter().filter(|e| e.id == id);
        let refused = self.registry.refused().iter();
        let refused = refused.filter(|r| r.id.as_deref() == Some(id));
        let mut found: Vec<usize> = accepted
            .map(|e| e.index)
            .chain(refused.map(|r| r.index))
            .collect();
        found.sort_unstable();
        found
    }

    /// The ids of the file's entries that have one, in file order.
    pub(crate) fn ids(&self) -> Vec<String> {
        let accepted = self.registry.entries().iter().map(|e| (e.index, &e.id));
        let refused = self.registry.refused().iter();
        let refused = refused.filter_map(|r| Some((r.index, r.id.as_ref()?)));
        let mut ids: Vec<(usize, &String)> = accepted.chain(refused).collect();
        ids.sort_unstable();
        ids.into_iter().map(|(_, id)| id.clone()).collect()
    }

    /// How many entries the file has.
    pub(crate) fn len(&self) -> usize {
        self.registry.entries().len() + self.registry.refused().len()
    }

    /// The registry the core would read from `text`, an edit of this file
    /// not written yet.
    pub(crate) fn edited(&self, text: &str) -> Result<Registry, Failure> {
        registry_of(text.as_bytes(), &self.path).map_err(|e| {
            Failure::Usage(format!(
                "the edited file would not parse ({e}); nothing written"
            ))
        })
    }

    /// The error of an edit that cannot be made to this file.
    pub(crate) fn cannot_edit(&self, e: impl std::fmt::Display) -> Failure {
        Failure::Usage(format!("cannot edit {}: {e}", self.path.display()))
    }
}

/// What an edit decided: a new text to write, or nothing; either way the
/// value it hands back.
#[derive(Debug)]
pub(crate) enum Edited<T> {
    /// Write this text (without a byte-order mark: the file's is kept).
    Write(String, T),
    /// Write nothing.
    Keep(T),
}

/// Edits the file at `path`: `change` gets the file as it is, under its
/// lock, and says what to write; it may run more than once, when another
/// editor created the file under us. Nothing is written when it fails.
pub(crate) async fn edit<T>(
    path: &Path,
    mut change: impl FnMut(&Current) -> Result<Edited<T>, Failure>,
) -> Result<T, Failure> {
    loop {
        let target = target(path)?;
        let Some(mut file) = core_file::open(&target).map_err(read_error)? else {
            let current = Current {
                path: path.to_path_buf(),
                text: EMPTY.to_owned(),
                registry: registry_of(EMPTY.as_bytes(), path).map_err(Failure::Usage)?,
                created: true,
            };
            match change(&current)? {
                Edited::Keep(value) => return Ok(value),
                Edited::Write(text, value) => {
                    if write::create(&target, text.as_bytes()).map_err(cannot_write(path))? {
                        return Ok(value);
                    }
                    // Another editor created it first: edit theirs.
                    continue;
                }
            }
        };
        lock::exclusive(&file, path).await?;
        let meta = file.metadata().map_err(cannot_write(path))?;
        if !same_file(&meta, &target) {
            // Replaced while we waited for the lock: read the new one.
            continue;
        }
        writable(&meta, &target, path)?;
        let bytes = core_file::read(&mut file, path).map_err(read_error)?;
        let mark = bytes.starts_with(BYTE_ORDER_MARK.as_bytes());
        let registry = registry_of(&bytes, path).map_err(Failure::Usage)?;
        let text = String::from_utf8_lossy(&bytes);
        let current = Current {
            path: path.to_path_buf(),
            text: text
                .strip_prefix(BYTE_ORDER_MARK)
                .unwrap_or(&text)
                .to_owned(),
            registry,
            created: false,
        };
        write::remove_stale(&target);
        let value = match change(&current)? {
            Edited::Keep(value) => value,
            Edited::Write(text, value) => {
                let text = if mark {
                    format!("{BYTE_ORDER_MARK}{text}")
                } else {
                    text
                };
                write::replace(&target, &meta, text.as_bytes()).map_err(cannot_write(path))?;
                value
            }
        };
        // The lock goes with the file, after the rename.
        drop(file);
        return Ok(value);
    }
}

/// The file `path` names: itself, or the file its symbolic link names,
/// which must exist.
fn target(path: &Path) -> Result<PathBuf, Failure> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => match std::fs::canonicalize(path) {
            Ok(real) => Ok(real),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let to = std::fs::read_link(path).unwrap_or_default();
                Err(Failure::Usage(format!(
                    "{} is a symbolic link to {}, which does not exist; nothing written (create that file, or point the link at the registry)",
                    path.display(),
                    to.display()
                )))
            }
            Err(e) => Err(Failure::Usage(format!(
                "cannot follow the symbolic link {}: {e}; nothing written",
                path.display()
            ))),
        },
        Ok(_) => Ok(path.to_path_buf()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(path.to_path_buf()),
        Err(e) => Err(Failure::Usage(format!(
            "capabilities file {}: {e}",
            path.display()
        ))),
    }
}

/// Whether `target` is still the file we opened and locked (`meta`).
fn same_file(meta: &std::fs::Metadata, target: &Path) -> bool {
    std::fs::metadata(target).is_ok_and(|now| (now.dev(), now.ino()) == (meta.dev(), meta.ino()))
}

/// Refuses a file that an edit, which replaces it, must not touch: one
/// with another hard link (the other names would keep the old text), one
/// that is read-only or that this user may not write.
fn writable(meta: &std::fs::Metadata, target: &Path, path: &Path) -> Result<(), Failure> {
    let shown = path.display();
    if meta.nlink() > 1 {
        return Err(Failure::Usage(format!(
            "{shown} has {} hard links; an edit replaces the file, which would leave the other names with the old text; nothing written (make this its only name: remove the other links, or make them symbolic links to it)",
            meta.nlink()
        )));
    }
    // The rename needs only the folder's permission, which root and the
    // folder's owner have: the file's own mode is the operator's word.
    if meta.mode() & 0o222 == 0 {
        return Err(Failure::Usage(format!(
            "{shown} is read-only (mode {:04o}); nothing written (make it writable, `chmod u+w {shown}`, to edit it)",
            meta.mode() & 0o7777
        )));
    }
    rustix::fs::access(target, rustix::fs::Access::WRITE_OK).map_err(|e| {
        Failure::Usage(format!(
            "{shown} is not writable by this user ({}); nothing written",
            std::io::Error::from(e)
        ))
    })
}

fn registry_of(bytes: &[u8], path: &Path) -> Result<Registry, String> {
    let kinds = spear_providers::kinds().map_err(|e| e.to_string())?;
    Registry::parse(bytes, path, &kinds, &Audit::null()).map_err(|e| e.to_string())
}

fn read_error(e: spear_capabilities::Error) -> Failure {
    Failure::Usage(e.to_string())
}

/// The error of a write that failed, the file left as it was.
fn cannot_write(path: &Path) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| {
        Failure::Usage(format!(
            "cannot write {}: {e}; it is left as it was",
            path.display()
        ))
    }
}
