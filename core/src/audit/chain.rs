//! The chain that makes a trail verifiable: each record's `prev` is the
//! link of the line before it in the file, so that a record changed,
//! removed or reordered breaks every link after it.
//!
//! A link is the SHA-256 of the line as written, without its newline, or,
//! when the deployment gives a key ([`AuditKey`]), its HMAC-SHA-256 under
//! that key: someone who can rewrite the file but does not hold the key
//! cannot forge a consistent chain. The first line of a file links to the
//! genesis, 64 zeros. RustCrypto's `sha2` and `hmac` do the hashing.
//!
//! The key's bytes are kept only inside the HMAC's state: no `Debug`, error
//! or record of this module ever shows them.

use std::fmt;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

/// The fewest bytes a key file may hold: 256 bits.
pub const MIN_AUDIT_KEY_BYTES: usize = 32;

/// The most bytes a key file may hold.
pub const MAX_AUDIT_KEY_BYTES: usize = 4096;

/// The deployment's key for the trail's chain, read from a file that only
/// its owner can read (`chmod 600`): every byte of the file is the key, a
/// final newline included, and there must be at least
/// [`MIN_AUDIT_KEY_BYTES`] of them (`head -c 32 /dev/urandom > key`).
///
/// Its `Debug` shows nothing of it, and no error names its bytes.
#[derive(Clone)]
pub struct AuditKey {
    mac: Hmac<Sha256>,
}

impl fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AuditKey(..)")
    }
}

/// Why a key file cannot be used. It names the file, never its bytes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuditKeyError {
    /// The file cannot be read.
    #[error("cannot read the audit key file {}: {source}", path.display())]
    Unreadable {
        /// The key file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// Others than its owner may read or write it.
    #[error(
        "the audit key file {} may be read or written by others than its owner (mode {mode:o}): make it 600",
        path.display()
    )]
    Exposed {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// It holds too few or too many bytes.
    #[error(
        "the audit key file {} holds {bytes} bytes: a key is {MIN_AUDIT_KEY_BYTES} to {MAX_AUDIT_KEY_BYTES} bytes",
        path.display()
    )]
    Size {
        /// The key file.
        path: PathBuf,
        /// How many bytes it holds (past the bound: the bound and one).
        bytes: usize,
    },
}

impl AuditKey {
    /// The key in `path`: the file's bytes, as they are.
    ///
    /// # Errors
    /// When the file cannot be read, is not only its owner's, or holds
    /// fewer than [`MIN_AUDIT_KEY_BYTES`] or more than
    /// [`MAX_AUDIT_KEY_BYTES`] bytes.
    pub fn from_file(path: &Path) -> Result<Self, AuditKeyError> {
        let unreadable = |source| AuditKeyError::Unreadable {
            path: path.to_owned(),
            source,
        };
        let file = std::fs::File::open(path).map_err(unreadable)?;
        let mode = file.metadata().map_err(unreadable)?.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(AuditKeyError::Exposed {
                path: path.to_owned(),
                mode: mode & 0o7777,
            });
        }
        let mut bytes = Vec::with_capacity(MAX_AUDIT_KEY_BYTES + 1);
        file.take(MAX_AUDIT_KEY_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(unreadable)?;
        let key = Self::from_bytes(&bytes);
        // The bytes go as soon as the HMAC's state holds them.
        bytes.fill(0);
        key.ok_or(AuditKeyError::Size {
            path: path.to_owned(),
            bytes: bytes.len(),
        })
    }

    /// The key `bytes`, or `None` when there are fewer than
    /// [`MIN_AUDIT_KEY_BYTES`] or more than [`MAX_AUDIT_KEY_BYTES`].
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        if !(MIN_AUDIT_KEY_BYTES..=MAX_AUDIT_KEY_BYTES).contains(&bytes.len()) {
            return None;
        }
        // HMAC takes a key of any length: this cannot fail.
        let mac = <Hmac<Sha256> as KeyInit>::new_from_slice(bytes).ok()?;
        Some(Self { mac })
    }
}

