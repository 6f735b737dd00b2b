//! Symlink resolution inside the workspace, through the root directory handle.
//!
//! The resolver walks the path one component at a time the way the kernel would
//! (`..` applies to the physical parent, links are expanded where they are met), but
//! every lookup is a cap-std call relative to the root handle and every link target is
//! interpreted by us, so a chain that leaves the workspace is caught and reported without
//! ever naming where it leads.
//!
//! Absolute link targets: cap-std itself never follows them. We translate one that lies
//! under the canonical root (compared component-wise, after cap-std-style parsing) into
//! the equivalent workspace-relative path; any other absolute target is a
//! [`JailError::SymlinkEscape`]. The operations then open the link-free result, so
//! cap-std never has to follow the absolute link.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::fs::{Dir, Metadata};

use super::lexical::{self, Part};
use crate::error::{JailError, Result};

/// Most symbolic links followed while resolving one path (Linux's limit, `MAXSYMLINKS`).
pub const MAX_SYMLINK_HOPS: usize = 40;

/// A path resolved inside the workspace.
#[derive(Debug)]
pub(crate) struct Resolved {
    /// Link-free, `..`-free path relative to the root; empty for the root itself. A tail
    /// that does not exist yet is kept as written.
    pub(crate) relative: PathBuf,
    /// Metadata of what `relative` names (never a symlink unless one was swapped in
    /// concurrently); `None` when nothing exists there.
    pub(crate) metadata: Option<Metadata>,
}

impl Resolved {
    /// Whether this is the workspace root.
    pub(crate) fn is_root(&self) -> bool {
        self.relative.as_os_str().is_empty()
    }
}

/// One step still to walk.
enum Step {
    Parent,
    Name(OsString),
}

/// Validates `path` lexically, then resolves it against `dir` (the root handle, whose
/// canonical location is `root`).
pub(crate) fn resolve(dir: &Dir, root: &Path, path: &str) -> Result<Resolved> {
    let parts = lexical::split(path)?;
    let escape = || JailError::SymlinkEscape {
        path: path.to_owned(),
    };
    let mut queue: VecDeque<Step> = parts
        .into_iter()
        .map(|part| match part {
            Part::Parent => Step::Parent,
            Part::Name(name) => Step::Name(name.into()),
        })
        .collect();
    let mut stack: Vec<OsString> = Vec::new();
    let mut hops = 0_usize;
    // Metadata of the current `stack` path, if known; `None` means "look it up at the end".
    let mut current: Option<Option<Metadata>> = None;

    while let Some(step) = queue.pop_front() {
        match step {
            Step::Parent => {
                // The user's string never climbs above the root (checked lexically), so
                // only a link can bring us here.
                stack.pop().ok_or_else(escape)?;
                current = None;
            }
            Step::Name(name) => {
                stack.push(name);
                let candidate: PathBuf = stack.iter().collect();
                match lookup(dir, &candidate, path)? {
                    Some(metadata) if metadata.file_type().is_symlink() => {
                        stack.pop();
                        hops += 1;
                        if hops > MAX_SYMLINK_HOPS {
                            return Err(JailError::TooManyLinks {
                                path: path.to_owned(),
                            });
                        }
                        let target = dir
                            .read_link_contents(&candidate)
                            .map_err(|error| JailError::from_io(path, error))?;
                        let steps = if target.has_root() {
                            // Relative to the root, not to the link's directory.
                            let inside = target.strip_prefix(root).map_err(|_| escape())?;
                            stack.clear();
                            target_steps(inside).ok_or_else(escape)?
                        } else {
                            target_steps(&target).ok_or_else(escape)?
                        };
                        for step in steps.into_iter().rev() {
                            queue.push_front(step);
                        }
                        current = None;
                    }
                    found => current = Some(found),
                }
            }
        }
    }

    let relative: PathBuf = stack.iter().collect();
    let metadata = match current {
        Some(known) => known,
        None if stack.is_empty() => Some(
            dir.dir_metadata()
                .map_err(|error| JailError::from_io(path, error))?,
        ),
        None => lookup(dir, &relative, path)?,
    };
    Ok(Resolved { relative, metadata })
}

/// `symlink_metadata` through the root handle; `Ok(None)` when nothing is there (or a
/// parent is not a directory, so nothing can be there).
fn lookup(dir: &Dir, candidate: &Path, path: &str) -> Result<Option<Metadata>> {
    match dir.symlink_metadata(candidate) {
        Ok(metadata) => Ok(Some(metadata)),
        Err(error)
            if matches!(
                error.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(error) => Err(JailError::from_io(path, error)),
    }
}

/// The steps of a relative link target; `None` if it still has a root or prefix.
fn target_steps(target: &Path) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    for component in target.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => return None,
            Component::CurDir => {}
            Component::ParentDir => steps.push(Step::Parent),
            Component::Normal(name) => steps.push(Step::Name(name.to_owned())),
        }
    }
    Some(steps)
}
