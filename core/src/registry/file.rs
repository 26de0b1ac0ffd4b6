//! The capabilities file opened and read: only a regular file, never
//! blocking on what is not one, and never more than
//! [`MAX_REGISTRY_BYTES`].
//!
//! The registry's load and the CLI's editor both read through here; the
//! editor takes its lock between [`open`] and [`read`].

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use rustix::fs::OFlags;

use crate::error::Error;

/// The largest capabilities file read, in bytes (1 MiB: a thousand entries
/// take about a third of it).
pub const MAX_REGISTRY_BYTES: u64 = 1 << 20;

/// The file at `path`, following symbolic links, opened for reading;
/// `None` when there is none.
///
/// A FIFO is opened without waiting for a writer (and a terminal without
/// becoming the controlling one), then refused with the rest of what is
/// not a regular file.
///
/// # Errors
/// [`Error::RegistryRead`] when it cannot be opened or is not a regular
/// file.
pub fn open(path: &Path) -> Result<Option<File>, Error> {
    let cannot = |source| Error::RegistryRead {
        path: path.to_path_buf(),
        source,
    };
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(cannot(e)),
    };
    let kind = file.metadata().map_err(cannot)?.file_type();
    let what = if kind.is_file() {
        return Ok(Some(file));
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "of an unknown type"
    };
    Err(cannot(std::io::Error::other(format!(
        "not a regular file ({what}); a capabilities file must be a regular file"
    ))))
}

/// The whole of `file` (opened by [`open`] from `path`), if it has at most
/// [`MAX_REGISTRY_BYTES`].
///
/// # Errors
/// [`Error::RegistryRead`] when it cannot be read or is larger.
pub fn read(file: &mut File, path: &Path) -> Result<Vec<u8>, Error> {
    let cannot = |source| Error::RegistryRead {
        path: path.to_path_buf(),
        source,
    };
    let too_large = |size: u64| {
        cannot(std::io::Error::other(format!(
            "it has {size} bytes, more than the 1 MiB ({MAX_REGISTRY_BYTES} bytes) a capabilities file may have"
        )))
    };
    let size = file.metadata().map_err(cannot)?.len();
    if size > MAX_REGISTRY_BYTES {
        return Err(too_large(size));
    }
    // Bounded again as it is read: the file may grow under us.
    let mut bytes = Vec::with_capacity(size as usize);
    file.by_ref()
        .take(MAX_REGISTRY_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_REGISTRY_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}
