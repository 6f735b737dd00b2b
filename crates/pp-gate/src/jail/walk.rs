//! A depth-first walk of a workspace folder through directory handles, for tools that
//! look inside many files (`search_files`).
//!
//! Every directory is opened relative to its parent's handle, only if it is still the
//! directory that was listed (device and inode), and every file is opened relative to
//! its directory's handle with `O_NOFOLLOW`, then checked on the opened handle (`fstat`:
//! a regular file). Symbolic links are reported to the visitor and never followed, so a
//! link swapped in at any moment leads nowhere: not out of the workspace, not even to
//! another folder inside it. What to skip (ignore files, hidden folders, sizes) is the
//! visitor's business; the walk only guarantees where it can reach.

use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::path::Path;

use cap_std::fs::{Dir, OpenOptions};
use pp_types::FileMode;

use super::Jail;
use super::list::{EntryKind, Identity, open_same_dir};
use crate::error::{JailError, Result};

/// Deepest folder level [`Jail::walk`] enters below its start; deeper folders are left
/// unread. Each level holds one open directory handle, so this also bounds the file
/// descriptors a walk holds.
pub const MAX_WALK_DEPTH: usize = 256;

/// What the visitor wants next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkFlow {
    /// Go on (for a directory entry: descend into it).
    Continue,
    /// Do not descend into this directory (for other entries the same as `Continue`).
    Skip,
    /// End the walk now.
    Stop,
}

/// Decides what a [`Jail::walk`] does, one directory and one entry at a time.
pub trait WalkVisitor {
    /// A directory was opened and is about to be read; `dir` can open its files (an
    /// ignore file, say). `Skip` leaves it unread, `Stop` ends the walk.
    fn enter(&mut self, dir: &WalkDir<'_>) -> WalkFlow;

    /// One entry of the directory being read (in name order). For a directory,
    /// `Continue` descends into it (after the current directory's later entries have
    /// not yet been visited: the order is depth-first, like `ls -R` sorted by path).
    fn visit(&mut self, dir: &WalkDir<'_>, entry: &WalkEntry) -> WalkFlow;

    /// Every entry of the directory at `path` has been visited.
    fn leave(&mut self, _path: &str) {}
}

/// An open directory during a walk.
#[derive(Debug)]
pub struct WalkDir<'a> {
    /// The handle its files are opened through.
    dir: &'a Dir,
    /// Workspace-relative, `/`-separated, link-free path (`""` for the root).
    path: &'a str,
}

/// One entry met during a walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkEntry {
    /// Workspace-relative, `/`-separated path; a name that is not UTF-8 is shown lossily.
    pub path: String,
    /// Its kind, without following links.
    pub kind: EntryKind,
    /// Its size in bytes when it was listed.
    pub size: u64,
    /// What `lstat` said of it when it was listed: identity, mode, owner, times.
    pub stat: EntryStat,
    /// The name as the filesystem has it, to open exactly this entry.
    name: OsString,
    /// Device and inode when listed, to refuse a directory swapped in since.
    identity: Identity,
}

impl WalkEntry {
    /// The entry's file name (lossy for a name that is not UTF-8).
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

impl WalkDir<'_> {
    /// The directory's workspace-relative path (`""` for the root).
    pub fn path(&self) -> &str {
        self.path
    }

    /// Opens the regular file `entry` names in this directory, read-only.
    ///
    /// The open does not follow a link (`O_NOFOLLOW`) and never blocks on a special file
    /// (`O_NONBLOCK`, cleared again afterwards); what was opened must be a regular file
    /// ([`JailError::NotAFile`] otherwise, [`JailError::TooManyLinks`] for a link
    /// swapped in).
    pub fn open(&self, entry: &WalkEntry) -> Result<File> {
        self.open_name(&entry.name, &entry.path)
    }

    /// Reads at most `max_bytes` of the regular file `name` in this directory (an
    /// ignore file); `Ok(None)` when there is no such file or it is not a regular file.
    pub fn read_small(&self, name: &str, max_bytes: u64) -> Result<Option<Vec<u8>>> {
        let path = join(self.path, name);
        let file = match self.open_name(name.as_ref(), &path) {
            Ok(file) => file,
            Err(
                JailError::NotFound { .. }
                | JailError::NotAFile { .. }
                | JailError::TooManyLinks { .. }
                | JailError::NotADirectory { .. },
            ) => return Ok(None),
            Err(error) => return Err(error),
        };
        let mut bytes = Vec::new();
        file.take(max_bytes)
            .read_to_end(&mut bytes)
            .map_err(|error| JailError::from_io(&path, error))?;
        Ok(Some(bytes))
    }

    fn open_name(&self, name: &std::ffi::OsStr, path: &str) -> Result<File> {
        let io = |error| JailError::from_io(path, error);
        let file = self
            .dir
            .open_with(name, &read_only_no_follow())
            .map_err(io)?;
        if !file.metadata().map_err(io)?.is_file() {
            return Err(JailError::NotAFile {
                path: path.to_owned(),
            });
        }
        #[cfg(unix)]
        super::clear_non_blocking(&file).map_err(io)?;
        Ok(file.into_std())
    }
}

/// The metadata of a walked entry (`lstat`, links not followed): what a before/after
/// comparison of a folder tree needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryStat {
    /// Device and inode (zero where the platform has none).
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Permission bits and owner.
    pub mode: FileMode,
    /// Last modification, nanoseconds since the epoch.
    pub mtime_ns: i128,
    /// Last status change, nanoseconds since the epoch (mode, owner, links, content).
    pub ctime_ns: i128,
}

