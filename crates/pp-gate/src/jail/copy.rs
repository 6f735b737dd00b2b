//! A new file made from an already opened one: a reflink (`FICLONE`: the two share
//! their extents until one is written) where the filesystem offers it, a copy
//! otherwise. The snapshot store keeps a command's workspace files this way.

use std::io::{Read, Write};

use cap_std::fs::OpenOptions;
use sha2::{Digest, Sha256};

use super::Jail;
use crate::error::{JailError, Result};

/// What [`Jail::create_copy_of`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    /// Whether the new file shares its extents with the source (`FICLONE`).
    pub reflinked: bool,
    /// Bytes in the new file.
    pub size: u64,
    /// SHA-256 of the new file's content, lower-case hex.
    pub sha256: String,
}

impl Jail {
    /// Creates the file `path` (its folder must exist; nothing may be at `path`, mode
    /// 0600) with the content of `source`, an opened regular file read from its start:
    /// first a `FICLONE` of `source` into it, then, where that fails (another
    /// filesystem, one without reflinks), a copy of at most `max_bytes` bytes. The new
    /// file is hashed either way (the reflink by reading it back). A source longer
    /// than `max_bytes` is [`JailError::TooLarge`] and leaves nothing at `path`.
    pub fn create_copy_of(
        &self,
        path: &str,
        source: &mut std::fs::File,
        max_bytes: u64,
    ) -> Result<Copied> {
        let io = |error| JailError::from_io(path, error);
        let resolved = self.resolve(path)?;
        if resolved.is_root() {
            return Err(JailError::NotAFile {
                path: path.to_owned(),
            });
        }
        let mut options = OpenOptions::new();
        options.write(true).read(true).create_new(true);
        #[cfg(unix)]
        {
            use cap_std::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let target = self
            .dir
            .open_with(&resolved.relative, &options)
            .map_err(io)?
            .into_std();
        let made = fill(&target, source, max_bytes, path);
        if made.is_err() {
            let _ = self.dir.remove_file(&resolved.relative);
        }
        made
    }
}

/// Puts `source`'s content into the empty `target`: reflink, else copy (hashing as it
/// goes).
fn fill(
    mut target: &std::fs::File,
    source: &mut std::fs::File,
    max_bytes: u64,
    path: &str,
) -> Result<Copied> {
    let io = |error| JailError::from_io(path, error);
    let too_large = || JailError::TooLarge {
        path: path.to_owned(),
        max_bytes,
    };
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if rustix::fs::ioctl_ficlone(target, &*source).is_ok() {
        let size = target.metadata().map_err(io)?.len();
        if size > max_bytes {
            return Err(too_large());
        }
        let (sha256, read) = hash(&mut target.take(max_bytes.saturating_add(1)), path)?;
        if read > max_bytes {
            return Err(too_large());
        }
        return Ok(Copied {
            reflinked: true,
            size: read,
            sha256,
        });
    }
    let mut hasher = Sha256::new();
    let mut buffer = vec![0_u8; 256 * 1024];
    let mut size = 0_u64;
    let mut limited = source.take(max_bytes.saturating_add(1));
    loop {
        let read = limited.read(&mut buffer).map_err(io)?;
        if read == 0 {
            break;
        }
        size = size.saturating_add(read as u64);
        if size > max_bytes {
            return Err(too_large());
        }
        hasher.update(&buffer[..read]);
        target.write_all(&buffer[..read]).map_err(io)?;
    }
    Ok(Copied {
        reflinked: false,
        size,
        sha256: hex(&hasher.finalize()),
    })
}

/// SHA-256 and length of everything `reader` gives.
fn hash(reader: &mut dyn Read, path: &str) -> Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0_u8; 256 * 1024];
    let mut size = 0_u64;
    loop {
        let read = reader
            .read(&mut buffer)
            .map_err(|error| JailError::from_io(path, error))?;
        if read == 0 {
            break;
        }
        size = size.saturating_add(read as u64);
        hasher.update(&buffer[..read]);
    }
    Ok((hex(&hasher.finalize()), size))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_holds_the_source_and_its_hash_and_refuses_more_than_the_limit() {
        let temp = tempfile::tempdir().unwrap();
        let jail = Jail::new(temp.path()).unwrap();
        jail.write_atomic("src.txt", b"hello").unwrap();
        let mut source = jail.open_file("src.txt").unwrap();
        let copied = jail.create_copy_of("dst.tmp", &mut source, 100).unwrap();
        assert_eq!(copied.size, 5);
        assert_eq!(
            copied.sha256,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(jail.read("dst.tmp", 100).unwrap().bytes, b"hello");

        let mut source = jail.open_file("src.txt").unwrap();
        let refused = jail.create_copy_of("small.tmp", &mut source, 4);
        assert!(
            matches!(refused, Err(JailError::TooLarge { .. })),
            "{refused:?}"
        );
        assert!(!jail.exists("small.tmp").unwrap(), "nothing is left behind");
        let mut source = jail.open_file("src.txt").unwrap();
        assert!(
            jail.create_copy_of("dst.tmp", &mut source, 100).is_err(),
            "create_new"
        );
    }
}
