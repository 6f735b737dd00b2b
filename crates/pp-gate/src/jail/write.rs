//! Atomic writes through the jail.

use std::io::{Read, Write};
use std::process;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use cap_std::fs::{Dir, File, OpenOptions, Permissions};

use pp_types::FileMode;

use super::Jail;
use super::dir_ops::{rename_at, sync_dir};
use super::sweep::TEMP_PREFIX;
use crate::error::{JailError, Result};

/// What [`Jail::write_atomic`] (and its variants) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOutcome {
    /// `true` when the file did not exist before (it was created), `false` when an
    /// existing file was replaced.
    pub created: bool,
}

/// Makes temp names unique within this process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Size of the chunks a streamed write copies (and checks `abort` between).
const CHUNK: usize = 64 * 1024;

/// How [`Jail::replace`] treats what is around the target.
#[derive(Clone, Copy)]
struct How<'a> {
    /// Create missing parent folders (a revert never does: a folder that went away
    /// means the place is no longer what it was).
    create_parents: bool,
    /// Replace an existing file (otherwise something at the path is
    /// [`JailError::AlreadyExists`], checked again by the kernel at the rename on Linux).
    replace: bool,
    /// The mode (and owner) to give the file instead of the replaced file's or a new
    /// file's.
    mode: Option<&'a FileMode>,
}

/// What every ordinary write does: parents created, an existing file replaced, its
/// mode kept.
const WRITE: How<'static> = How {
    create_parents: true,
    replace: true,
    mode: None,
};

/// Where the new content comes from.
enum Source<'a> {
    Bytes(&'a [u8]),
    Reader {
        reader: &'a mut dyn Read,
        max_bytes: u64,
    },
}

impl Jail {
    /// Writes `bytes` to `path` atomically.
    ///
    /// The bytes go to a hidden temp file in the target's directory (named
    /// `.pocketpilot-tmp-<pid>-…`), which is fsynced and renamed over the target, so a
    /// crash never leaves a half-written file. The temp file is created with mode 0600
    /// and gets its final mode only once written (the existing file's permissions, or
    /// the normal mode of a new file: 0666 minus the umask), so new content is never
    /// readable by more people than the file it replaces. Missing parent directories
    /// are created (through the jail). A final component that is a link pointing inside
    /// writes the file it points to (chain resolved); one that points outside is
    /// refused. Because the rename replaces the directory entry, a hard link inside the
    /// workspace to an outside file can never be used to modify the outside file: the
    /// workspace entry becomes a new file and the outside one is left as it was.
    pub fn write_atomic(&self, path: &str, bytes: &[u8]) -> Result<WriteOutcome> {
        self.write_atomic_unless(path, bytes, &|| false)
    }

    /// [`Jail::write_atomic`] that can be called off at the last moment: `abort` is
    /// asked once, after the content is written and fsynced and right before the rename.
    /// If it returns `true`, the temp file is removed, the target is left untouched and
    /// the result is [`JailError::Aborted`].
    pub fn write_atomic_unless(
        &self,
        path: &str,
        bytes: &[u8],
        abort: &dyn Fn() -> bool,
    ) -> Result<WriteOutcome> {
        self.replace(path, Source::Bytes(bytes), abort, WRITE)
    }

    /// The mode and owner of the file at `path` (links followed), from its metadata;
    /// `None` when nothing is there or it is not a regular file.
    pub fn file_mode(&self, path: &str) -> Result<Option<FileMode>> {
        let resolved = self.resolve(path)?;
        Ok(resolved
            .metadata
            .as_ref()
            .filter(|metadata| metadata.is_file())
            .map(mode_of))
    }

    /// Puts back a file a revert restores: [`Jail::write_atomic`], except that the
    /// target's folder must already exist (nothing is created: [`JailError::NotFound`]
    /// or [`JailError::NotADirectory`]), that without `replace` nothing may be at the
    /// path ([`JailError::AlreadyExists`]; on Linux the rename itself refuses a file
    /// that appeared since), and that the file gets `mode`'s permission bits and, where
    /// the process may (root, or its own uid and one of its groups), its owner. When the
    /// owner cannot be given back, setuid and setgid are dropped (as `cp -p` does).
    /// `mode: None` (an old change that recorded none) keeps the usual mode.
    pub fn restore_file(
        &self,
        path: &str,
        bytes: &[u8],
        mode: Option<&FileMode>,
        replace: bool,
    ) -> Result<WriteOutcome> {
        let how = How {
            create_parents: false,
            replace,
            mode,
        };
        self.replace(path, Source::Bytes(bytes), &|| false, how)
    }