impl EntryStat {
    #[cfg(unix)]
    fn of(metadata: &cap_std::fs::Metadata) -> Self {
        use cap_std::fs::MetadataExt;
        let ns = |secs: i64, nanos: i64| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
        Self {
            dev: metadata.dev(),
            ino: metadata.ino(),
            mode: FileMode {
                mode: metadata.mode() & 0o7777,
                uid: Some(metadata.uid()),
                gid: Some(metadata.gid()),
            },
            mtime_ns: ns(metadata.mtime(), metadata.mtime_nsec()),
            ctime_ns: ns(metadata.ctime(), metadata.ctime_nsec()),
        }
    }

    #[cfg(not(unix))]
    fn of(metadata: &cap_std::fs::Metadata) -> Self {
        let mtime_ns = metadata
            .modified()
            .ok()
            .and_then(|time| time.into_std().duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |since| since.as_nanos() as i128);
        Self {
            dev: 0,
            ino: 0,
            mode: FileMode {
                mode: if metadata.permissions().readonly() {
                    0o444
                } else {
                    0o666
                },
                uid: None,
                gid: None,
            },
            mtime_ns,
            ctime_ns: mtime_ns,
        }
    }
}

/// One directory whose entries are being visited.
struct Frame {
    dir: Dir,
    path: String,
    /// The entries not visited yet, last first (popped from the end).
    entries: Vec<WalkEntry>,
}

impl Jail {
    /// Walks the directory `path` (`""` or `"."` for the root) depth-first, entries in
    /// name order, asking `visitor` about each directory and entry (see the module
    /// documentation of the guarantees). Returns an error only when `path` itself is
    /// refused or cannot be opened; a directory that vanishes or changes during the walk
    /// is skipped, and so is anything deeper than [`MAX_WALK_DEPTH`] levels.
    pub fn walk(&self, path: &str, visitor: &mut dyn WalkVisitor) -> Result<()> {
        let resolved = self.resolve(path)?;
        let start = if resolved.is_root() {
            self.dir.open_dir(".")
        } else {
            match &resolved.metadata {
                None => {
                    return Err(JailError::NotFound {
                        path: path.to_owned(),
                    });
                }
                Some(metadata) if !metadata.is_dir() => {
                    return Err(JailError::NotADirectory {
                        path: path.to_owned(),
                    });
                }
                Some(_) => self.dir.open_dir(&resolved.relative),
            }
        }
        .map_err(|error| JailError::from_io(path, error))?;

        let display: Vec<_> = resolved
            .relative
            .iter()
            .map(|part| part.to_string_lossy().into_owned())
            .collect();
        let mut stack: Vec<Frame> = Vec::new();
        match enter(start, display.join("/"), visitor) {
            Ok(Some(frame)) => stack.push(frame),
            Ok(None) | Err(Stopped) => return Ok(()),
        }
        loop {
            let depth = stack.len();
            let Some(frame) = stack.last_mut() else {
                break;
            };
            let Some(entry) = frame.entries.pop() else {
                if let Some(done) = stack.pop() {
                    visitor.leave(&done.path);
                }
                continue;
            };
            let view = WalkDir {
                dir: &frame.dir,
                path: &frame.path,
            };
            match visitor.visit(&view, &entry) {
                WalkFlow::Stop => return Ok(()),
                WalkFlow::Skip => continue,
                WalkFlow::Continue if entry.kind == EntryKind::Dir => {}
                WalkFlow::Continue => continue,
            }
            if depth > MAX_WALK_DEPTH {
                continue;
            }
            let Some(dir) = open_same_dir(&frame.dir, Path::new(&entry.name), entry.identity)
            else {
                continue;
            };
            match enter(dir, entry.path, visitor) {
                Ok(Some(frame)) => stack.push(frame),
                Ok(None) => {}
                Err(Stopped) => return Ok(()),
            }
        }
        Ok(())
    }
}

/// The visitor asked to stop.
struct Stopped;

/// Offers the opened directory to the visitor and reads its entries (sorted, last
/// first); `Ok(None)` when the visitor skips it or it cannot be read.
fn enter(
    dir: Dir,
    path: String,
    visitor: &mut dyn WalkVisitor,
) -> std::result::Result<Option<Frame>, Stopped> {
    match visitor.enter(&WalkDir {
        dir: &dir,
        path: &path,
    }) {
        WalkFlow::Stop => return Err(Stopped),
        WalkFlow::Skip => return Ok(None),
        WalkFlow::Continue => {}
    }
    let Ok(read) = dir.entries() else {
        visitor.leave(&path);
        return Ok(None);
    };
    let mut entries = Vec::new();
    for entry in read {
        let Ok(entry) = entry else { continue };
        // `DirEntry::metadata` does not follow links (fstatat AT_SYMLINK_NOFOLLOW).
        let Ok(metadata) = entry.metadata() else {
            continue; // removed while we were reading
        };
        let name = entry.file_name();
        entries.push(WalkEntry {
            path: join(&path, &name.to_string_lossy()),
            kind: EntryKind::of(metadata.file_type()),
            size: metadata.len(),
            stat: EntryStat::of(&metadata),
            identity: Identity::of(&metadata),
            name,
        });
    }
    entries.sort_by(|a, b| b.name.cmp(&a.name));
    Ok(Some(Frame { dir, path, entries }))
}

/// Read-only, not following a final link, never blocking in `open`.
fn read_only_no_follow() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        use rustix::fs::OFlags;
        options.custom_flags(
            (OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW)
                .bits()
                .cast_signed(),
        );
    }
    options
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}/{name}")
    }
}
