//! A write whole or absent: the new text in a temporary file beside the
//! registry (`.capabilities.json.XXXXXX.tmp`, readable by its owner only
//! while it is written), flushed to disk, given the old file's owner, group
//! and mode, renamed over it; then the folder flushed, so that the rename
//! survives a crash.
//!
//! A failure before the rename removes the temporary file and leaves the
//! old one as it was. Only a SIGKILL (or a crash) between the temporary
//! file's creation and the rename leaves it behind; the next edit, under
//! the lock, removes every one of ours ([`remove_stale`]).

use std::fs::Metadata;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

/// How many random characters `tempfile` puts in a name (its default).
const RANDOM_CHARS: usize = 6;

/// The folder of `target` and its file name.
fn parts(target: &Path) -> (PathBuf, String) {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    (dir, name)
}

/// A temporary file beside `target`, mode 0600 whatever the file's will
/// be (it holds the `env` values), `text` written and flushed to disk.
fn temporary(target: &Path, text: &[u8]) -> std::io::Result<NamedTempFile> {
    let (dir, name) = parts(target);
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .rand_bytes(RANDOM_CHARS)
        .permissions(std::fs::Permissions::from_mode(0o600))
        .tempfile_in(&dir)?;
    temp.write_all(text)?;
    Ok(temp)
}

/// Flushes the folder of `target`, so that a rename in it survives a crash.
fn sync_folder(target: &Path) -> std::io::Result<()> {
    std::fs::File::open(parts(target).0)?.sync_all()
}

/// Replaces `target`, the file `was` describes (the one locked), with
/// `text`, keeping its owner, group and mode.
pub(super) fn replace(target: &Path, was: &Metadata, text: &[u8]) -> std::io::Result<()> {
    let temp = temporary(target, text)?;
    let file = temp.as_file();
    let made = file.metadata()?;
    if (made.uid(), made.gid()) != (was.uid(), was.gid()) {
        std::os::unix::fs::fchown(file, Some(was.uid()), Some(was.gid())).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "cannot keep its owner and group (uid {}, gid {}): {e}",
                    was.uid(),
                    was.gid()
                ),
            )
        })?;
    }
    // After the owner: a change of owner clears the set-id bits.
    file.set_permissions(std::fs::Permissions::from_mode(was.mode() & 0o7777))?;
    file.sync_all()?;
    temp.persist(target).map_err(|e| e.error)?;
    sync_folder(target)
}

/// Creates `target` with `text`, readable and writable by its owner only
/// (its commands are not public material), unless a file is there by
/// then: `false` when another editor created it first.
pub(super) fn create(target: &Path, text: &[u8]) -> std::io::Result<bool> {
    let temp = temporary(target, text)?;
    temp.as_file().sync_all()?;
    match temp.persist_noclobber(target) {
        Ok(_) => sync_folder(target).map(|()| true),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e.error),
    }
}

/// Removes the temporary files of ours beside `target` that a killed edit
/// left (`.NAME.XXXXXX.tmp`, regular files); run under the lock, when no
/// other edit has one in flight. Best effort: one that cannot be removed
/// stays, and the edit goes on.
pub(super) fn remove_stale(target: &Path) {
    let (dir, name) = parts(target);
    let prefix = format!(".{name}.");
    let Ok(listing) = std::fs::read_dir(&dir) else {
        return;
    };
    for entry in listing.flatten() {
        let file_name = entry.file_name();
        let Some(random) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|n| n.strip_suffix(".tmp"))
        else {
            continue;
        };
        let ours =
            random.len() == RANDOM_CHARS && random.bytes().all(|b| b.is_ascii_alphanumeric());
        // Never a link or a folder of that name: only what we create.
        let plain = entry.file_type().is_ok_and(|t| t.is_file());
        if ours && plain {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_temporary_file_is_readable_by_its_owner_only_and_found_again_as_ours() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("capabilities.json");
        let temp = temporary(&target, b"{}").expect("made");
        let mode = temp.as_file().metadata().expect("meta").mode();
        assert_eq!(mode & 0o777, 0o600);
        let name = temp
            .path()
            .file_name()
            .and_then(|n| n.to_str())
            .expect("name")
            .to_owned();
        assert!(
            name.starts_with(".capabilities.json.") && name.ends_with(".tmp"),
            "{name}"
        );
        // Left behind (as a SIGKILL would), it is found again as ours.
        let (_, kept) = temp.keep().expect("kept");
        std::fs::write(dir.path().join(".capabilities.json.toolong1.tmp"), "").expect("w");
        remove_stale(&target);
        assert!(!kept.exists());
        assert!(dir.path().join(".capabilities.json.toolong1.tmp").exists());
    }
}
