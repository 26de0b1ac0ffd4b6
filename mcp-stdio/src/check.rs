//! Whether an entry's server could start, without starting it: its program
//! resolved as a start resolves it, and checked to be a file that may be
//! executed, as `execvp` checks it. The kind's `check`, which
//! `Registry::check` (and `spear-capabilities check`) asks.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use spear_capabilities::KindSettings;

use crate::ServerConfig;

/// Why the server of an entry with `settings` cannot be started, if it
/// cannot, in the words a start uses (`cannot start `x`: No such file or
/// directory (os error 2)`): a relative path with a `/` is taken from
/// `base` (the capabilities file's folder), a bare name from the `PATH`
/// the server gets. Settings that do not validate are not this check's.
pub(crate) fn runnable(settings: &KindSettings, base: &Path) -> Result<(), String> {
    let Ok(config) = ServerConfig::from_settings(settings) else {
        return Ok(());
    };
    let Some(program) = config.command.first().map(Path::new) else {
        return Ok(());
    };
    if program.components().count() == 1 && !program.is_absolute() {
        // The server's PATH: ours, unless its `env` sets one.
        let path = config
            .env
            .get("PATH")
            .map(OsString::from)
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_default();
        return on_path(program, &path)
            .map_err(|e| format!("cannot start `{}`: {e}", program.display()));
    }
    let program = if program.is_relative() {
        base.join(program)
    } else {
        program.to_path_buf()
    };
    executable(&program).map_err(|e| format!("cannot start `{}`: {e}", program.display()))
}

/// Finds `program` in `path` as `execvp` does: the first executable file
/// wins; if none, a file found but not executable is "Permission denied",
/// else "No such file or directory".
fn on_path(program: &Path, path: &OsStr) -> std::io::Result<()> {
    let mut denied = None;
    for dir in std::env::split_paths(path) {
        match executable(&dir.join(program)) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => denied = Some(e),
            Err(_) => {}
        }
    }
    Err(denied.unwrap_or_else(|| std::io::Error::from_raw_os_error(2))) // ENOENT
}

/// Whether `path` is a file that may be executed; a folder may not, and
/// `execve` says so as it says it of a file without an execute bit.
fn executable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() || meta.permissions().mode() & 0o111 == 0 {
        return Err(std::io::Error::from_raw_os_error(13)); // EACCES
    }
    Ok(())
}
