//! Directory listings through the jail.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use cap_std::fs::{Dir, FileType, Metadata};

use super::Jail;
use crate::error::{JailError, Result};

/// How to list a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListOptions {
    /// Descend into subdirectories (never into symbolic links).
    pub recursive: bool,
    /// Stop after this many entries and mark the listing truncated.
    pub max_entries: usize,
}

impl Default for ListOptions {
    fn default() -> Self {
        Self {
            recursive: false,
            max_entries: 1000,
        }
    }
}

/// What a listing found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// The entries, sorted by path.
    pub entries: Vec<ListEntry>,
    /// Whether entries were left out because of [`ListOptions::max_entries`]. Which
    /// entries a truncated listing keeps is unspecified (each directory is read only as
    /// far as the cap requires).
    pub truncated: bool,
}

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListEntry {
    /// Workspace-relative, `/`-separated, link-free path (a directory reached through a
    /// link inside the workspace is shown under its real location). Names that are not
    /// UTF-8 are shown lossily.
    pub path: String,
    /// What the entry is, without following links.
    pub kind: EntryKind,
    /// Size in bytes (of the link itself for a symlink).
    pub size: u64,
    /// Last modification time, when the platform reports one.
    pub modified: Option<SystemTime>,
}

pp_types::wire_enum! {
    /// The kind of a listed entry; links are reported, never followed.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum EntryKind {
        /// A regular file.
        File => "file",
        /// A directory.
        Dir => "dir",
        /// A symbolic link (not followed, wherever it points).
        Symlink => "symlink",
        /// Anything else: socket, FIFO, device.
        Other => "other",
    }
}

impl EntryKind {
    pub(crate) fn of(file_type: FileType) -> Self {
        if file_type.is_symlink() {
            Self::Symlink
        } else if file_type.is_dir() {
            Self::Dir
        } else if file_type.is_file() {
            Self::File
        } else {
            Self::Other
        }
    }
}

/// A directory waiting to be read during a recursive listing.
struct Pending {
    /// Path relative to the listed directory.
    relative: PathBuf,
    /// Workspace-relative display prefix.
    display: String,
    /// Identity seen when the entry was listed, to refuse a link swapped in since.
    identity: Identity,
}

impl Jail {
    /// Lists a directory; `""` or `"."` is the root.
    ///
    /// A recursive listing never descends into symbolic links: they are shown as
    /// [`EntryKind::Symlink`] and left alone.
    pub fn list(&self, path: &str, options: ListOptions) -> Result<Listing> {
        let resolved = self.resolve(path)?;
        let opened;
        let base: &Dir = if resolved.is_root() {
            &self.dir
        } else {
            match &resolved.metadata {
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
            opened = self
                .dir
                .open_dir(&resolved.relative)
                .map_err(|error| JailError::from_io(path, error))?;
            &opened
        };

        let mut walk = Walk {
            path,
            entries: Vec::new(),
            max_entries: options.max_entries,
            truncated: false,
        };
        let prefix = display(&resolved.relative);
        let subdirs = walk.read(base, &prefix)?;
        if options.recursive {
            let mut pending: Vec<Pending> = subdirs
                .into_iter()
                .rev()
                .map(|(name, identity)| Pending {
                    display: join(&prefix, &name),
                    relative: PathBuf::from(name),
                    identity,
                })
                .collect();
            while let Some(next) = pending.pop() {
                if walk.truncated {
                    break;
                }
                let Some(dir) = open_same_dir(base, &next.relative, next.identity) else {
                    continue;
                };
                let subdirs = walk.read(&dir, &next.display)?;
                for (name, identity) in subdirs.into_iter().rev() {
                    pending.push(Pending {
                        display: join(&next.display, &name),
                        relative: next.relative.join(&name),
                        identity,
                    });
                }
            }
        }
        let Walk {
            mut entries,
            truncated,
            ..
        } = walk;
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Listing { entries, truncated })
    }
}

/// State of one listing.
struct Walk<'a> {
    path: &'a str,
    entries: Vec<ListEntry>,
    max_entries: usize,
    truncated: bool,
}

impl Walk<'_> {
    /// Adds the entries of `dir` (in name order) and returns its real subdirectories.
    fn read(&mut self, dir: &Dir, prefix: &str) -> Result<Vec<(String, Identity)>> {
        let io = |error| JailError::from_io(self.path, error);
        let mut children: Vec<(String, Metadata)> = Vec::new();
        for entry in dir.entries().map_err(io)? {
            let entry = entry.map_err(io)?;
            // `DirEntry::metadata` does not follow links (fstatat AT_SYMLINK_NOFOLLOW).
            let Ok(metadata) = entry.metadata() else {
                continue; // removed while we were listing
            };
            children.push((entry.file_name().to_string_lossy().into_owned(), metadata));
            if self.entries.len() + children.len() > self.max_entries {
                break;
            }
        }
        children.sort_by(|a, b| a.0.cmp(&b.0));
        let mut subdirs = Vec::new();
        for (name, metadata) in children {
            if self.entries.len() >= self.max_entries {
                self.truncated = true;
                break;
            }
            let kind = EntryKind::of(metadata.file_type());
            self.entries.push(ListEntry {
                path: join(prefix, &name),
                kind,
                size: metadata.len(),
                modified: metadata.modified().ok().map(|time| time.into_std()),
            });
            if kind == EntryKind::Dir {
                subdirs.push((name, Identity::of(&metadata)));
            }
        }
        Ok(subdirs)
    }
}

/// Opens `relative` under `base` as a directory, only if it is still the directory that
/// was listed (a link swapped in since is skipped; cap-std keeps it beneath the root
/// anyway).
pub(crate) fn open_same_dir(base: &Dir, relative: &Path, identity: Identity) -> Option<Dir> {
    let dir = base.open_dir(relative).ok()?;
    let metadata = dir.dir_metadata().ok()?;
    (Identity::of(&metadata) == identity).then_some(dir)
}

/// Device and inode of a directory (no-op elsewhere than Unix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    #[cfg(unix)]
    dev: u64,
    #[cfg(unix)]
    ino: u64,
}

impl Identity {
    pub(crate) fn of(metadata: &Metadata) -> Self {
        #[cfg(unix)]
        {
            use cap_std::fs::MetadataExt;
            Self {
                dev: metadata.dev(),
                ino: metadata.ino(),
            }
        }
        #[cfg(not(unix))]
        {
            let _ = metadata;
            Self {}
        }
    }
}

/// `/`-separated display form of a workspace-relative path.
fn display(relative: &Path) -> String {
    let parts: Vec<_> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}/{name}")
    }
}
