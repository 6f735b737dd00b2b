//! The snapshot store: contents kept for reverts, content-addressed by SHA-256 under
//! `snapshots/sha256/<first two hex digits>/<hex>` in the data directory (the folder of
//! the SQLite database; a server database has none, so nothing is kept there), written
//! through a jail on that folder with the jail's atomic write.
//!
//! Synchronous: every call reads, hashes or writes files, so callers run it on the
//! blocking pool. The change log (`pp_store`) names blobs by hash; identical contents
//! are stored once.

use std::collections::HashSet;
use std::path::Path;

use pp_gate::{EntryKind, Jail, JailError, ListOptions};
use pp_types::Timestamp;
use sha2::{Digest, Sha256};

/// The folder inside the data directory.
const FOLDER: &str = "snapshots/sha256";

/// Most entries listed per folder while pruning.
const MAX_LISTED: usize = 1_000_000;

/// Blobs in the data directory.
pub(crate) struct Snapshots {
    /// A jail on the data directory: blob paths never leave it.
    jail: Jail,
}

impl Snapshots {
    /// The store in `data_dir` (which must exist).
    pub(crate) fn open(data_dir: &Path) -> Result<Self, JailError> {
        Ok(Self {
            jail: Jail::new(data_dir)?,
        })
    }

    /// Keeps `bytes`; returns their SHA-256 in hex. Writing an existing blob again is a
    /// no-op.
    pub(crate) fn put(&self, bytes: &[u8]) -> Result<String, JailError> {
        let sha256 = sha256_hex(bytes);
        let path = blob_path(&sha256);
        if !self.jail.exists(&path)? {
            self.jail.write_atomic(&path, bytes)?;
        }
        Ok(sha256)
    }

    /// The blob `sha256`, checked against its hash (a damaged blob is an error, never
    /// restored).
    pub(crate) fn get(&self, sha256: &str) -> Result<Vec<u8>, JailError> {
        let path = blob_path(sha256);
        let content = self.jail.read(&path, u64::MAX)?;
        if sha256_hex(&content.bytes) != sha256 {
            return Err(JailError::Io {
                path,
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the snapshot does not match its hash",
                ),
            });
        }
        Ok(content.bytes)
    }

    /// Removes blobs last modified before `cutoff` that no change names any more
    /// (`referenced`); returns how many were removed.
    pub(crate) fn prune(
        &self,
        referenced: &HashSet<String>,
        cutoff: Timestamp,
    ) -> Result<usize, JailError> {
        if !self.jail.exists(FOLDER)? {
            return Ok(0);
        }
        let options = ListOptions {
            recursive: false,
            max_entries: MAX_LISTED,
        };
        let mut removed = 0;
        for folder in self.jail.list(FOLDER, options)?.entries {
            if folder.kind != EntryKind::Dir {
                continue;
            }
            for blob in self.jail.list(&folder.path, options)?.entries {
                let name = blob.path.rsplit('/').next().unwrap_or_default();
                let old = blob
                    .modified
                    .is_some_and(|modified| Timestamp::from(modified) <= cutoff);
                if blob.kind == EntryKind::File && old && !referenced.contains(name) {
                    self.jail.remove_file(&blob.path)?;
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }
}

/// Where the blob `sha256` lives, relative to the data directory.
fn blob_path(sha256: &str) -> String {
    let prefix = sha256.get(..2).unwrap_or("00");
    format!("{FOLDER}/{prefix}/{sha256}")
}

/// SHA-256 of `bytes` in lower-case hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn blobs_are_content_addressed_and_pruned_when_old_and_unreferenced() {
        let dir = tempfile::tempdir().unwrap();
        let store = Snapshots::open(dir.path()).unwrap();
        let kept = store.put(b"kept").unwrap();
        assert_eq!(store.put(b"kept").unwrap(), kept, "stored once");
        let dropped = store.put(b"dropped").unwrap();
        assert_eq!(store.get(&kept).unwrap(), b"kept");
        assert!(dir.path().join(blob_path(&kept)).is_file());

        let referenced = HashSet::from([kept.clone()]);
        let long_ago = Timestamp::now().saturating_sub(Duration::from_secs(3600));
        assert_eq!(store.prune(&referenced, long_ago).unwrap(), 0, "too young");
        let later = Timestamp::now().saturating_add(Duration::from_secs(3600));
        assert_eq!(store.prune(&referenced, later).unwrap(), 1);
        assert!(store.get(&dropped).is_err());
        assert_eq!(store.get(&kept).unwrap(), b"kept");
    }
}
