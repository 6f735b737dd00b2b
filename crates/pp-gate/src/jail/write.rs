//! Atomic writes through the jail.

use std::io::Write;
use std::process;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use cap_std::fs::{Dir, OpenOptions, Permissions};

use super::Jail;
use super::sweep::TEMP_PREFIX;
use crate::error::{JailError, Result};

/// What [`Jail::write_atomic`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOutcome {
    /// `true` when the file did not exist before (it was created), `false` when an
    /// existing file was replaced.
    pub created: bool,
}

/// Makes temp names unique within this process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Jail {
    /// Writes `bytes` to `path` atomically.
    ///
    /// The bytes go to a hidden temp file in the target's directory (named
    /// `.pocketpilot-tmp-<pid>-…`), which is fsynced and renamed over the target, so a
    /// crash never leaves a half-written file. An existing file keeps its permissions.
    /// Missing parent directories are created (through the jail). A final component that
    /// is a link pointing inside writes the file it points to (chain resolved); one that
    /// points outside is refused. Because the rename replaces the directory entry, a
    /// hard link inside the workspace to an outside file can never be used to modify the
    /// outside file: the workspace entry becomes a new file and the outside one is left
    /// as it was.
    pub fn write_atomic(&self, path: &str, bytes: &[u8]) -> Result<WriteOutcome> {
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
        let io = |error| JailError::from_io(path, error);
        let Some(name) = resolved.relative.file_name() else {
            return Err(not_a_file());
        };
        let opened;
        let parent: &Dir = match resolved.relative.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => {
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
            Ok(metadata) if metadata.is_file() => (false, Some(metadata.permissions())),
            Ok(metadata) if metadata.file_type().is_symlink() => (false, None),
            Ok(_) => return Err(not_a_file()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => (true, None),
            Err(error) => return Err(io(error)),
        };

        let temp = temp_name();
        #[cfg(feature = "failpoints")]
        failpoint_stall(parent, name, &temp, bytes);
        let result = write_temp(parent, &temp, bytes, permissions)
            .and_then(|()| parent.rename(&temp, parent, name));
        if let Err(error) = result {
            // Best effort: the sweep removes anything left behind.
            let _ = parent.remove_file(&temp);
            return Err(io(error));
        }
        sync_dir(parent);
        Ok(WriteOutcome { created })
    }
}

/// Creates `temp` exclusively, writes, applies `permissions`, fsyncs.
fn write_temp(
    parent: &Dir,
    temp: &str,
    bytes: &[u8],
    permissions: Option<Permissions>,
) -> std::io::Result<()> {
    let mut file = parent.open_with(temp, OpenOptions::new().write(true).create_new(true))?;
    file.write_all(bytes)?;
    if let Some(permissions) = permissions {
        file.set_permissions(permissions)?;
    }
    file.sync_all()
}

/// Test-only crash injection (feature `failpoints`): for targets named
/// `failpoint-crash-*`, writes the first half of the content to the temp file, fsyncs it,
/// and stalls for a minute so a test can kill the process in the middle of the write.
#[cfg(feature = "failpoints")]
fn failpoint_stall(parent: &Dir, name: &std::ffi::OsStr, temp: &str, bytes: &[u8]) {
    if !name.to_string_lossy().starts_with("failpoint-crash-") {
        return;
    }
    if let Ok(mut file) = parent.open_with(temp, OpenOptions::new().write(true).create_new(true)) {
        let _ = file.write_all(&bytes[..bytes.len() / 2]);
        let _ = file.sync_all();
    }
    std::thread::sleep(std::time::Duration::from_secs(60));
    let _ = parent.remove_file(temp);
}

/// Makes the rename durable; failures are ignored (the data is already fsynced, and
/// some platforms cannot open or sync a directory).
fn sync_dir(dir: &Dir) {
    if let Ok(handle) = dir.open(".") {
        let _ = handle.sync_all();
    }
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
}