    /// [`Jail::write_atomic_unless`] streaming the content from `reader` (an upload)
    /// instead of taking it from memory.
    ///
    /// More than `max_bytes` bytes is [`JailError::TooLarge`]; a read error from
    /// `reader` is [`JailError::Io`]; `abort` is asked between chunks and right before
    /// the rename. In every one of these cases the temp file is removed and the target
    /// is left untouched.
    pub fn write_atomic_from(
        &self,
        path: &str,
        reader: &mut dyn Read,
        max_bytes: u64,
        abort: &dyn Fn() -> bool,
    ) -> Result<WriteOutcome> {
        self.replace(path, Source::Reader { reader, max_bytes }, abort, WRITE)
    }

    /// The one write path: resolve, temp file, content, mode, fsync, `abort`, rename.
    fn replace(
        &self,
        path: &str,
        source: Source<'_>,
        abort: &dyn Fn() -> bool,
        how: How<'_>,
    ) -> Result<WriteOutcome> {
        let resolved = self.resolve(path)?;
        let not_a_file = || JailError::NotAFile {
            path: path.to_owned(),
        };
        // `dir/` names a directory: never create a file called `dir` for it.
        if resolved.is_root() || path.ends_with('/') || path.ends_with("/.") {
            return Err(not_a_file());
        }
        if let Some(metadata) = &resolved.metadata
            && !metadata.is_file()
        {
            return Err(not_a_file());
        }
        if resolved.metadata.is_some() && !how.replace {
            return Err(JailError::AlreadyExists {
                path: path.to_owned(),
            });
        }
        let io = |error| JailError::from_io(path, error);
        let Some(name) = resolved.relative.file_name() else {
            return Err(not_a_file());
        };
        let opened;
        let parent: &Dir = match resolved.relative.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => {
                if !how.create_parents {
                    // The folder as resolved must still be one: a revert puts a file
                    // back only where it was.
                    match self.dir.metadata(parent) {
                        Ok(metadata) if metadata.is_dir() => {}
                        Ok(_) => {
                            return Err(JailError::NotADirectory {
                                path: path.to_owned(),
                            });
                        }
                        Err(error) => return Err(io(error)),
                    }
                }
                self.dir.create_dir_all(parent).map_err(|error| {
                    if error.kind() == std::io::ErrorKind::AlreadyExists {
                        JailError::NotADirectory {
                            path: path.to_owned(),
                        }
                    } else {
                        io(error)
                    }
                })?;
                opened = self.dir.open_dir(parent).map_err(io)?;
                &opened
            }
            _ => &self.dir,
        };

        // Look again through the parent handle we will rename in.
        let (created, permissions) = match parent.symlink_metadata(name) {
            Ok(_) if !how.replace => {
                return Err(JailError::AlreadyExists {
                    path: path.to_owned(),
                });
            }
            Ok(metadata) if metadata.is_file() => (false, Some(metadata.permissions())),
            Ok(metadata) if metadata.file_type().is_symlink() => (false, None),
            Ok(_) => return Err(not_a_file()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => (true, None),
            Err(error) => return Err(io(error)),
        };

        let temp = temp_name();
        #[cfg(feature = "failpoints")]
        if let Source::Bytes(bytes) = &source {
            failpoint_stall(parent, name, &temp, bytes);
        }
        let result = write_temp(path, parent, &temp, source, permissions, abort, how.mode)
            .and_then(|()| {
                if abort() {
                    Err(JailError::Aborted {
                        path: path.to_owned(),
                    })
                } else {
                    Ok(())
                }
            })
            .and_then(|()| {
                if how.replace {
                    parent.rename(&temp, parent, name).map_err(io)
                } else {
                    rename_at(parent, std::ffi::OsStr::new(&temp), parent, name, false).map_err(
                        |error| match error.kind() {
                            std::io::ErrorKind::AlreadyExists => JailError::AlreadyExists {
                                path: path.to_owned(),
                            },
                            _ => io(error),
                        },
                    )
                }
            });
        if let Err(error) = result {
            // Best effort: the sweep removes anything left behind.
            let _ = parent.remove_file(&temp);
            return Err(error);
        }
        sync_dir(parent);
        Ok(WriteOutcome { created })
    }
}

/// Creates `temp` exclusively and privately (0600), writes the content, gives it its
/// final mode (`mode` with its owner when given, else `permissions`, or a new file's
/// normal mode), fsyncs.
fn write_temp(
    path: &str,
    parent: &Dir,
    temp: &str,
    source: Source<'_>,
    permissions: Option<Permissions>,
    abort: &dyn Fn() -> bool,
    mode: Option<&FileMode>,
) -> Result<()> {
    let io = |error| JailError::from_io(path, error);
    let mut file = create_private(parent, temp).map_err(io)?;
    match source {
        Source::Bytes(bytes) => file.write_all(bytes).map_err(io)?,
        Source::Reader { reader, max_bytes } => {
            copy_bounded(path, reader, &mut file, max_bytes, abort)?;
        }
    }
    #[cfg(test)]
    super::hooks::fire(super::hooks::Point::TempWritten, parent, temp.as_ref()).map_err(io)?;
    let permissions = match mode {
        Some(mode) => restored_permissions(&file, mode),
        None => permissions.or_else(new_file_permissions),
    };
    if let Some(permissions) = permissions {
        file.set_permissions(permissions).map_err(io)?;
    }
    file.sync_all().map_err(io)
}

