//! Removal of temp files left behind by a writer that crashed mid-write.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use cap_std::fs::{Dir, Metadata};

use super::Jail;
use super::list::{Identity, open_same_dir};
use crate::error::{JailError, Result};

/// Name prefix of the temp files [`Jail::write_atomic`] creates.
pub const TEMP_PREFIX: &str = ".pocketpilot-tmp-";

/// Most directory entries [`Jail::sweep_temp_files`] looks at.
pub const MAX_SWEEP_ENTRIES: usize = 200_000;

/// A temp file whose writer cannot be checked is removed only after this long.
const STALE_AFTER: Duration = Duration::from_secs(60 * 60);

impl Jail {
    /// Removes stray `.pocketpilot-tmp-*` files left by a crashed writer; returns how
    /// many were removed.
    ///
    /// The walk never follows links and stops after [`MAX_SWEEP_ENTRIES`] entries. A
    /// temp file whose writer (the pid in its name) is still alive is kept: on Linux
    /// that is checked in `/proc/<pid>`; elsewhere, and for names without a pid, only
    /// files older than one hour are removed.
    pub fn sweep_temp_files(&self) -> Result<usize> {
        let mut removed = 0;
        let mut seen = 0;
        let mut pending: Vec<(PathBuf, Option<Identity>)> = vec![(PathBuf::new(), None)];
        while let Some((relative, identity)) = pending.pop() {
            let opened;
            let dir: &Dir = match identity {
                None => &self.dir,
                Some(identity) => match open_same_dir(&self.dir, &relative, identity) {
                    Some(dir) => {
                        opened = dir;
                        &opened
                    }
                    None => continue,
                },
            };
            let Ok(entries) = dir.entries() else {
                continue;
            };
            for entry in entries {
                seen += 1;
                if seen > MAX_SWEEP_ENTRIES {
                    return Ok(removed);
                }
                let Ok(entry) = entry else { continue };
                let Ok(metadata) = entry.metadata() else {
                    continue;
                };
                let name = entry.file_name();
                let file_type = metadata.file_type();
                if file_type.is_dir() {
                    pending.push((relative.join(&name), Some(Identity::of(&metadata))));
                } else if file_type.is_file()
                    && let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(TEMP_PREFIX))
                    && is_abandoned(rest, &metadata)
                {
                    match dir.remove_file(&name) {
                        Ok(()) => removed += 1,
                        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                        Err(source) => {
                            return Err(JailError::Io {
                                path: relative.join(&name).to_string_lossy().into_owned(),
                                source,
                            });
                        }
                    }
                }
            }
        }
        Ok(removed)
    }
}

/// Whether the temp file named `TEMP_PREFIX + rest` belongs to a writer that is gone.
fn is_abandoned(rest: &str, metadata: &Metadata) -> bool {
    let pid = rest
        .split('-')
        .next()
        .and_then(|pid| pid.parse::<u32>().ok())
        .filter(|pid| *pid > 0);
    match pid.and_then(process_alive) {
        Some(alive) => !alive,
        None => is_old(metadata),
    }
}

fn is_old(metadata: &Metadata) -> bool {
    metadata
        .modified()
        .ok()
        .and_then(|modified| SystemTime::now().duration_since(modified.into_std()).ok())
        .is_some_and(|age| age > STALE_AFTER)
}

/// `Some(alive)` when liveness can be checked, `None` when it cannot.
#[cfg(target_os = "linux")]
fn process_alive(pid: u32) -> Option<bool> {
    if pid == std::process::id() {
        return Some(true);
    }
    // A fixed system path, not a model path: the jail is not involved.
    std::path::Path::new(&format!("/proc/{pid}"))
        .try_exists()
        .ok()
}

/// `Some(alive)` when liveness can be checked, `None` when it cannot.
#[cfg(not(target_os = "linux"))]
fn process_alive(pid: u32) -> Option<bool> {
    (pid == std::process::id()).then_some(true)
}