/// One link of the chain: 32 bytes, written as 64 lower-case hex digits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Link(pub(crate) [u8; 32]);

impl Link {
    /// What the first line of a file links to.
    pub(crate) const GENESIS: Link = Link([0; 32]);

    /// The link as a record's `prev` writes it.
    pub(crate) fn hex(&self) -> String {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut text = String::with_capacity(64);
        for b in self.0 {
            text.push(char::from(DIGITS[usize::from(b >> 4)]));
            text.push(char::from(DIGITS[usize::from(b & 0xf)]));
        }
        text
    }
}

impl fmt::Debug for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

/// How lines are linked: the plain SHA-256, or the HMAC under a key.
#[derive(Debug, Clone)]
pub(crate) enum Linker {
    Plain,
    Keyed(AuditKey),
}

impl Linker {
    pub(crate) fn for_key(key: Option<&AuditKey>) -> Self {
        key.map_or(Linker::Plain, |key| Linker::Keyed(key.clone()))
    }

    /// A hasher for one line, fed in pieces.
    pub(crate) fn start(&self) -> LineHasher {
        match self {
            Linker::Plain => LineHasher::Plain(Sha256::new()),
            // A clone of the keyed state: the key's pads are not hashed again.
            Linker::Keyed(key) => LineHasher::Keyed(key.mac.clone()),
        }
    }

    /// The link of `line` (without its newline).
    pub(crate) fn link(&self, line: &[u8]) -> Link {
        let mut hasher = self.start();
        hasher.update(line);
        hasher.finish()
    }
}

/// One line's link being computed.
#[derive(Clone)]
pub(crate) enum LineHasher {
    Plain(Sha256),
    Keyed(Hmac<Sha256>),
}

impl LineHasher {
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        match self {
            LineHasher::Plain(h) => Digest::update(h, bytes),
            LineHasher::Keyed(h) => Mac::update(h, bytes),
        }
    }

    pub(crate) fn finish(self) -> Link {
        let bytes = match self {
            LineHasher::Plain(h) => h.finalize(),
            LineHasher::Keyed(h) => h.finalize().into_bytes(),
        };
        let mut out = [0; 32];
        out.copy_from_slice(&bytes);
        Link(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_link_is_the_sha256_of_the_line() {
        // `printf abc | sha256sum`
        assert_eq!(
            Linker::Plain.link(b"abc").hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(Link::GENESIS.hex(), "0".repeat(64));
    }

    #[test]
    fn the_keyed_link_is_the_hmac_under_the_key_and_pieces_hash_as_one() {
        // 32 bytes of 0x0b over RFC 4231's "Hi There", as Python's `hmac`
        // computes it.
        let key = AuditKey::from_bytes(&[0x0b; 32]).expect("32 bytes");
        let keyed = Linker::Keyed(key);
        let whole = keyed.link(b"Hi There");
        let mut pieces = keyed.start();
        pieces.update(b"Hi ");
        pieces.update(b"There");
        assert_eq!(pieces.finish(), whole);
        assert_ne!(whole, Linker::Plain.link(b"Hi There"));
        assert_eq!(
            whole.hex(),
            "198a607eb44bfbc69903a0f1cf2bbdc5ba0aa3f3d9ae3c1c7a3b1696a0b68cf7"
        );
    }

    #[test]
    fn a_key_shows_nothing_of_itself_and_must_be_long_enough() {
        assert!(AuditKey::from_bytes(&[7; MIN_AUDIT_KEY_BYTES - 1]).is_none());
        let key = AuditKey::from_bytes(b"0123456789abcdef0123456789abcdef").expect("32 bytes");
        let shown = format!("{key:?} {:?}", Linker::Keyed(key.clone()));
        assert!(!shown.contains("0123456789"), "{shown}");
    }
}
