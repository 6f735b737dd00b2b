//! What exists at a path, from its metadata alone.

use std::path::PathBuf;

use super::Jail;
use super::list::EntryKind;
use crate::error::Result;

/// What [`Jail::probe`] found at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The link-free workspace-relative path the model's string designates (as
    /// [`Jail::check`] returns it; empty for the root). Shown next to what the model
    /// wrote, so `a/../b` or a link inside cannot hide which file is meant.
    pub resolved: PathBuf,
    /// What is there; `None` when nothing is (a dangling link inside counts as nothing).
    pub kind: Option<EntryKind>,
    /// Its size in bytes as `stat` reports it (for a file, its length); 0 when nothing
    /// is there.
    pub size: u64,
}

impl Probe {
    /// Whether something exists at the path.
    pub fn exists(&self) -> bool {
        self.kind.is_some()
    }

    /// Whether a regular file exists at the path.
    pub fn is_file(&self) -> bool {
        self.kind == Some(EntryKind::File)
    }
}

impl Jail {
    /// Whether something exists at `path`, what it is and how large, from the metadata
    /// of the resolved path: nothing is opened or read, so an unreadable file is still
    /// reported as an existing file. Rule violations are errors, as for every operation.
    pub fn probe(&self, path: &str) -> Result<Probe> {
        let resolved = self.resolve(path)?;
        let (kind, size) = match &resolved.metadata {
            Some(metadata) => (Some(EntryKind::of(metadata.file_type())), metadata.len()),
            None => (None, 0),
        };
        Ok(Probe {
            resolved: resolved.relative,
            kind,
            size,
        })
    }
}
