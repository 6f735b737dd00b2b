//! File memory: one Markdown file, `memory.md`, in the data directory.
//!
//! Outside every workspace and never read from one: the file is reached only through a
//! [`Jail`] on the data directory, with the fixed name [`MEMORY_FILE`] (a `memory.md` in a
//! workspace is just a file). Its content goes into the system prompt, capped by
//! [`MemorySettings::max_prompt_bytes`] with a visible marker ([`prompt_section`]).
//!
//! Two roads change it:
//! - the agent, only through `memory_write` ([`MemoryProvider`]): capability
//!   `memory:write`, risk high, so every call stops for approval and the card shows a diff
//!   of the memory file;
//! - the operator, through [`replace_if`]: a compare-and-swap on the [`Snapshot`]'s
//!   version, so an edit based on an old read never overwrites a newer memory.
//!
//! Reverting an approved `memory_write` (`pp_tasks`' change log) is an operator write too:
//! [`replace_if`], or [`remove_if`] for the memory the agent created, on the version the
//! agent left.
//!
//! Memory is text for the model, never a permission: nothing it says changes the gate.
//!
//! In team mode the memory is the team's, kept in the database ([`SharedMemory`]): every
//! change is the database's compare-and-swap, and this process reads it through a private
//! mirror, a `memory.md` in a folder of its own brought up to the database's version
//! before each read ([`Memory::open`]). The jail, the fingerprints and the change log
//! work on that mirror exactly as on the file.

mod memory_write;
mod provider;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use pp_gate::{Jail, JailError};
use sha2::{Digest, Sha256};

pub use provider::MemoryProvider;

/// The memory file's name in the data directory.
pub const MEMORY_FILE: &str = "memory.md";

/// The version of a memory file that does not exist.
pub const ABSENT_VERSION: &str = "absent";

/// The largest memory file read or written (1 MiB); the prompt takes far less.
pub const MAX_MEMORY_BYTES: u64 = 1024 * 1024;

/// Where the memory file lives and how much of it the prompt takes.
#[derive(Debug, Clone)]
pub struct MemorySettings {
    /// The data directory (it must exist); the file is `<dir>/memory.md`. With
    /// [`MemorySettings::shared`], this process's mirror folder.
    pub dir: PathBuf,
    /// `[memory] max_prompt_bytes`: the most bytes of memory put into the system prompt.
    pub max_prompt_bytes: usize,
    /// The team's memory in the database (team mode); `None`: the file is the memory.
    pub shared: Option<Arc<dyn SharedMemory>>,
}

impl MemorySettings {
    /// The default prompt cap, 8 KiB.
    pub const DEFAULT_MAX_PROMPT_BYTES: usize = 8 * 1024;

    /// Settings for the data directory `dir` with the default cap.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            max_prompt_bytes: Self::DEFAULT_MAX_PROMPT_BYTES,
            shared: None,
        }
    }

    /// The memory these settings name.
    pub fn memory(&self) -> Memory {
        Memory {
            dir: self.dir.clone(),
            shared: self.shared.clone(),
        }
    }
}

/// The team's memory where it is kept when it is not a file: the database (team mode).
/// Synchronous: called on the blocking pool, never on the async threads.
pub trait SharedMemory: Send + Sync + std::fmt::Debug {
    /// The memory's text now, `None` when there is none.
    fn load(&self) -> Result<Option<String>, MemoryError>;

    /// Makes `content` (of version `version`) the memory if its version is still
    /// `expected` ([`ABSENT_VERSION`]: there is none yet); `false` when it is not, and
    /// nothing is written.
    fn swap(&self, expected: &str, content: &str, version: &str) -> Result<bool, MemoryError>;

    /// Removes the memory if its version is still `expected`; `false` when it is not (or
    /// there is none).
    fn remove(&self, expected: &str) -> Result<bool, MemoryError>;
}

/// The memory: the file `memory.md` in a folder, or the team's memory in the database
/// ([`SharedMemory`]) read through this process's mirror of it in that folder. Cheap to
/// clone. Every method touches the disk (and the database): call them off the async
/// threads.
#[derive(Debug, Clone)]
pub struct Memory {
    dir: PathBuf,
    shared: Option<Arc<dyn SharedMemory>>,
}

