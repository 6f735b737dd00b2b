//! Where a change's path lives ([`Place`]: the workspace or the memory file's folder,
//! each through a jail), how a revert writes there, and what is at a path now.

use std::path::Path;
use std::sync::Arc;

use pp_gate::{Jail, JailError};
use pp_tools::memory::{self, Memory};
use pp_types::{ChangeRoot, FileMode};

use crate::blocking::blocking;
use crate::error::{Error, Result};

/// The folder a change's path is relative to ([`ChangeRoot`]), opened through a jail,
/// and how a revert writes there.
pub(crate) enum Place {
    /// The task's workspace: a revert writes with the jail's atomic write.
    Workspace(Jail),
    /// The memory file's directory (the data directory, beside the database; for the
    /// team's memory in the database, this process's mirror, brought up to it when
    /// opened), through `pp_tools::memory`'s jail: a revert writes only the memory, with
    /// its compare-and-swap (as `memory_write` and the operator do).
    Memory(Memory, Jail),
}

impl Place {
    /// The jail on `root`: the workspace `workspace`, or the memory's folder (none on a
    /// server database without a data directory: the memory's changes cannot be reached
    /// then). Opens a folder (and reads the team's memory): call it on the blocking pool.
    pub(crate) fn open(root: ChangeRoot, workspace: &str, memory: Option<&Memory>) -> Result<Self> {
        match root {
            ChangeRoot::Workspace => Jail::new(Path::new(workspace))
                .map(Self::Workspace)
                .map_err(|source| Error::Workspace {
                    path: workspace.to_owned(),
                    source,
                }),
            ChangeRoot::Memory => match memory {
                Some(memory) => Ok(Self::Memory(memory.clone(), memory.open()?)),
                None => Err(no_data_dir()),
            },
        }
    }

    /// [`Place::open`] on the blocking pool, shared with the blocking work after it.
    pub(crate) async fn open_off_thread(
        root: ChangeRoot,
        workspace: String,
        memory: Option<Memory>,
    ) -> Result<Arc<Self>> {
        blocking(move || Self::open(root, &workspace, memory.as_ref()).map(Arc::new)).await?
    }

    pub(crate) fn jail(&self) -> &Jail {
        match self {
            Self::Workspace(jail) | Self::Memory(_, jail) => jail,
        }
    }

    /// Whether a revert may write `path` here: anything in the workspace; only the
    /// memory file in the data directory (never the database or the snapshots).
    pub(crate) fn allows(&self, path: &str) -> bool {
        match self {
            Self::Workspace(_) => true,
            Self::Memory(..) => path == memory::MEMORY_FILE,
        }
    }

    /// Puts `content` at `path` with `mode` (`None`: deletes it), where the agent's
    /// version `agent` is now (the memory's write is a compare-and-swap on that
    /// version). `Err` says why nothing was written.
    pub(crate) fn restore(
        &self,
        path: &str,
        content: Option<&[u8]>,
        mode: Option<&FileMode>,
        agent: &Current,
    ) -> std::result::Result<(), NotWritten> {
        match (self, content) {
            (Self::Workspace(jail), Some(bytes)) => jail
                .restore_file(path, bytes, mode, true)
                .map(|_| ())
                .map_err(NotWritten::from),
            (Self::Workspace(jail), None) => match jail.remove_file(path) {
                Ok(()) | Err(JailError::NotFound { .. }) => Ok(()),
                Err(error) => Err(NotWritten::from(error)),
            },
            (Self::Memory(memory, jail), content) => {
                let expected = match agent {
                    Current::Absent => memory::ABSENT_VERSION.to_owned(),
                    Current::Content(bytes) => memory::version_of(bytes),
                    Current::TooLarge => {
                        return Err(NotWritten::Failed("the memory is too large".to_owned()));
                    }
                };
                match content {
                    Some(bytes) => {
                        let text = std::str::from_utf8(bytes).map_err(|_| {
                            NotWritten::Failed("the kept memory is not UTF-8".to_owned())
                        })?;
                        memory.replace_if(jail, &expected, text).map(|_| ())
                    }
                    None => memory.remove_if(jail, &expected),
                }
                .map_err(|error| match error {
                    memory::MemoryError::VersionMismatch { .. } => {
                        NotWritten::Changed(error.to_string())
                    }
                    memory::MemoryError::Jail(error) => NotWritten::from(error),
                    memory::MemoryError::TooLarge | memory::MemoryError::Shared(_) => {
                        NotWritten::Failed(error.to_string())
                    }
                })
            }
        }
    }
}

/// Why a revert's own write did not happen (nothing was written either way).
#[derive(Debug)]
pub(crate) enum NotWritten {
    /// The target is no longer what the change left (a folder or a link where the
    /// file was, a file where nothing was, the memory saved meanwhile): `changed_since`.
    Changed(String),
    /// Anything else (the disk, a kept content gone): `not_revertible`.
    Failed(String),
}

impl From<JailError> for NotWritten {
    fn from(error: JailError) -> Self {
        if target_changed(&error) {
            Self::Changed(error.to_string())
        } else {
            Self::Failed(error.to_string())
        }
    }
}

/// Whether `error`, met at a path a change recorded (links resolved, inside the
/// root), means the place is no longer what the change left: a folder, a link leading
/// outside, a loop, a missing or replaced folder, something new in the way. I/O
/// failures are not (the disk, permissions): those are errors.
pub(crate) fn target_changed(error: &JailError) -> bool {
    !matches!(error, JailError::Io { .. } | JailError::RootInvalid { .. })
}

/// Whether `path` (a change's path, recorded links resolved) still resolves to
/// itself: no link was put at it or in its folders since. `entry`: resolved as an
/// entry (its last name not followed).
pub(crate) fn resolves_to_itself(jail: &Jail, path: &str, entry: bool) -> bool {
    let probe = if entry {
        jail.probe_entry(path)
    } else {
        jail.probe(path)
    };
    probe.is_ok_and(|probe| probe.resolved == Path::new(path))
}

/// What is at a path now.
pub(crate) enum Current {
    Absent,
    Content(Vec<u8>),
    TooLarge,
}

pub(crate) fn current(
    jail: &Jail,
    path: &str,
    max_bytes: u64,
) -> std::result::Result<Current, JailError> {
    if !jail.exists(path)? {
        return Ok(Current::Absent);
    }
    let content = jail.read(path, max_bytes)?;
    Ok(if content.truncated {
        Current::TooLarge
    } else {
        Current::Content(content.bytes)
    })
}

/// Why nothing beside a server database can be kept or reverted.
pub(crate) fn no_data_dir() -> Error {
    Error::Internal(
        "no data directory: snapshots and the memory file live beside the SQLite database; \
         on a server database name it with TaskService::with_data_dir"
            .to_owned(),
    )
}
