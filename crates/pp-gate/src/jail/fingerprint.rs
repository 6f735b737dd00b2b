//! Fingerprints: what an approval remembers of its target, to notice a change before
//! the approved call runs.
//!
//! Format (one line, fields separated by single spaces):
//!
//! ```text
//! absent
//! dev=<device> ino=<inode> size=<bytes> mtime=<secs>.<nanos> ctime=<secs>.<nanos> sha256=<hex>
//! dev=<device> ino=<inode> size=<bytes> mtime=<secs>.<nanos> ctime=<secs>.<nanos>
//! ```
//!
//! The metadata part is always there and costs one `stat`, whatever the size. The
//! SHA-256 of the content is added only when the file holds at most `hash_max_bytes`
//! bytes and can be read; a file too large or unreadable (permission denied) gets the
//! metadata part alone, which still changes when the file is replaced (inode), resized,
//! written (mtime) or has its mode or links changed (ctime).

use std::io::Read;

use cap_std::fs::Metadata;
use sha2::{Digest, Sha256};

use super::Jail;
use super::resolve::Resolved;
use crate::error::{JailError, Result};

/// Files up to this size get a content hash in [`Jail::fingerprint`] (64 MiB).
pub const DEFAULT_HASH_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// The fingerprint of a path where nothing exists.
pub(crate) const ABSENT: &str = "absent";

impl Jail {
    /// [`Jail::fingerprint_with`] with the default limit, [`DEFAULT_HASH_MAX_BYTES`].
    pub fn fingerprint(&self, path: &str) -> Result<String> {
        self.fingerprint_with(path, DEFAULT_HASH_MAX_BYTES)
    }

    /// A short description of the file at `path` that changes whenever the file does:
    /// `"absent"` when nothing exists there, otherwise its device, inode, size, mtime and
    /// ctime, plus a SHA-256 of the content when it holds at most `hash_max_bytes` bytes
    /// and is readable (see the module documentation for the format).
    ///
    /// Used to detect that a file changed between an approval request and its
    /// execution. Cheap for huge files (one `stat`, no read); an unreadable file gets a
    /// metadata-only fingerprint, not an error. Anything but a regular file is
    /// [`JailError::NotAFile`].
    pub fn fingerprint_with(&self, path: &str, hash_max_bytes: u64) -> Result<String> {
        let resolved = self.resolve(path)?;
        self.fingerprint_resolved(path, &resolved, hash_max_bytes)
    }

    /// [`Jail::fingerprint_with`] of an already resolved path.
    pub(crate) fn fingerprint_resolved(
        &self,
        path: &str,
        resolved: &Resolved,
        hash_max_bytes: u64,
    ) -> Result<String> {
        let Some(seen) = resolved.metadata.as_ref() else {
            return Ok(ABSENT.to_owned());
        };
        if resolved.is_root() || !seen.is_file() {
            return Err(JailError::NotAFile {
                path: path.to_owned(),
            });
        }
        if seen.len() > hash_max_bytes {
            // No need to open it at all.
            return Ok(metadata_part(seen));
        }
        let file = match self.open_resolved(path, resolved) {
            Ok(file) => file,
            // Removed since the lookup.
            Err(JailError::NotFound { .. }) => return Ok(ABSENT.to_owned()),
            Err(JailError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                return Ok(metadata_part(seen));
            }
            Err(error) => return Err(error),
        };
        let io_error = |source| JailError::Io {
            path: path.to_owned(),
            source,
        };
        // From the opened handle: the file we hash, even if the path changed meanwhile.
        let metadata = file.metadata().map_err(io_error)?;
        let mut fingerprint = metadata_part(&metadata);
        if metadata.len() > hash_max_bytes {
            return Ok(fingerprint);
        }
        let mut hasher = Sha256::new();
        let mut buffer = vec![0_u8; 64 * 1024];
        // Never more than the limit, even if the file grows while we read.
        let mut content = file.take(hash_max_bytes);
        loop {
            let read = content.read(&mut buffer).map_err(io_error)?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
        }
        fingerprint.push_str(" sha256=");
        for byte in hasher.finalize() {
            fingerprint.push(hex_digit(byte >> 4));
            fingerprint.push(hex_digit(byte & 0x0f));
        }
        Ok(fingerprint)
    }
}

