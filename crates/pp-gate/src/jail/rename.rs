//! Moving and renaming inside the workspace: one `renameat` between two folder handles
//! of the jail, never a copy followed by a delete.

use super::Jail;
use super::dir_ops::{rename_at, sync_dir};
use super::list::EntryKind;
use crate::error::{JailError, Result};

/// What [`Jail::rename`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenameOutcome {
    /// Whether an existing file at the destination was replaced (`overwrite`).
    pub replaced: bool,
}

impl Jail {
    /// Moves the entry `from` to `to` (both workspace paths, as the model wrote them).
    ///
    /// Both are resolved as entries ([`Jail::probe_entry`]): their folders through the
    /// jail, their last names not followed, so a link is moved as a link and a link at
    /// `to` is a name like any other. `to`'s folder must exist. Nothing may exist at
    /// `to` unless `overwrite` is set, and even then only a regular file or a link is
    /// replaced, by a regular file or a link: a folder is never replaced and never
    /// replaces anything. The move is one atomic `renameat` between handles on the two
    /// folders; where nothing is to be replaced, Linux's `RENAME_NOREPLACE` makes the
    /// kernel refuse a destination that appeared since the check.
    ///
    /// Errors: `from` missing → [`JailError::NotFound`]; something at `to` that may not
    /// be replaced → [`JailError::AlreadyExists`]; a path naming the root or ending in
    /// `..` → [`JailError::NotAFile`]; rule violations as for every operation.
    pub fn rename(&self, from: &str, to: &str, overwrite: bool) -> Result<RenameOutcome> {
        let source = self.entry(from)?;
        let target = self.entry(to)?;
        let Some(source_kind) = source.kind() else {
            return Err(JailError::NotFound {
                path: from.to_owned(),
            });
        };
        let replaceable = |kind: EntryKind| kind != EntryKind::Dir;
        let replaced = match target.kind() {
            None => false,
            Some(kind) if overwrite && replaceable(kind) && replaceable(source_kind) => true,
            Some(_) => {
                return Err(JailError::AlreadyExists {
                    path: to.to_owned(),
                });
            }
        };
        if source.relative() == target.relative() {
            return Err(JailError::AlreadyExists {
                path: to.to_owned(),
            });
        }
        let from_dir = self.open_parent(from, &source)?;
        let to_dir = self.open_parent(to, &target)?;
        let io = |error: std::io::Error| match error.kind() {
            std::io::ErrorKind::AlreadyExists | std::io::ErrorKind::DirectoryNotEmpty => {
                JailError::AlreadyExists {
                    path: to.to_owned(),
                }
            }
            std::io::ErrorKind::NotFound => JailError::NotFound {
                path: from.to_owned(),
            },
            _ => JailError::from_io(from, error),
        };
        #[cfg(test)]
        super::hooks::fire(
            super::hooks::Point::BeforeRename,
            &to_dir,
            std::path::Path::new(&target.name),
        )
        .map_err(|error| JailError::from_io(to, error))?;
        rename_at(&from_dir, &source.name, &to_dir, &target.name, replaced).map_err(io)?;
        sync_dir(&to_dir);
        if source.parent != target.parent {
            sync_dir(&from_dir);
        }
        Ok(RenameOutcome { replaced })
    }
}

#[cfg(test)]
mod tests {
    use super::super::hooks::{self, Point};
    use super::*;

    /// A destination that appears after the check and before the `renameat` is never
    /// replaced by a move without `overwrite`: the kernel refuses it (Linux).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    #[expect(clippy::disallowed_methods, reason = "test fixture on a temp dir")]
    fn a_destination_that_appears_at_the_last_moment_is_not_replaced() {
        let temp = tempfile::tempdir().unwrap();
        std::fs::write(temp.path().join("a.txt"), "mine").unwrap();
        let jail = Jail::new(temp.path()).unwrap();
        hooks::set(|point, dir, name| {
            if point == Point::BeforeRename {
                dir.write(name, "someone else's")?;
            }
            Ok(())
        });
        let result = jail.rename("a.txt", "b.txt", false);
        hooks::clear();
        assert!(
            matches!(result, Err(JailError::AlreadyExists { ref path }) if path == "b.txt"),
            "{result:?}"
        );
        assert_eq!(
            std::fs::read_to_string(temp.path().join("b.txt")).unwrap(),
            "someone else's"
        );
        assert_eq!(
            std::fs::read_to_string(temp.path().join("a.txt")).unwrap(),
            "mine"
        );
    }
}