impl Memory {
    /// The memory file in the folder `dir`.
    pub fn file(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            shared: None,
        }
    }

    /// The folder of the file (or of the mirror).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the memory is the team's, in the database.
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// The jail on the memory's folder, its `memory.md` the memory now: with a shared
    /// memory, the mirror is first brought up to the database's version (written, or
    /// removed when there is none). Read through the jail right after.
    pub fn open(&self) -> Result<Jail, MemoryError> {
        let jail = jail(&self.dir)?;
        self.refresh(&jail)?;
        Ok(jail)
    }

    /// Brings the mirror in `jail` up to the database's version (nothing for a file).
    pub fn refresh(&self, jail: &Jail) -> Result<(), MemoryError> {
        let Some(shared) = &self.shared else {
            return Ok(());
        };
        let _guard = write_lock();
        mirror(jail, shared.load()?.as_deref())
    }

    /// The memory now: `{content, version}`.
    pub fn read(&self) -> Result<Snapshot, MemoryError> {
        read(&self.open()?)
    }

    /// Replaces the memory with `content` if its version is still `expected`
    /// (compare-and-swap: on the file under the write lock, or the database's);
    /// [`MemoryError::VersionMismatch`] otherwise and nothing is written. `stop` can
    /// call it off at the last moment (a cancelled task).
    pub fn replace_unless(
        &self,
        jail: &Jail,
        expected: &str,
        content: &str,
        stop: &dyn Fn() -> bool,
    ) -> Result<Snapshot, MemoryError> {
        let Some(shared) = &self.shared else {
            return replace_unless(jail, expected, content, stop);
        };
        if content.len() as u64 > MAX_MEMORY_BYTES {
            return Err(MemoryError::TooLarge);
        }
        if stop() {
            return Err(MemoryError::Jail(JailError::Aborted {
                path: MEMORY_FILE.into(),
            }));
        }
        let version = version_of(content.as_bytes());
        if !shared.swap(expected, content, &version)? {
            return Err(self.mismatch(shared.as_ref(), jail, expected));
        }
        let _guard = write_lock();
        mirror(jail, Some(content))?;
        Ok(Snapshot {
            content: content.to_owned(),
            version,
        })
    }

    /// [`Memory::replace_unless`] that nothing calls off.
    pub fn replace_if(
        &self,
        jail: &Jail,
        expected: &str,
        content: &str,
    ) -> Result<Snapshot, MemoryError> {
        self.replace_unless(jail, expected, content, &|| false)
    }

    /// Removes the memory if its version is still `expected` (a revert of the write that
    /// created it); an absent memory is fine; [`MemoryError::VersionMismatch`] otherwise.
    pub fn remove_if(&self, jail: &Jail, expected: &str) -> Result<(), MemoryError> {
        let Some(shared) = &self.shared else {
            return remove_if(jail, expected);
        };
        // Nothing removed: fine when there is no memory (already gone), else a mismatch.
        if !shared.remove(expected)? && shared.load()?.is_some() {
            return Err(self.mismatch(shared.as_ref(), jail, expected));
        }
        let _guard = write_lock();
        mirror(jail, None)
    }

    /// The mismatch a lost database swap means, with the version now (the mirror
    /// brought up to it on the way).
    fn mismatch(&self, shared: &dyn SharedMemory, jail: &Jail, expected: &str) -> MemoryError {
        let now = shared.load();
        let current = match &now {
            Ok(Some(content)) => version_of(content.as_bytes()),
            Ok(None) => ABSENT_VERSION.to_owned(),
            Err(_) => "unreadable".to_owned(),
        };
        if let Ok(now) = &now {
            let _guard = write_lock();
            // The mirror is only a copy: failing to update it changes nothing stored.
            let _ = mirror(jail, now.as_deref());
        }
        MemoryError::VersionMismatch {
            expected: expected.to_owned(),
            current,
        }
    }
}

/// Makes the mirror's `memory.md` be `content` (`None`: absent), writing only when it
/// differs. Holds the write lock (the caller's).
fn mirror(jail: &Jail, content: Option<&str>) -> Result<(), MemoryError> {
    let on_disk = read_bytes(jail)?;
    match (content, on_disk) {
        (Some(content), Some(bytes)) if bytes == content.as_bytes() => Ok(()),
        (Some(content), _) => {
            jail.write_atomic(MEMORY_FILE, content.as_bytes())?;
            Ok(())
        }
        (None, None) => Ok(()),
        (None, Some(_)) => match jail.remove_file(MEMORY_FILE) {
            Ok(()) | Err(JailError::NotFound { .. }) => Ok(()),
            Err(error) => Err(error.into()),
        },
    }
}

/// The memory file as read: its text and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The file's text (empty when it does not exist).
    pub content: String,
    /// `sha256:<hex>` of the file's bytes, or [`ABSENT_VERSION`].
    pub version: String,
}

