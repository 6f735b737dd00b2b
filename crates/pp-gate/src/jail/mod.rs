//! The workspace jail: every filesystem access that starts from a model-chosen string.
//!
//! Each operation validates the string lexically ([`lexical`]), resolves symbolic links
//! itself through the root directory handle ([`mod@resolve`]), and then performs the actual
//! open/create/rename/read_dir through cap-std relative to that handle. Operations on
//! an entry as such (move, delete: [`mod@entry`]) resolve its folder that way and act on
//! its last name through a handle on that folder, never following a link there. cap-std enforces
//! "beneath the root" at open time (`openat2(RESOLVE_BENEATH)` on Linux, a careful
//! manual walk elsewhere), so a link swapped in between our check and the open cannot
//! escape: the open fails and we report [`JailError::SymlinkEscape`].

mod copy;
mod dir_ops;
mod entry;
mod fingerprint;
#[cfg(test)]
mod hooks;
mod lexical;
mod list;
mod mkdir;
mod probe;
mod remove;
mod rename;
mod resolve;
mod sweep;
mod walk;
mod write;

use std::io::Read;
use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};

use crate::error::{JailError, Result};

pub use copy::Copied;
pub use fingerprint::DEFAULT_HASH_MAX_BYTES;
pub use list::{EntryKind, ListEntry, ListOptions, Listing};
pub use probe::Probe;
pub use rename::RenameOutcome;
pub use resolve::MAX_SYMLINK_HOPS;
pub use sweep::{MAX_SWEEP_ENTRIES, TEMP_PREFIX};
pub use walk::{EntryStat, MAX_WALK_DEPTH, WalkDir, WalkEntry, WalkFlow, WalkVisitor};
pub use write::WriteOutcome;

use resolve::{Resolved, resolve};

/// The workspace jail: a directory handle on the root plus its canonical location.
///
/// Cheap to share (`Send + Sync`); wrap it in an `Arc` and hand it to tools and to the
/// [`crate::Gate`]. Paths given to its methods are the strings the model wrote: relative,
/// `/`-separated, never absolute.
#[derive(Debug)]
pub struct Jail {
    /// Handle every operation goes through; cap-std keeps lookups beneath it.
    dir: Dir,
    /// Canonical root, used only to translate absolute link targets that point inside
    /// and to report where the workspace is; never joined with a model path.
    root: PathBuf,
}

/// The (possibly truncated) bytes of a file read through the jail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileContent {
    /// At most `max_bytes` bytes from the start of the file.
    pub bytes: Vec<u8>,
    /// The full size of the file when it was read.
    pub size: u64,
    /// Whether the file holds more than `bytes`.
    pub truncated: bool,
}

impl Jail {
    /// Opens the jail on `root`, an already `~`-expanded path that must be an existing
    /// directory; it is canonicalised here.
    pub fn new(root: &Path) -> Result<Self> {
        let invalid = |source| JailError::RootInvalid {
            root: root.to_path_buf(),
            source,
        };
        let canonical = canonicalize_root(root).map_err(invalid)?;
        let dir = Dir::open_ambient_dir(&canonical, ambient_authority()).map_err(invalid)?;
        Ok(Self {
            dir,
            root: canonical,
        })
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Validates and resolves a model-supplied path without requiring it to exist.
    ///
    /// Returns the link-free workspace-relative path it designates (empty for the root):
    /// links along the way are resolved, a tail that does not exist yet is kept as
    /// written. Every rule violation is an error; a missing file is not.
    pub fn check(&self, path: &str) -> Result<PathBuf> {
        self.resolve(path).map(|resolved| resolved.relative)
    }

    /// Whether something exists at `path` (a dangling link inside counts as absent).
    pub fn exists(&self, path: &str) -> Result<bool> {
        self.resolve(path)
            .map(|resolved| resolved.metadata.is_some())
    }

    /// Opens a regular file read-only.
    ///
    /// Never blocks on a special file: the open is non-blocking (`O_NONBLOCK`, and
    /// `O_NOCTTY`), and the opened handle itself is checked (`fstat`), so a FIFO or a
    /// device swapped in after the type check is refused with [`JailError::NotAFile`]
    /// instead of hanging. The returned handle is blocking again.
    pub fn open_file(&self, path: &str) -> Result<std::fs::File> {
        let resolved = self.resolve(path)?;
        self.open_resolved(path, &resolved)
            .map(cap_std::fs::File::into_std)
    }

    /// Reads at most `max_bytes` bytes of a regular file.
    pub fn read(&self, path: &str, max_bytes: u64) -> Result<FileContent> {
        let file = self.open_file(path)?;
        let io_error = |source| JailError::Io {
            path: path.to_owned(),
            source,
        };
        let size = file.metadata().map_err(io_error)?.len();
        // Pre-allocate no more than 1 MiB: `size` may be huge (sparse files) or stale.
        let capacity = usize::try_from(size.min(max_bytes).min(1 << 20)).unwrap_or(0);
        let mut bytes = Vec::with_capacity(capacity);
        // One byte more than allowed tells whether the file grew past the limit.
        file.take(max_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(io_error)?;
        let limit = usize::try_from(max_bytes).unwrap_or(usize::MAX);
        let truncated = bytes.len() > limit || size > max_bytes;
        bytes.truncate(limit);
        Ok(FileContent {
            size: size.max(bytes.len() as u64),
            bytes,
            truncated,
        })
    }

    /// Opens the regular file `resolved` names (see [`Jail::open_file`]).
    fn open_resolved(&self, path: &str, resolved: &Resolved) -> Result<cap_std::fs::File> {
        let not_a_file = || JailError::NotAFile {
            path: path.to_owned(),
        };
        match &resolved.metadata {
            _ if resolved.is_root() => return Err(not_a_file()),
            None => {
                return Err(JailError::NotFound {
                    path: path.to_owned(),
                });
            }
            // A cheap early refusal; the check that counts is on the opened handle.
            Some(metadata) if !metadata.is_file() => return Err(not_a_file()),
            Some(_) => {}
        }
        let io = |error| JailError::from_io(path, error);
        #[cfg(test)]
        hooks::fire(hooks::Point::BeforeOpen, &self.dir, &resolved.relative).map_err(io)?;
        let file = self
            .dir
            .open_with(&resolved.relative, &read_only_non_blocking())
            .map_err(io)?;
        // `fstat` of what was opened: whatever was swapped in since the check.
        if !file.metadata().map_err(io)?.is_file() {
            return Err(not_a_file());
        }
        #[cfg(unix)]
        clear_non_blocking(&file).map_err(io)?;
        Ok(file)
    }

    /// Lexical checks plus link resolution.
    fn resolve(&self, path: &str) -> Result<Resolved> {
        resolve(&self.dir, &self.root, path)
    }
}

/// Read-only, and never blocking in `open` itself: opening a FIFO without a writer
/// would wait forever, and a terminal device must not become our controlling terminal.
fn read_only_non_blocking() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        use rustix::fs::OFlags;
        options.custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits().cast_signed());
    }
    options
}

