//! Directory entries as such: the operations that act on a name in its folder (move,
//! delete) resolve every component but the last, and never follow the last one.
//!
//! A link at the end of the path is the entry itself: deleting it removes the link,
//! moving it moves the link. The folder holding the entry is resolved like every other
//! path (links inside followed, escapes refused) and opened as a cap-std handle; the
//! final name is a single component, so a `*at` call on that handle cannot leave it.

use std::ffi::OsString;
use std::path::PathBuf;

use cap_std::fs::{Dir, Metadata};

use super::Jail;
use super::lexical::{self, Part};
use super::list::EntryKind;
use super::probe::Probe;
use super::resolve::Resolved;
use crate::error::{JailError, Result};

/// A name in a resolved folder.
#[derive(Debug)]
pub(crate) struct Entry {
    /// The folder, link-free and workspace-relative (empty for the root).
    pub(crate) parent: PathBuf,
    /// The last component as written.
    pub(crate) name: OsString,
    /// What the name itself is (`lstat`: a link is a link); `None` when nothing is there.
    pub(crate) metadata: Option<Metadata>,
}

impl Entry {
    /// The entry's workspace-relative path (`parent/name`).
    pub(crate) fn relative(&self) -> PathBuf {
        self.parent.join(&self.name)
    }

    /// What the entry is, if it exists.
    pub(crate) fn kind(&self) -> Option<EntryKind> {
        self.metadata
            .as_ref()
            .map(|metadata| EntryKind::of(metadata.file_type()))
    }
}

impl Jail {
    /// What the entry `path` names is, without following a link at its end: the
    /// resolved path of its folder joined with its last name, the entry's kind (a link
    /// is [`EntryKind::Symlink`]) and its size.
    ///
    /// A path that names the root, or ends in `..`, has no entry of its own:
    /// [`JailError::NotAFile`]. A missing folder is [`JailError::NotFound`].
    pub fn probe_entry(&self, path: &str) -> Result<Probe> {
        let entry = self.entry(path)?;
        Ok(Probe {
            kind: entry.kind(),
            size: entry.metadata.as_ref().map_or(0, Metadata::len),
            resolved: entry.relative(),
        })
    }

    /// [`Jail::fingerprint_with`] for an entry, not following a link at its end: a
    /// regular file gets its usual fingerprint, a folder `folder dev=… ino=…` (its
    /// identity: what is inside may change), a link or anything else `<kind>
    /// dev=… ino=… size=… mtime=… ctime=…` of the entry itself, and nothing there
    /// `absent`.
    pub fn fingerprint_entry(&self, path: &str, hash_max_bytes: u64) -> Result<String> {
        let entry = self.entry(path)?;
        match entry.kind() {
            None => Ok(super::fingerprint::ABSENT.to_owned()),
            Some(EntryKind::File) => {
                let resolved = Resolved {
                    relative: entry.relative(),
                    metadata: entry.metadata,
                };
                self.fingerprint_resolved(path, &resolved, hash_max_bytes)
            }
            Some(EntryKind::Dir) => Ok(entry
                .metadata
                .as_ref()
                .map(super::fingerprint::identity_part)
                .map(|identity| format!("folder {identity}"))
                .unwrap_or_default()),
            Some(kind) => Ok(entry
                .metadata
                .as_ref()
                .map(|metadata| {
                    let word = if kind == EntryKind::Symlink {
                        "link"
                    } else {
                        "other"
                    };
                    format!("{word} {}", super::fingerprint::metadata_part(metadata))
                })
                .unwrap_or_default()),
        }
    }

    /// Resolves `path` as an entry: every component but the last through
    /// [`resolve`](super::resolve::resolve), the last looked up without following it.
    pub(crate) fn entry(&self, path: &str) -> Result<Entry> {
        let parts = lexical::split(path)?;
        let not_an_entry = || JailError::NotAFile {
            path: path.to_owned(),
        };
        let Some((Part::Name(name), folder)) = parts.split_last() else {
            return Err(not_an_entry());
        };
        let folder: Vec<&str> = folder
            .iter()
            .map(|part| match part {
                Part::Parent => "..",
                Part::Name(name) => name,
            })
            .collect();
        // Errors name the path the caller gave, not the folder derived from it.
        let parent = self
            .resolve(&folder.join("/"))
            .map_err(|error| rename_path(error, path))?;
        match &parent.metadata {
            None => {
                return Err(JailError::NotFound {
                    path: path.to_owned(),
                });
            }
            Some(metadata) if !metadata.is_dir() => {
                return Err(JailError::NotADirectory {
                    path: path.to_owned(),
                });
            }
            Some(_) => {}
        }
        let relative = parent.relative.join(name);
        let metadata = match self.dir.symlink_metadata(&relative) {
            Ok(metadata) => Some(metadata),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(error) => return Err(JailError::from_io(path, error)),
        };
        Ok(Entry {
            parent: parent.relative,
            name: OsString::from(*name),
            metadata,
        })
    }

    /// A handle on the entry's folder (the root handle itself for the root), through
    /// which the `*at` call on its name is made.
    pub(crate) fn open_parent(&self, path: &str, entry: &Entry) -> Result<Dir> {
        let folder = if entry.parent.as_os_str().is_empty() {
            self.dir.try_clone()
        } else {
            self.dir.open_dir(&entry.parent)
        };
        folder.map_err(|error| JailError::from_io(path, error))
    }
}

/// `error` about the derived folder string, re-labelled with the caller's `path`.
fn rename_path(error: JailError, path: &str) -> JailError {
    let path = path.to_owned();
    match error {
        JailError::AbsolutePath { .. } => JailError::AbsolutePath { path },
        JailError::Escapes { .. } => JailError::Escapes { path },
        JailError::SymlinkEscape { .. } => JailError::SymlinkEscape { path },
        JailError::InvalidPath { reason, .. } => JailError::InvalidPath { path, reason },
        JailError::NotFound { .. } => JailError::NotFound { path },
        JailError::NotAFile { .. } | JailError::NotADirectory { .. } => {
            JailError::NotADirectory { path }
        }
        JailError::TooManyLinks { .. } => JailError::TooManyLinks { path },
        JailError::AlreadyExists { .. } => JailError::AlreadyExists { path },
        JailError::NotEmpty { .. } => JailError::NotEmpty { path },
        JailError::Aborted { .. } => JailError::Aborted { path },
        JailError::TooLarge { max_bytes, .. } => JailError::TooLarge { path, max_bytes },
        JailError::Io { source, .. } => JailError::Io { path, source },
        root @ JailError::RootInvalid { .. } => root,
    }
}