/// Why the memory could not be read or replaced.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The memory changed since the version the write was based on; nothing was written.
    #[error(
        "the memory changed since it was read (expected version {expected}, now {current}); \
         nothing was written"
    )]
    VersionMismatch {
        /// The version the write was based on.
        expected: String,
        /// The version now.
        current: String,
    },
    /// The file or the new content is over [`MAX_MEMORY_BYTES`].
    #[error("the memory is larger than {MAX_MEMORY_BYTES} bytes")]
    TooLarge,
    /// The jail refused or the disk failed.
    #[error("memory file: {0}")]
    Jail(#[from] JailError),
    /// The team's memory in the database could not be read or written.
    #[error("the team's memory in the database: {0}")]
    Shared(String),
}

/// The version of `bytes`: `sha256:<hex>`.
pub fn version_of(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut version = String::with_capacity(7 + 64);
    version.push_str("sha256:");
    for byte in digest {
        version.push_str(&format!("{byte:02x}"));
    }
    version
}

/// Serialises writes of the memory within this process: a compare-and-swap holds it
/// from the version check to the rename, so two writers cannot both win.
static WRITE_LOCK: Mutex<()> = Mutex::new(());

fn write_lock() -> MutexGuard<'static, ()> {
    WRITE_LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The jail on the data directory `dir`.
pub fn jail(dir: &Path) -> Result<Jail, MemoryError> {
    Ok(Jail::new(dir)?)
}

/// Reads the memory file (absent → empty content, [`ABSENT_VERSION`]).
pub fn read(jail: &Jail) -> Result<Snapshot, MemoryError> {
    Ok(read_bytes(jail)?.map_or_else(
        || Snapshot {
            content: String::new(),
            version: ABSENT_VERSION.to_owned(),
        },
        |bytes| Snapshot {
            content: String::from_utf8_lossy(&bytes).into_owned(),
            version: version_of(&bytes),
        },
    ))
}

/// The file's bytes, `None` when it does not exist.
fn read_bytes(jail: &Jail) -> Result<Option<Vec<u8>>, MemoryError> {
    if !jail.exists(MEMORY_FILE)? {
        return Ok(None);
    }
    let file = jail.read(MEMORY_FILE, MAX_MEMORY_BYTES)?;
    if file.truncated {
        return Err(MemoryError::TooLarge);
    }
    Ok(Some(file.bytes))
}

/// The version now, for the last check before a rename; an unreadable file has none.
fn current_version(jail: &Jail) -> Option<String> {
    read(jail).ok().map(|snapshot| snapshot.version)
}

/// Replaces the memory with `content` if its version is still `expected`: atomically,
/// under the write lock, checked once more right before the rename (so a writer in
/// another process is noticed too). Otherwise [`MemoryError::VersionMismatch`] and
/// nothing is written. Returns the new snapshot.
pub fn replace_if(jail: &Jail, expected: &str, content: &str) -> Result<Snapshot, MemoryError> {
    replace_unless(jail, expected, content, &|| false)
}

/// [`replace_if`] that `stop` can call off at the last moment (a cancelled task).
pub(crate) fn replace_unless(
    jail: &Jail,
    expected: &str,
    content: &str,
    stop: &dyn Fn() -> bool,
) -> Result<Snapshot, MemoryError> {
    if content.len() as u64 > MAX_MEMORY_BYTES {
        return Err(MemoryError::TooLarge);
    }
    let _guard = write_lock();
    let current = read(jail)?.version;
    if current != expected {
        return Err(MemoryError::VersionMismatch {
            expected: expected.to_owned(),
            current,
        });
    }
    let changed = std::cell::RefCell::new(None);
    let abort = || {
        if stop() {
            return true;
        }
        match current_version(jail) {
            Some(now) if now == expected => false,
            now => {
                *changed.borrow_mut() = Some(now.unwrap_or_else(|| "unreadable".to_owned()));
                true
            }
        }
    };
    match jail.write_atomic_unless(MEMORY_FILE, content.as_bytes(), &abort) {
        Ok(_) => Ok(Snapshot {
            content: content.to_owned(),
            version: version_of(content.as_bytes()),
        }),
        Err(error) => match changed.into_inner() {
            Some(current) => Err(MemoryError::VersionMismatch {
                expected: expected.to_owned(),
                current,
            }),
            None => Err(error.into()),
        },
    }
}

