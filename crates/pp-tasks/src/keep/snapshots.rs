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

/// Where [`Snapshots::put_file`] makes its temp files (inside the store, so the rename
/// to the blob's name stays on one filesystem).
const TEMP_FOLDER: &str = "snapshots/tmp";

/// Makes temp names unique within this process.
static TEMP_SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

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

    /// Keeps the content of the opened regular file `file` (at most `max_bytes`
    /// bytes, else an error): a temp file in the store made by [`Jail::create_copy_of`]
    /// (a reflink where the store and the file share a reflink filesystem, a copy
    /// otherwise), hashed and renamed to its blob name. Returns the SHA-256 and whether
    /// it was a reflink.
    pub(crate) fn put_file(
        &self,
        file: &mut std::fs::File,
        max_bytes: u64,
    ) -> Result<(String, bool), JailError> {
        let serial = TEMP_SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temp = format!("{TEMP_FOLDER}/{}-{serial}.part", std::process::id());
        if !self.jail.exists(TEMP_FOLDER)? {
            self.jail.create_dir_all(TEMP_FOLDER)?;
        }
        let copied = self.jail.create_copy_of(&temp, file, max_bytes)?;
        let path = blob_path(&copied.sha256);
        let placed = (|| {
            if self.jail.exists(&path)? {
                return self.jail.remove_file(&temp);
            }
            if let Some((folder, _)) = path.rsplit_once('/')
                && !self.jail.exists(folder)?
            {
                self.jail.create_dir_all(folder)?;
            }
            self.jail.rename(&temp, &path, true).map(|_| ())
        })();
        if placed.is_err() {
            let _ = self.jail.remove_file(&temp);
        }
        placed.map(|()| (copied.sha256, copied.reflinked))
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
        // Temp files a crash left half-way through `put_file`.
        if self.jail.exists(TEMP_FOLDER)? {
            for temp in self.jail.list(TEMP_FOLDER, options)?.entries {
                let old = temp
                    .modified
                    .is_some_and(|modified| Timestamp::from(modified) <= cutoff);
                if temp.kind == EntryKind::File && old {
                    self.jail.remove_file(&temp.path)?;
                }
            }
        }
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

    #[test]
    fn a_file_is_kept_under_its_hash_and_stored_once() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let jail = Jail::new(workspace.path()).unwrap();
        jail.write_atomic("a.txt", b"kept").unwrap();
        let store = Snapshots::open(dir.path()).unwrap();
        let (sha, _) = store
            .put_file(&mut jail.open_file("a.txt").unwrap(), 100)
            .unwrap();
        assert_eq!(sha, sha256_hex(b"kept"));
        assert_eq!(store.get(&sha).unwrap(), b"kept");
        let (again, _) = store
            .put_file(&mut jail.open_file("a.txt").unwrap(), 100)
            .unwrap();
        assert_eq!(again, sha);
        assert!(
            store
                .put_file(&mut jail.open_file("a.txt").unwrap(), 2)
                .is_err()
        );
        let temps = Jail::new(dir.path())
            .unwrap()
            .list(
                TEMP_FOLDER,
                ListOptions {
                    recursive: false,
                    max_entries: 10,
                },
            )
            .unwrap()
            .entries;
        assert!(temps.is_empty(), "no temp file is left: {temps:?}");
    }
}
