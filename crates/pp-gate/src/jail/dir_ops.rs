//! Two low-level steps on folder handles that several operations share: the rename
//! that refuses to replace ([`rename_at`]: moves, and the last step of an atomic write)
//! and the directory sync that makes a rename, a new folder or a removal durable
//! ([`sync_dir`]).

use cap_std::fs::Dir;

/// Makes a change to `dir`'s entries durable; failures are ignored (the data is
/// already fsynced, and some platforms cannot open or sync a directory).
pub(super) fn sync_dir(dir: &Dir) {
    if let Ok(handle) = dir.open(".") {
        let _ = handle.sync_all();
    }
}

/// `renameat2` with `RENAME_NOREPLACE` unless `replace`. A filesystem or kernel
/// without the flag (`EINVAL`, `ENOSYS`: some network and FUSE filesystems) gets the
/// portable fallback: a fresh existence check right before a plain `renameat`.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) fn rename_at(
    from_dir: &Dir,
    from: &std::ffi::OsStr,
    to_dir: &Dir,
    to: &std::ffi::OsStr,
    replace: bool,
) -> std::io::Result<()> {
    use rustix::fs::{RenameFlags, renameat_with};
    use rustix::io::Errno;
    if replace {
        return renameat_with(from_dir, from, to_dir, to, RenameFlags::empty())
            .map_err(std::io::Error::from);
    }
    match renameat_with(from_dir, from, to_dir, to, RenameFlags::NOREPLACE) {
        Err(Errno::INVAL | Errno::NOSYS) => rename_checked(from_dir, from, to_dir, to),
        other => other.map_err(std::io::Error::from),
    }
}

/// Elsewhere: cap-std's `renameat` after a fresh existence check (a destination that
/// appears between the two is replaced; Linux closes that window).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(super) fn rename_at(
    from_dir: &Dir,
    from: &std::ffi::OsStr,
    to_dir: &Dir,
    to: &std::ffi::OsStr,
    replace: bool,
) -> std::io::Result<()> {
    if replace {
        return from_dir.rename(from, to_dir, to);
    }
    rename_checked(from_dir, from, to_dir, to)
}

/// A plain `renameat` after a fresh check that nothing is at `to` (a destination that
/// appears between the two would be replaced: the narrow window `RENAME_NOREPLACE`
/// closes where it is available).
fn rename_checked(
    from_dir: &Dir,
    from: &std::ffi::OsStr,
    to_dir: &Dir,
    to: &std::ffi::OsStr,
) -> std::io::Result<()> {
    if to_dir.symlink_metadata(to).is_ok() {
        return Err(std::io::ErrorKind::AlreadyExists.into());
    }
    from_dir.rename(from, to_dir, to)
}