/// `dev=… ino=…`: which inode this is, whatever happens to its content.
#[cfg(unix)]
pub(crate) fn identity_part(metadata: &Metadata) -> String {
    use cap_std::fs::MetadataExt;
    format!("dev={} ino={}", metadata.dev(), metadata.ino())
}

/// Without inodes, the creation time stands for the identity.
#[cfg(not(unix))]
pub(crate) fn identity_part(metadata: &Metadata) -> String {
    let created = metadata
        .created()
        .ok()
        .and_then(|time| time.into_std().duration_since(std::time::UNIX_EPOCH).ok())
        .unwrap_or_default();
    format!(
        "created={}.{:09}",
        created.as_secs(),
        created.subsec_nanos()
    )
}

/// `dev=… ino=… size=… mtime=<secs>.<nanos> ctime=<secs>.<nanos>`.
#[cfg(unix)]
pub(crate) fn metadata_part(metadata: &Metadata) -> String {
    use cap_std::fs::MetadataExt;
    format!(
        "dev={} ino={} size={} mtime={}.{:09} ctime={}.{:09}",
        metadata.dev(),
        metadata.ino(),
        metadata.len(),
        metadata.mtime(),
        metadata.mtime_nsec(),
        metadata.ctime(),
        metadata.ctime_nsec(),
    )
}

/// `size=… mtime=<secs>.<nanos>` where device, inode and ctime are not available.
#[cfg(not(unix))]
pub(crate) fn metadata_part(metadata: &Metadata) -> String {
    let modified = metadata
        .modified()
        .ok()
        .and_then(|time| time.into_std().duration_since(std::time::UNIX_EPOCH).ok())
        .unwrap_or_default();
    format!(
        "size={} mtime={}.{:09}",
        metadata.len(),
        modified.as_secs(),
        modified.subsec_nanos()
    )
}

fn hex_digit(nibble: u8) -> char {
    char::from(b"0123456789abcdef"[usize::from(nibble & 0x0f)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_digits() {
        assert_eq!(hex_digit(0), '0');
        assert_eq!(hex_digit(10), 'a');
        assert_eq!(hex_digit(15), 'f');
    }

    /// Finding 2 of issue 8: an unreadable file must still get a fingerprint. Tests may
    /// run as root, who can read a mode-000 file, so the open's `EACCES` is injected.
    #[test]
    fn permission_denied_gives_the_metadata_fingerprint() {
        use super::super::hooks::{self, Point};

        let temp = tempfile::tempdir().unwrap();
        #[expect(clippy::disallowed_methods, reason = "test fixture on a temp dir")]
        std::fs::write(temp.path().join("locked.txt"), "secret").unwrap();
        let jail = Jail::new(temp.path()).unwrap();
        let metadata_only = jail.fingerprint_with("locked.txt", 0).unwrap();
        let full = jail.fingerprint("locked.txt").unwrap();
        assert!(
            full.starts_with(&format!("{metadata_only} sha256=")),
            "{full}"
        );

        let denied = |errno: i32| {
            move |point: Point, _: &cap_std::fs::Dir, _: &std::path::Path| {
                if point == Point::BeforeOpen {
                    Err(std::io::Error::from_raw_os_error(errno))
                } else {
                    Ok(())
                }
            }
        };
        const EACCES: i32 = 13;
        const EIO: i32 = 5;
        hooks::set(denied(EACCES));
        let unreadable = jail.fingerprint("locked.txt");
        hooks::set(denied(EIO));
        let broken = jail.fingerprint("locked.txt");
        hooks::clear();
        assert_eq!(unreadable.unwrap(), metadata_only);
        // Other failures are still errors.
        assert!(matches!(broken, Err(JailError::Io { .. })), "{broken:?}");
    }
}