/// The mode and owner `metadata` records.
#[cfg(unix)]
fn mode_of(metadata: &cap_std::fs::Metadata) -> FileMode {
    use cap_std::fs::MetadataExt;
    FileMode {
        mode: metadata.mode() & 0o7777,
        uid: Some(metadata.uid()),
        gid: Some(metadata.gid()),
    }
}

/// Without Unix modes: read-only or not.
#[cfg(not(unix))]
fn mode_of(metadata: &cap_std::fs::Metadata) -> FileMode {
    FileMode {
        mode: if metadata.permissions().readonly() {
            0o444
        } else {
            0o666
        },
        uid: None,
        gid: None,
    }
}

/// Gives `file` `mode`'s owner where the process may (before the mode: a change of
/// owner clears setuid and setgid), and returns the permissions to set: `mode`'s bits,
/// without setuid and setgid when the owner could not be given back.
#[cfg(unix)]
fn restored_permissions(file: &File, mode: &FileMode) -> Option<Permissions> {
    use cap_std::fs::PermissionsExt;
    let owner_kept = match (mode.uid, mode.gid) {
        (Some(uid), Some(gid)) => std::os::unix::fs::fchown(file, Some(uid), Some(gid)).is_ok(),
        _ => false,
    };
    let bits = if owner_kept {
        mode.mode & 0o7777
    } else {
        mode.mode & 0o1777
    };
    Some(Permissions::from_mode(bits))
}

/// Without Unix modes only read-only is kept.
#[cfg(not(unix))]
fn restored_permissions(file: &File, mode: &FileMode) -> Option<Permissions> {
    let mut permissions = file.metadata().ok()?.permissions();
    permissions.set_readonly(mode.mode & 0o222 == 0);
    Some(permissions)
}

/// Copies `reader` into `file`, refusing more than `max_bytes` bytes.
fn copy_bounded(
    path: &str,
    reader: &mut dyn Read,
    file: &mut File,
    max_bytes: u64,
    abort: &dyn Fn() -> bool,
) -> Result<()> {
    let io = |source| JailError::Io {
        path: path.to_owned(),
        source,
    };
    let mut buffer = vec![0_u8; CHUNK];
    let mut total: u64 = 0;
    loop {
        if abort() {
            return Err(JailError::Aborted {
                path: path.to_owned(),
            });
        }
        let read = match reader.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(io(error)),
        };
        total = total.saturating_add(read as u64);
        if total > max_bytes {
            return Err(JailError::TooLarge {
                path: path.to_owned(),
                max_bytes,
            });
        }
        file.write_all(&buffer[..read]).map_err(io)?;
    }
}

/// Opens a new file readable and writable by its owner only (0600 on Unix), before any
/// byte is written: a reader who opens it early gets nothing they could not read later.
fn create_private(parent: &Dir, temp: &str) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    parent.open_with(temp, &options)
}

/// The mode a newly created file normally gets: 0666 minus the process umask.
#[cfg(unix)]
fn new_file_permissions() -> Option<Permissions> {
    use cap_std::fs::PermissionsExt;
    Some(Permissions::from_mode(0o666 & !current_umask()))
}

/// Without Unix modes a new file keeps what it was created with.
#[cfg(not(unix))]
fn new_file_permissions() -> Option<Permissions> {
    None
}

/// The process umask, read without changing it (`umask(2)` can only set it, which would
/// race with other threads creating files): Linux reports it in `/proc/self/status`.
/// Elsewhere, or if that fails, the usual 022.
#[cfg(unix)]
fn current_umask() -> u32 {
    const USUAL: u32 = 0o022;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        #[expect(
            clippy::disallowed_methods,
            reason = "a fixed kernel file about this process, not a model path"
        )]
        let status = std::fs::read_to_string("/proc/self/status");
        status
            .ok()
            .and_then(|status| parse_umask(&status))
            .unwrap_or(USUAL)
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        USUAL
    }
}

/// The `Umask:` line of `/proc/self/status` (octal).
#[cfg(unix)]
fn parse_umask(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("Umask:"))
        .and_then(|value| u32::from_str_radix(value.trim(), 8).ok())
        .map(|mask| mask & 0o777)
}

