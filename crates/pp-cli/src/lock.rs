//! `<data dir>/serve.lock`: how `restore` knows that no server uses the database.
//!
//! `serve` holds a *shared* advisory lock on the file for its whole life (two servers
//! on one data directory are allowed); `restore` takes the *exclusive* lock and refuses
//! to run without it. The operating system drops a lock when its holder exits, however
//! it exits (even `kill -9`), so a stale lock file never blocks anything. The lock is
//! advisory: it orders PocketPilot's own processes, nothing else.
#![expect(
    clippy::disallowed_methods,
    reason = "the lock file lives in the operator's data directory, never in a workspace"
)]

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::{Exit, exit};

/// Which lock to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockMode {
    /// Held by every running `serve`.
    Shared,
    /// Held by `restore` while it replaces the database.
    Exclusive,
}

/// A held lock on `serve.lock`; released when dropped (or when the process ends).
#[derive(Debug)]
pub(crate) struct DataLock {
    /// The open lock file: the lock belongs to this open file, so it lives as long as
    /// the handle.
    _file: File,
}

/// The lock file of the data directory `home`.
pub(crate) fn lock_file(home: &Path) -> PathBuf {
    home.join("serve.lock")
}

/// Takes the lock without waiting: `Ok(None)` if another process holds a conflicting
/// one.
pub(crate) fn try_lock(home: &Path, mode: LockMode) -> anyhow::Result<Option<DataLock>> {
    let path = lock_file(home);
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options
        .open(&path)
        .with_context(|| format!("cannot open the lock file {}", path.display()))?;
    let locked = match mode {
        LockMode::Shared => file.try_lock_shared(),
        LockMode::Exclusive => file.try_lock(),
    };
    match locked {
        Ok(()) => Ok(Some(DataLock { _file: file })),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(error)) => {
            Err(error).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
}

/// The shared lock `serve` holds for its lifetime; refuses (exit code 5) while a
/// restore is replacing the database.
pub(crate) fn hold_for_serve(home: &Path) -> anyhow::Result<DataLock> {
    try_lock(home, LockMode::Shared)?.ok_or_else(|| {
        conflict(format!(
            "a restore is replacing the database in {}; start the server when it has finished",
            home.display()
        ))
    })
}

/// The exclusive lock `restore` needs; refuses (exit code 5) while a server runs.
pub(crate) fn hold_for_restore(home: &Path) -> anyhow::Result<DataLock> {
    try_lock(home, LockMode::Exclusive)?.ok_or_else(|| {
        conflict(format!(
            "a server is running on {} (or another restore is): stop `pocketpilot serve` \
             first, then restore",
            home.display()
        ))
    })
}

/// A refusal with exit code 5 (someone else holds the data directory).
fn conflict(message: String) -> anyhow::Error {
    Exit {
        code: exit::CONFLICT,
        message,
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_share_and_restore_excludes() {
        let home = tempfile::tempdir().unwrap();
        let first = hold_for_serve(home.path()).unwrap();
        let second = hold_for_serve(home.path()).unwrap();
        let refused = hold_for_restore(home.path()).unwrap_err();
        assert_eq!(
            refused.downcast_ref::<Exit>().map(|exit| exit.code),
            Some(exit::CONFLICT)
        );
        assert!(
            refused.to_string().contains("a server is running"),
            "{refused}"
        );
        drop(first);
        assert!(
            try_lock(home.path(), LockMode::Exclusive)
                .unwrap()
                .is_none()
        );
        drop(second);
        let restore = hold_for_restore(home.path()).unwrap();
        let refused = hold_for_serve(home.path()).unwrap_err();
        assert_eq!(
            refused.downcast_ref::<Exit>().map(|exit| exit.code),
            Some(exit::CONFLICT)
        );
        assert!(
            try_lock(home.path(), LockMode::Exclusive)
                .unwrap()
                .is_none()
        );
        drop(restore);
        assert!(try_lock(home.path(), LockMode::Shared).unwrap().is_some());
    }

    #[cfg(unix)]
    #[test]
    fn the_lock_file_is_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let home = tempfile::tempdir().unwrap();
        let _lock = hold_for_serve(home.path()).unwrap();
        let mode = std::fs::metadata(lock_file(home.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
