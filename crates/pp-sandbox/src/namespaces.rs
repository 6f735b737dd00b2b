//! The command's own mount and PID namespaces (bubblewrap's design): entered by the
//! sandbox child before it drops its privileges; by root directly, by anyone else
//! through an unprivileged user namespace that maps only their own uid and gid.
//!
//! In the mount namespace every mount outside the workspace is made read-only, so
//! chmod, chown, utime and setxattr outside it fail (Landlock does not govern them),
//! and the workspace is remounted `nodev` and `nosuid`, so a device node already in it
//! opens nothing and a set-user-ID file in it gives nothing.

use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::statvfs::{FsFlags, statvfs};

use crate::error::{Result, SandboxError};

/// Unshares the mount and PID namespaces (the next child is PID 1 of the new one); a
/// process that is not root creates a user namespace first, mapping its own ids.
pub(crate) fn enter(root: bool) -> Result<()> {
    let isolation = |what: &str, error: &dyn std::fmt::Display| {
        SandboxError::Isolation(format!("{what}: {error}"))
    };
    if root {
        return unshare(CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID)
            .map_err(|error| isolation("cannot create mount and PID namespaces", &error));
    }
    let (uid, gid) = (rustix::process::getuid(), rustix::process::getgid());
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID)
        .map_err(|error| isolation("cannot create a user namespace", &error))?;
    write_proc("setgroups", "deny")
        .and_then(|()| write_proc("uid_map", &format!("{0} {0} 1", uid.as_raw())))
        .and_then(|()| write_proc("gid_map", &format!("{0} {0} 1", gid.as_raw())))
        .map_err(|error| isolation("cannot map the user namespace", &error))
}

#[expect(
    clippy::disallowed_methods,
    reason = "writes the sandbox child's own /proc/self id maps, never a model-supplied path"
)]
fn write_proc(name: &str, content: &str) -> std::io::Result<()> {
    std::fs::write(Path::new("/proc/self").join(name), content)
}

/// Makes the mount namespace private, every mount outside the `writable` folders (the
/// workspace when it may be written, an MCP server's `write` paths) read-only and those
/// folders (and the mounts beneath them) `nodev` and `nosuid`. A mount that cannot be
/// reached (`EACCES`, `ENOENT`) is left as it is: nothing in the sandbox reaches it
/// either; any other failure is an error.
pub(crate) fn protect_mounts(writable: &[PathBuf]) -> Result<()> {
    let failed = |what: String, error: Errno| {
        SandboxError::Isolation(format!("{what}: {}", std::io::Error::from(error)))
    };
    let none: Option<&str> = None;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(|error| failed("cannot make the mounts private".to_owned(), error))?;
    // Each writable folder becomes a mount of its own, so it can differ from what holds it.
    for folder in writable {
        mount(
            Some(folder.as_path()),
            folder.as_path(),
            none,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            none,
        )
        .map_err(|error| failed(format!("cannot bind {}", folder.display()), error))?;
    }
    for point in mount_points()? {
        let inside = writable.iter().any(|folder| point.starts_with(folder));
        let flags = match statvfs(&point) {
            Ok(stat) => kept_flags(stat.flags()),
            Err(Errno::EACCES | Errno::ENOENT) => continue,
            Err(error) => return Err(failed(format!("cannot stat {}", point.display()), error)),
        };
        let extra = if inside {
            MsFlags::MS_NODEV | MsFlags::MS_NOSUID
        } else {
            MsFlags::MS_RDONLY
        };
        let flags = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | flags | extra;
        match mount(none, &point, none, flags, none) {
            Ok(()) | Err(Errno::EACCES | Errno::ENOENT) => {}
            Err(error) => {
                return Err(failed(format!("cannot remount {}", point.display()), error));
            }
        }
    }
    Ok(())
}

/// Whether the namespaces can be created and the mounts changed here (run in a
/// throwaway process: it enters them).
pub(crate) fn probe() -> std::result::Result<(), String> {
    let root = rustix::process::geteuid().is_root();
    enter(root).map_err(|error| error.to_string())?;
    let none: Option<&str> = None;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none)
        .map_err(|error| format!("cannot make the mounts private: {error}"))?;
    let flags = statvfs("/")
        .map(|stat| kept_flags(stat.flags()))
        .map_err(|error| format!("cannot stat /: {error}"))?;
    let flags = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY | flags;
    mount(none, "/", none, flags, none)
        .map_err(|error| format!("cannot remount / read-only: {error}"))
}

/// The flags of a mount that a remount must keep (a user namespace may not clear them).
fn kept_flags(flags: FsFlags) -> MsFlags {
    let pairs = [
        (FsFlags::ST_RDONLY, MsFlags::MS_RDONLY),
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ];
    pairs
        .iter()
        .filter(|(stat, _)| flags.contains(*stat))
        .fold(MsFlags::empty(), |all, (_, mount)| all | *mount)
}

/// Every mount point of this mount namespace, in mount order, without repeats.
#[expect(
    clippy::disallowed_methods,
    reason = "reads the sandbox child's own /proc/self/mountinfo, never a model-supplied path"
)]
fn mount_points() -> Result<Vec<PathBuf>> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").map_err(|error| {
        SandboxError::Isolation(format!("cannot read /proc/self/mountinfo: {error}"))
    })?;
    let mut points: Vec<PathBuf> = Vec::new();
    for point in text.lines().filter_map(|line| line.split(' ').nth(4)) {
        let point = PathBuf::from(unescape(point));
        if !points.contains(&point) {
            points.push(point);
        }
    }
    Ok(points)
}

/// A mountinfo field with its octal escapes (`\040` for a space) decoded.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let octal = bytes.get(index + 1..index + 4).and_then(|digits| {
            let text = std::str::from_utf8(digits).ok()?;
            u8::from_str_radix(text, 8).ok()
        });
        match (bytes[index], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                index += 4;
            }
            (byte, _) => {
                out.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes_are_decoded() {
        assert_eq!(unescape("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("/odd\\"), "/odd\\");
    }

    #[test]
    fn the_flags_a_remount_must_keep_are_kept() {
        let kept = kept_flags(FsFlags::ST_NOSUID | FsFlags::ST_NODEV | FsFlags::ST_RELATIME);
        assert_eq!(
            kept,
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_RELATIME
        );
    }
}