/// Makes reads on an opened regular file blocking again (some network filesystems
/// honour `O_NONBLOCK` on regular files).
#[cfg(unix)]
fn clear_non_blocking(file: &cap_std::fs::File) -> std::io::Result<()> {
    use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
    let flags = fcntl_getfl(file)?;
    fcntl_setfl(file, flags.difference(OFlags::NONBLOCK))?;
    Ok(())
}

#[expect(
    clippy::disallowed_methods,
    reason = "the root is an operator path; canonicalising it once at construction is the \
              one ambient filesystem call the jail makes"
)]
fn canonicalize_root(root: &Path) -> std::io::Result<PathBuf> {
    std::fs::canonicalize(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn jail_is_send_and_sync() {
        assert_send_sync::<Jail>();
    }

    /// Finding 3 of issue 8: a FIFO swapped in between the type check and the open made
    /// the open block forever.
    #[cfg(unix)]
    mod special_files {
        use std::sync::mpsc;
        use std::time::Duration;

        use rustix::fs::{Mode, mkfifoat};

        use super::super::hooks::{self, Point};
        use super::*;

        /// Runs `f` on another thread and returns its result; fails the test if it has
        /// not returned within five seconds (it is blocked, not slow).
        fn must_return<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
            let (sender, receiver) = mpsc::channel();
            std::thread::spawn(move || {
                let _ = sender.send(f());
            });
            receiver
                .recv_timeout(Duration::from_secs(5))
                .expect("blocked: the call did not return")
        }

        /// Renames a fresh FIFO over `relative` when the jail is about to open it.
        fn swap_in_a_fifo(point: Point, dir: &Dir, relative: &Path) -> std::io::Result<()> {
            if point == Point::BeforeOpen {
                mkfifoat(dir, "fifo.tmp", Mode::from_raw_mode(0o600))?;
                dir.rename("fifo.tmp", dir, relative)?;
            }
            Ok(())
        }

        /// Puts a regular `f.txt` back (removing the FIFO first: writing to it would block).
        #[expect(clippy::disallowed_methods, reason = "test fixture on a temp dir")]
        fn write_regular(root: &Path) {
            let _ = std::fs::remove_file(root.join("f.txt"));
            std::fs::write(root.join("f.txt"), "regular").unwrap();
        }

        #[test]
        fn a_fifo_swapped_in_before_the_open_is_refused_without_blocking() {
            let temp = tempfile::tempdir().unwrap();
            let root = temp.path().to_path_buf();
            write_regular(&root);
            let jail = Jail::new(&root).unwrap();
            let outcomes = must_return(move || {
                hooks::set(swap_in_a_fifo);
                let read = jail.read("f.txt", 100).map(|content| content.bytes);
                write_regular(&root);
                let open = jail.open_file("f.txt").map(|_| ());
                write_regular(&root);
                let fingerprint = jail.fingerprint("f.txt");
                hooks::clear();
                [read.map(|_| ()), open, fingerprint.map(|_| ())]
            });
            for outcome in outcomes {
                assert!(
                    matches!(outcome, Err(JailError::NotAFile { ref path }) if path == "f.txt"),
                    "{outcome:?}"
                );
            }
        }
    }
}