/// Test-only crash injection (feature `failpoints`): for targets named
/// `failpoint-crash-*`, writes the first half of the content to the temp file, fsyncs it,
/// and stalls for a minute so a test can kill the process in the middle of the write.
#[cfg(feature = "failpoints")]
fn failpoint_stall(parent: &Dir, name: &std::ffi::OsStr, temp: &str, bytes: &[u8]) {
    if !name.to_string_lossy().starts_with("failpoint-crash-") {
        return;
    }
    if let Ok(mut file) = create_private(parent, temp) {
        let _ = file.write_all(&bytes[..bytes.len() / 2]);
        let _ = file.sync_all();
    }
    std::thread::sleep(std::time::Duration::from_secs(60));
    let _ = parent.remove_file(temp);
}

/// `.pocketpilot-tmp-<pid>-<counter>-<nanos>`; the pid lets the sweep skip live writers.
fn temp_name() -> String {
    let counter = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or(0);
    format!("{TEMP_PREFIX}{}-{counter}-{nanos}", process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_hidden_unique_and_carry_the_pid() {
        let first = temp_name();
        let second = temp_name();
        assert_ne!(first, second);
        assert!(first.starts_with(".pocketpilot-tmp-"));
        assert!(first.contains(&format!("-{}-", process::id())));
    }

    #[cfg(target_os = "linux")]
    #[test]
    #[expect(clippy::disallowed_methods, reason = "reads the kernel's status file")]
    fn umask_is_read_from_the_status_line() {
        let status = "Name:\tx\nUmask:\t0027\nState:\tR (running)\n";
        assert_eq!(parse_umask(status), Some(0o027));
        assert_eq!(parse_umask("Name:\tx\n"), None);
        assert_eq!(parse_umask("Umask:\tzz\n"), None);
        assert_ne!(
            std::fs::read_to_string("/proc/self/status")
                .map(|status| parse_umask(&status))
                .ok(),
            Some(None),
            "this kernel reports no umask"
        );
    }

    /// Finding 6 of issue 8: the temp file was created 0644 and got the target's mode
    /// only after the content was written, so a private file's new content was briefly
    /// world-readable. The hook looks at the temp file once all the content is in it.
    #[cfg(unix)]
    mod modes {
        use std::cell::Cell;
        use std::path::Path;
        use std::rc::Rc;

        use cap_std::fs::PermissionsExt as _;

        use super::super::super::hooks::{self, Point};
        use super::*;

        /// Writes `path` and returns (mode of the temp file holding the whole content,
        /// mode of the result).
        #[expect(clippy::disallowed_methods, reason = "test inspects its temp dir")]
        fn write_and_watch(root: &Path, path: &str) -> (u32, u32) {
            let jail = Jail::new(root).unwrap();
            let seen = Rc::new(Cell::new(None));
            let recorder = Rc::clone(&seen);
            hooks::set(move |point, dir, temp| {
                if point == Point::TempWritten {
                    assert_eq!(dir.read(temp)?, b"new content");
                    recorder.set(Some(dir.metadata(temp)?.permissions().mode() & 0o7777));
                }
                Ok(())
            });
            let result = jail.write_atomic(path, b"new content");
            hooks::clear();
            result.unwrap();
            let after = std::fs::metadata(root.join(path)).unwrap();
            let temp_mode = seen.get().expect("the hook ran");
            (
                temp_mode,
                std::os::unix::fs::PermissionsExt::mode(&after.permissions()) & 0o7777,
            )
        }

        #[expect(clippy::disallowed_methods, reason = "test fixture on a temp dir")]
        fn file_with_mode(root: &Path, name: &str, mode: u32) {
            use std::os::unix::fs::PermissionsExt;
            std::fs::write(root.join(name), "old content").unwrap();
            std::fs::set_permissions(root.join(name), std::fs::Permissions::from_mode(mode))
                .unwrap();
        }

        #[test]
        fn a_private_file_is_rewritten_privately() {
            let temp = tempfile::tempdir().unwrap();
            file_with_mode(temp.path(), "private.txt", 0o600);
            assert_eq!(write_and_watch(temp.path(), "private.txt"), (0o600, 0o600));
        }

        #[test]
        fn the_temp_file_is_private_until_it_is_complete_whatever_the_target() {
            let temp = tempfile::tempdir().unwrap();
            for mode in [0o640, 0o644, 0o755, 0o400] {
                file_with_mode(temp.path(), "shared.txt", mode);
                assert_eq!(write_and_watch(temp.path(), "shared.txt"), (0o600, mode));
            }
        }

        #[test]
        fn a_new_file_gets_the_normal_mode_after_being_written_privately() {
            let temp = tempfile::tempdir().unwrap();
            let normal = 0o666 & !current_umask();
            assert_eq!(write_and_watch(temp.path(), "new.txt"), (0o600, normal));
        }
    }
}
