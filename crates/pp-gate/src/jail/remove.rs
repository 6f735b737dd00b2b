//! Removing through the jail: a directory tree (the operator deleting a skill) or one
//! file (a revert of a file the agent created; pruning a snapshot).

use super::Jail;
use super::list::EntryKind;
use crate::error::{JailError, Result};

impl Jail {
    /// Removes the directory `path` and everything in it.
    ///
    /// `path` is resolved like every other path (links inside are followed, escapes are
    /// refused); the root itself is refused, and so is anything that is not a directory.
    /// Links found inside the tree are removed as links, never followed.
    pub fn remove_dir_all(&self, path: &str) -> Result<()> {
        let resolved = self.resolve(path)?;
        if resolved.is_root() {
            return Err(JailError::NotADirectory {
                path: path.to_owned(),
            });
        }
        match &resolved.metadata {
            None => Err(JailError::NotFound {
                path: path.to_owned(),
            }),
            Some(metadata) if !metadata.is_dir() => Err(JailError::NotADirectory {
                path: path.to_owned(),
            }),
            Some(_) => self
                .dir
                .remove_dir_all(&resolved.relative)
                .map_err(|error| JailError::from_io(path, error)),
        }
    }
}

impl Jail {
    /// Removes the regular file `path` designates (links inside are followed, as for a
    /// write: the file a link points to is removed).
    ///
    /// `path` is resolved like every other path; the root, directories and anything
    /// that is not a regular file are refused; a missing file is [`JailError::NotFound`].
    pub fn remove_file(&self, path: &str) -> Result<()> {
        let resolved = self.resolve(path)?;
        if resolved.is_root() {
            return Err(JailError::NotAFile {
                path: path.to_owned(),
            });
        }
        match &resolved.metadata {
            None => Err(JailError::NotFound {
                path: path.to_owned(),
            }),
            Some(metadata) if !metadata.is_file() => Err(JailError::NotAFile {
                path: path.to_owned(),
            }),
            Some(_) => self
                .dir
                .remove_file(&resolved.relative)
                .map_err(|error| JailError::from_io(path, error)),
        }
    }
}

impl Jail {
    /// Deletes the entry `path`: a regular file, a link (the link itself, never what it
    /// points to: the last component is not followed) or an empty folder; returns what
    /// it was.
    ///
    /// The entry's folder is resolved through the jail and opened as a handle; the
    /// name is removed with one `unlinkat` on that handle. A folder with content is
    /// [`JailError::NotEmpty`] (nothing is removed), a missing entry
    /// [`JailError::NotFound`], the root or a path ending in `..`
    /// [`JailError::NotAFile`].
    pub fn remove_entry(&self, path: &str) -> Result<EntryKind> {
        let entry = self.entry(path)?;
        let Some(kind) = entry.kind() else {
            return Err(JailError::NotFound {
                path: path.to_owned(),
            });
        };
        let folder = self.open_parent(path, &entry)?;
        let removed = if kind == EntryKind::Dir {
            folder.remove_dir(&entry.name)
        } else {
            folder.remove_file(&entry.name)
        };
        removed.map_err(|error| JailError::from_io(path, error))?;
        super::dir_ops::sync_dir(&folder);
        Ok(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[expect(clippy::disallowed_methods, reason = "test fixture set-up")]
    fn removes_a_tree_but_never_the_root_or_outside() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("root");
        let outside = base.path().join("outside");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("a/b/f.txt"), "x").unwrap();
        std::fs::write(outside.join("keep.txt"), "keep").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&outside, root.join("a/out")).unwrap();
        let jail = Jail::new(&root).unwrap();

        assert!(matches!(
            jail.remove_dir_all(""),
            Err(JailError::NotADirectory { .. })
        ));
        assert!(
            jail.remove_dir_all("../outside")
                .unwrap_err()
                .denial()
                .is_some()
        );
        assert!(matches!(
            jail.remove_dir_all("a/b/f.txt"),
            Err(JailError::NotADirectory { .. })
        ));
        assert!(matches!(
            jail.remove_dir_all("nope"),
            Err(JailError::NotFound { .. })
        ));
        jail.remove_dir_all("a").unwrap();
        assert!(!root.join("a").exists());
        assert!(
            outside.join("keep.txt").exists(),
            "links inside are not followed"
        );
    }

    #[test]
    #[expect(clippy::disallowed_methods, reason = "test fixture set-up")]
    fn removes_a_file_but_not_a_directory_or_outside() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("root");
        std::fs::create_dir_all(root.join("d")).unwrap();
        std::fs::write(root.join("d/f.txt"), "x").unwrap();
        std::fs::write(base.path().join("outside.txt"), "keep").unwrap();
        let jail = Jail::new(&root).unwrap();
        assert!(matches!(
            jail.remove_file("d"),
            Err(JailError::NotAFile { .. })
        ));
        assert!(
            jail.remove_file("../outside.txt")
                .unwrap_err()
                .denial()
                .is_some()
        );
        assert!(matches!(
            jail.remove_file("d/missing"),
            Err(JailError::NotFound { .. })
        ));
        jail.remove_file("d/f.txt").unwrap();
        assert!(!root.join("d/f.txt").exists());
        assert!(base.path().join("outside.txt").exists());
    }
}