/// Removes the memory file if its version is still `expected` (a revert of the write
/// that created it): under the write lock, like [`replace_if`]; otherwise
/// [`MemoryError::VersionMismatch`] and nothing is removed. An absent file is fine.
pub fn remove_if(jail: &Jail, expected: &str) -> Result<(), MemoryError> {
    let _guard = write_lock();
    let current = read(jail)?.version;
    if current == ABSENT_VERSION {
        return Ok(());
    }
    if current != expected {
        return Err(MemoryError::VersionMismatch {
            expected: expected.to_owned(),
            current,
        });
    }
    match jail.remove_file(MEMORY_FILE) {
        Ok(()) | Err(JailError::NotFound { .. }) => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// The memory as the system prompt shows it: at most `max_bytes` bytes of `content`, cut
/// at a character boundary, then a marker line saying how much was left out. `None` for
/// an empty (or blank) memory.
pub fn prompt_section(content: &str, max_bytes: usize) -> Option<String> {
    if content.trim().is_empty() {
        return None;
    }
    if content.len() <= max_bytes {
        return Some(content.to_owned());
    }
    let mut end = max_bytes;
    while !content.is_char_boundary(end) {
        end -= 1;
    }
    let mut shown = content[..end].to_owned();
    if !shown.ends_with('\n') {
        shown.push('\n');
    }
    shown.push_str(&format!(
        "[truncated: memory.md is {} bytes; only the first {end} are shown]",
        content.len()
    ));
    Some(shown)
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "the tests inspect and change the memory file behind the jail's back"
)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn dir() -> (tempfile::TempDir, Jail) {
        let dir = tempfile::tempdir().expect("temp dir");
        let jail = Jail::new(dir.path()).expect("jail");
        (dir, jail)
    }

    #[test]
    fn an_absent_memory_is_empty_with_a_fixed_version() {
        let (_dir, jail) = dir();
        assert_eq!(
            read(&jail).unwrap(),
            Snapshot {
                content: String::new(),
                version: ABSENT_VERSION.to_owned()
            }
        );
    }

    #[test]
    fn version_is_the_sha256_of_the_bytes() {
        assert_eq!(
            version_of(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn replace_is_a_compare_and_swap() {
        let (dir, jail) = dir();
        let first = replace_if(&jail, ABSENT_VERSION, "one\n").unwrap();
        assert_eq!(first.version, version_of(b"one\n"));
        assert_eq!(read(&jail).unwrap(), first);
        // A second writer based on the absent version loses, and nothing is written.
        let lost = replace_if(&jail, ABSENT_VERSION, "other\n").unwrap_err();
        assert!(
            matches!(&lost, MemoryError::VersionMismatch { current, .. } if *current == first.version),
            "{lost:?}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join(MEMORY_FILE)).unwrap(),
            "one\n"
        );
        let second = replace_if(&jail, &first.version, "two\n").unwrap();
        assert_eq!(read(&jail).unwrap(), second);
    }

    #[test]
    fn two_writers_from_one_version_cannot_both_win() {
        let (_dir, jail) = dir();
        let jail = std::sync::Arc::new(jail);
        let base = replace_if(&jail, ABSENT_VERSION, "base\n").unwrap().version;
        let handles: Vec<_> = (0..8)
            .map(|n| {
                let (jail, base) = (std::sync::Arc::clone(&jail), base.clone());
                std::thread::spawn(move || replace_if(&jail, &base, &format!("writer {n}\n")))
            })
            .collect();
        let wins = handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .filter(Result::is_ok)
            .count();
        assert_eq!(wins, 1);
    }

    #[test]
    fn a_change_right_before_the_rename_is_a_mismatch() {
        let (dir, jail) = dir();
        let base = replace_if(&jail, ABSENT_VERSION, "base\n").unwrap().version;
        let path = dir.path().join(MEMORY_FILE);
        // Another process writes between the check and the rename.
        let sneaky = || {
            std::fs::write(&path, "from elsewhere\n").unwrap();
            false
        };
        let error = replace_unless(&jail, &base, "mine\n", &sneaky).unwrap_err();
        assert!(
            matches!(error, MemoryError::VersionMismatch { .. }),
            "{error:?}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "from elsewhere\n");
    }

    #[test]
    fn remove_is_a_compare_and_swap_too() {
        let (_dir, jail) = dir();
        let written = replace_if(&jail, ABSENT_VERSION, "a\n").unwrap();
        let error = remove_if(&jail, &version_of(b"other")).unwrap_err();
        assert!(
            matches!(error, MemoryError::VersionMismatch { .. }),
            "{error}"
        );
        assert_eq!(read(&jail).unwrap().content, "a\n");
        remove_if(&jail, &written.version).unwrap();
        assert_eq!(read(&jail).unwrap().version, ABSENT_VERSION);
        remove_if(&jail, &written.version).unwrap();
    }

    /// The database's memory as a cell.
    #[derive(Debug, Default)]
    struct Cell(Mutex<Option<String>>);

    impl SharedMemory for Cell {
        fn load(&self) -> Result<Option<String>, MemoryError> {
            Ok(self.0.lock().unwrap().clone())
        }
        fn swap(&self, expected: &str, content: &str, _: &str) -> Result<bool, MemoryError> {
            let mut cell = self.0.lock().unwrap();
            let now = cell
                .as_ref()
                .map_or_else(|| ABSENT_VERSION.to_owned(), |c| version_of(c.as_bytes()));
            if now != expected {
                return Ok(false);
            }
            *cell = Some(content.to_owned());
            Ok(true)
        }
        fn remove(&self, expected: &str) -> Result<bool, MemoryError> {
            let mut cell = self.0.lock().unwrap();
            if cell.as_ref().map(|c| version_of(c.as_bytes())).as_deref() != Some(expected) {
                return Ok(false);
            }
            *cell = None;
            Ok(true)
        }
    }

    fn shared(cell: &Arc<Cell>) -> (tempfile::TempDir, Memory) {
        let dir = tempfile::tempdir().unwrap();
        let settings = MemorySettings {
            shared: Some(cell.clone() as Arc<dyn SharedMemory>),
            ..MemorySettings::new(dir.path())
        };
        (dir, settings.memory())
    }

    #[test]
    fn the_teams_memory_is_read_through_a_mirror_and_swapped_in_the_database() {
        let cell = Arc::new(Cell::default());
        let ((dir_a, a), (dir_b, b)) = (shared(&cell), shared(&cell));
        assert!(a.is_shared());
        let jail_a = a.open().unwrap();
        let written = a
            .replace_if(&jail_a, ABSENT_VERSION, "likes tea\n")
            .unwrap();
        assert_eq!(cell.load().unwrap().as_deref(), Some("likes tea\n"));
        // The other process's mirror is brought up to it when opened.
        assert!(!dir_b.path().join(MEMORY_FILE).exists());
        assert_eq!(b.read().unwrap(), written);
        assert_eq!(
            std::fs::read_to_string(dir_b.path().join(MEMORY_FILE)).unwrap(),
            "likes tea\n"
        );
        // A write based on the version before loses, even though A's mirror has it.
        let jail_b = b.open().unwrap();
        b.replace_if(&jail_b, &written.version, "likes coffee\n")
            .unwrap();
        let lost = a
            .replace_if(&jail_a, &written.version, "stale\n")
            .unwrap_err();
        assert!(
            matches!(&lost, MemoryError::VersionMismatch { current, .. } if *current == version_of(b"likes coffee\n")),
            "{lost:?}"
        );
        assert_eq!(cell.load().unwrap().as_deref(), Some("likes coffee\n"));
        assert_eq!(
            std::fs::read_to_string(dir_a.path().join(MEMORY_FILE)).unwrap(),
            "likes coffee\n",
            "the loser's mirror now shows the winner"
        );
        // Removal is a swap too; then both mirrors lose the file.
        let stale = a.remove_if(&jail_a, &written.version).unwrap_err();
        assert!(
            matches!(stale, MemoryError::VersionMismatch { .. }),
            "{stale:?}"
        );
        a.remove_if(&jail_a, &version_of(b"likes coffee\n"))
            .unwrap();
        assert_eq!(cell.load().unwrap(), None);
        assert_eq!(b.read().unwrap().version, ABSENT_VERSION);
        assert!(!dir_b.path().join(MEMORY_FILE).exists());
        // A cancelled write is not sent.
        let stopped = a
            .replace_unless(&jail_a, ABSENT_VERSION, "x", &|| true)
            .unwrap_err();
        assert!(
            matches!(stopped, MemoryError::Jail(JailError::Aborted { .. })),
            "{stopped:?}"
        );
        assert_eq!(cell.load().unwrap(), None);
    }

    #[test]
    fn prompt_section_caps_at_a_char_boundary_with_a_marker() {
        assert_eq!(prompt_section("  \n", 10), None);
        assert_eq!(prompt_section("short", 10), Some("short".to_owned()));
        // "é" is two bytes: a cap of 2 bytes after "a" cannot split it.
        assert_eq!(
            prompt_section("aéb", 2),
            Some("a\n[truncated: memory.md is 4 bytes; only the first 1 are shown]".to_owned())
        );
        let long = "line\n".repeat(10);
        let section = prompt_section(&long, 10).unwrap();
        assert!(section.starts_with("line\nline\n[truncated: memory.md is 50 bytes"));
    }
}
