//! The workspace jail: every filesystem access that starts from a model-chosen string.
//!
//! Each operation validates the string lexically ([`lexical`]), resolves symbolic links
//! itself through the root directory handle ([`mod@resolve`]), and then performs the actual
//! open/create/rename/read_dir through cap-std relative to that handle. cap-std enforces
//! "beneath the root" at open time (`openat2(RESOLVE_BENEATH)` on Linux, a careful
//! manual walk elsewhere), so a link swapped in between our check and the open cannot
//! escape: the open fails and we report [`JailError::SymlinkEscape`].

mod lexical;
mod list;
mod resolve;
mod sweep;
mod write;

use std::io::Read;
use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use sha2::{Digest, Sha256};

use crate::error::{JailError, Result};

pub use list::{EntryKind, ListEntry, ListOptions, Listing};
pub use resolve::MAX_SYMLINK_HOPS;
pub use sweep::{MAX_SWEEP_ENTRIES, TEMP_PREFIX};
pub use write::WriteOutcome;

use resolve::{Resolved, resolve};

/// The workspace jail: a directory handle on the root plus its canonical location.
///
/// Cheap to share (`Send + Sync`); wrap it in an `Arc` and hand it to tools and to the
/// [`crate::Gate`]. Paths given to its methods are the strings the model wrote: relative,
/// `/`-separated, never absolute.
#[derive(Debug)]
pub struct Jail {
    /// Handle every operation goes through; cap-std keeps lookups beneath it.
    dir: Dir,
    /// Canonical root, used only to translate absolute link targets that point inside
    /// and to report where the workspace is; never joined with a model path.
    root: PathBuf,
}

/// The (possibly truncated) bytes of a file read through the jail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileContent {
    /// At most `max_bytes` bytes from the start of the file.
    pub bytes: Vec<u8>,
    /// The full size of the file when it was read.
    pub size: u64,
    /// Whether the file holds more than `bytes`.
    pub truncated: bool,
}

impl Jail {
    /// Opens the jail on `root`, an already `~`-expanded path that must be an existing
    /// directory; it is canonicalised here.
    pub fn new(root: &Path) -> Result<Self> {
        let invalid = |source| JailError::RootInvalid {
            root: root.to_path_buf(),
            source,
        };
        let canonical = canonicalize_root(root).map_err(invalid)?;
        let dir = Dir::open_ambient_dir(&canonical, ambient_authority()).map_err(invalid)?;
        Ok(Self {
            dir,
            root: canonical,
        })
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Validates and resolves a model-supplied path without requiring it to exist.
    ///
    /// Returns the link-free workspace-relative path it designates (empty for the root):
    /// links along the way are resolved, a tail that does not exist yet is kept as
    /// written. Every rule violation is an error; a missing file is not.
    pub fn check(&self, path: &str) -> Result<PathBuf> {
        self.resolve(path).map(|resolved| resolved.relative)
    }

    /// Whether something exists at `path` (a dangling link inside counts as absent).
    pub fn exists(&self, path: &str) -> Result<bool> {
        self.resolve(path)
            .map(|resolved| resolved.metadata.is_some())
    }

    /// Opens a regular file read-only.
    pub fn open_file(&self, path: &str) -> Result<std::fs::File> {
        let resolved = self.resolve(path)?;
        let not_a_file = || JailError::NotAFile {
            path: path.to_owned(),
        };
        match &resolved.metadata {
            _ if resolved.is_root() => return Err(not_a_file()),
            None => {
                return Err(JailError::NotFound {
                    path: path.to_owned(),
                });
            }
            // Checked before opening so that a FIFO is never opened (it would block).
            Some(metadata) if !metadata.is_file() => return Err(not_a_file()),
            Some(_) => {}
        }
        let file = self
            .dir
            .open(&resolved.relative)
            .map_err(|error| JailError::from_io(path, error))?;
        let metadata = file
            .metadata()
            .map_err(|error| JailError::from_io(path, error))?;
        if !metadata.is_file() {
            return Err(not_a_file());
        }
        Ok(file.into_std())
    }

    /// Reads at most `max_bytes` bytes of a regular file.
    pub fn read(&self, path: &str, max_bytes: u64) -> Result<FileContent> {
        let file = self.open_file(path)?;
        let io_error = |source| JailError::Io {
            path: path.to_owned(),
            source,
        };
        let size = file.metadata().map_err(io_error)?.len();
        // Pre-allocate no more than 1 MiB: `size` may be huge (sparse files) or stale.
        let capacity = usize::try_from(size.min(max_bytes).min(1 << 20)).unwrap_or(0);
        let mut bytes = Vec::with_capacity(capacity);
        // One byte more than allowed tells whether the file grew past the limit.
        file.take(max_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(io_error)?;
        let limit = usize::try_from(max_bytes).unwrap_or(usize::MAX);
        let truncated = bytes.len() > limit || size > max_bytes;
        bytes.truncate(limit);
        Ok(FileContent {
            size: size.max(bytes.len() as u64),
            bytes,
            truncated,
        })
    }

    /// `"sha256:<hex>"` of the file's bytes, or `"absent"` when nothing exists there.
    ///
    /// Used to detect that a file changed between an approval request and its execution.
    pub fn fingerprint(&self, path: &str) -> Result<String> {
        let mut file = match self.open_file(path) {
            Ok(file) => file,
            Err(JailError::NotFound { .. }) => return Ok("absent".to_owned()),
            Err(error) => return Err(error),
        };
        let mut hasher = Sha256::new();
        let mut buffer = vec![0_u8; 64 * 1024];
        loop {
            let read = file.read(&mut buffer).map_err(|source| JailError::Io {
                path: path.to_owned(),
                source,
            })?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
        }
        let mut out = String::with_capacity(7 + 64);
        out.push_str("sha256:");
        for byte in hasher.finalize() {
            out.push(hex_digit(byte >> 4));
            out.push(hex_digit(byte & 0x0f));
        }
        Ok(out)
    }

    /// Lexical checks plus link resolution.
    fn resolve(&self, path: &str) -> Result<Resolved> {
        resolve(&self.dir, &self.root, path)
    }
}

fn hex_digit(nibble: u8) -> char {
    char::from(b"0123456789abcdef"[usize::from(nibble & 0x0f)])
}

#[expect(
    clippy::disallowed_methods,
    reason = "the root is an operator path; canonicalising it once at construction is the \
              one ambient filesystem call the jail makes"
)]
fn canonicalize_root(root: &Path) -> std::io::Result<PathBuf> {
    std::fs::canonicalize(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn jail_is_send_and_sync() {
        assert_send_sync::<Jail>();
    }

    #[test]
    fn hex_digits() {
        assert_eq!(hex_digit(0), '0');
        assert_eq!(hex_digit(10), 'a');
        assert_eq!(hex_digit(15), 'f');
    }
}
