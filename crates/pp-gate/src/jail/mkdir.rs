//! Creating folders through the jail.

use std::path::{Path, PathBuf};

use super::Jail;
use crate::error::{JailError, Result};

impl Jail {
    /// The folders [`Jail::create_dir_all`] would create for `path`, outermost first:
    /// every component of the resolved path from the first one that does not exist.
    ///
    /// Something already at `path` (a folder too) is [`JailError::AlreadyExists`]; a
    /// component that exists but is not a folder is [`JailError::NotADirectory`].
    pub fn missing_dirs(&self, path: &str) -> Result<Vec<PathBuf>> {
        let resolved = self.resolve(path)?;
        if resolved.is_root() || resolved.metadata.is_some() {
            return Err(JailError::AlreadyExists {
                path: path.to_owned(),
            });
        }
        let mut missing = Vec::new();
        let mut prefix = PathBuf::new();
        for component in resolved.relative.components() {
            prefix.push(component);
            if !missing.is_empty() {
                missing.push(prefix.clone());
                continue;
            }
            match self.dir.symlink_metadata(&prefix) {
                Ok(metadata) if metadata.is_dir() => {}
                Ok(_) => {
                    return Err(JailError::NotADirectory {
                        path: path.to_owned(),
                    });
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    missing.push(prefix.clone());
                }
                Err(error) => return Err(JailError::from_io(path, error)),
            }
        }
        Ok(missing)
    }

    /// Creates the folder `path` and its missing parents; returns the folders created
    /// (workspace-relative, outermost first).
    ///
    /// Links inside the workspace along the way are followed (as for a write); an
    /// existing folder or file at `path` is [`JailError::AlreadyExists`] — the call is
    /// meant to create something. Each folder is created with one `mkdirat` through
    /// the root handle, beneath it.
    pub fn create_dir_all(&self, path: &str) -> Result<Vec<PathBuf>> {
        let missing = self.missing_dirs(path)?;
        let mut created = Vec::with_capacity(missing.len());
        let last = missing.len().saturating_sub(1);
        for (index, folder) in missing.into_iter().enumerate() {
            match self.dir.create_dir(&folder) {
                Ok(()) => created.push(folder),
                // A parent someone else created meanwhile is fine; the folder asked for
                // is not: it was not created by this call.
                Err(error)
                    if error.kind() == std::io::ErrorKind::AlreadyExists
                        && index != last
                        && self.is_dir(&folder) => {}
                Err(error) => return Err(JailError::from_io(path, error)),
            }
        }
        if let Some(parent) = created.last().and_then(|folder| folder.parent()) {
            self.sync_folder(parent);
        }
        Ok(created)
    }

    /// Removes the folder `path` if it is empty (a revert of a created folder): a folder
    /// with content is [`JailError::NotEmpty`], anything but a folder (a link to one
    /// too: the last component is not followed) [`JailError::NotADirectory`].
    pub fn remove_empty_dir(&self, path: &str) -> Result<()> {
        let entry = self.entry(path)?;
        match entry.metadata {
            None => Err(JailError::NotFound {
                path: path.to_owned(),
            }),
            Some(metadata) if !metadata.is_dir() => Err(JailError::NotADirectory {
                path: path.to_owned(),
            }),
            Some(_) => {
                let folder = self.open_parent(path, &entry)?;
                folder
                    .remove_dir(&entry.name)
                    .map_err(|error| JailError::from_io(path, error))
            }
        }
    }

    fn is_dir(&self, relative: &Path) -> bool {
        self.dir
            .symlink_metadata(relative)
            .is_ok_and(|metadata| metadata.is_dir())
    }

    fn sync_folder(&self, relative: &Path) {
        if relative.as_os_str().is_empty() {
            super::dir_ops::sync_dir(&self.dir);
        } else if let Ok(folder) = self.dir.open_dir(relative) {
            super::dir_ops::sync_dir(&folder);
        }
    }
}
