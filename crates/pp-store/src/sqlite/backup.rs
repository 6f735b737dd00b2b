//! Copying the database out ([`crate::Store::backup_to`]) and putting a copy back
//! ([`crate::Store::restore_file`]).
//!
//! A backup uses SQLite's online backup API on a connection of its own: it copies every
//! page in one step, which in WAL mode is one read transaction, so the copy is one
//! consistent snapshot while other connections (a running server) keep writing, and the
//! store's own connection stays free. Both directions write a private temporary file
//! next to the destination, fsync it and rename it into place, so a crash leaves either
//! the old file or the new one, never half of one.
#![expect(
    clippy::disallowed_methods,
    reason = "the operator's own database and backup paths from the command line, never a \
              model-supplied path"
)]

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, OpenFlags};

use super::SqliteStore as Store;
use super::schema::{self, BUSY_TIMEOUT, SCHEMA_VERSION};
use crate::error::{Error, Result};
use crate::ids;

/// The tables every PocketPilot database has, whatever its schema version (plus the
/// login table, see [`login_table`]).
const REQUIRED_TABLES: &[&str] = &["approvals", "audit", "events", "tasks"];

/// The console login table at schema `version`: `sessions` until migration 4 renamed it.
fn login_table(version: i64) -> &'static str {
    if version >= 4 {
        "console_logins"
    } else {
        "sessions"
    }
}

impl Store {
    /// Writes a consistent copy of the database to `dest` (replacing it atomically if it
    /// exists; mode 0600 on Unix) while other connections keep working.
    ///
    /// The copy is a self-contained file (rollback journal, no `-wal`). `dest` may not be
    /// the database itself.
    pub(crate) fn backup_to(&self, dest: &Path) -> Result<()> {
        if is_same_file(dest, &self.path) {
            return Err(io_error(
                "write a backup over the live database",
                dest,
                io::Error::new(io::ErrorKind::InvalidInput, "choose another file"),
            ));
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let source = Connection::open_with_flags(&self.path, flags)?;
        source.busy_timeout(BUSY_TIMEOUT)?;
        let (temp, file) = create_temp_next_to(dest)?;
        let copied = copy_pages(&source, &temp)
            .and_then(|()| sync(&file, &temp))
            .and_then(|()| rename_durably(&temp, dest));
        if copied.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        copied
    }

    /// Replaces the database at `database` with the backup `backup`, atomically.
    ///
    /// The caller guarantees that nothing has `database` open (no server runs on its
    /// data directory). `backup` is first copied to a private temporary file next to
    /// `database` and checked there: an SQLite file that passes `PRAGMA quick_check`,
    /// with the PocketPilot tables and a schema version this build knows
    /// (1..=[`SCHEMA_VERSION`]; an older one is migrated at the next open). Anything
    /// else is [`Error::NotAStore`] and leaves `database` untouched. Then the stale
    /// `-wal` and `-shm` files are removed and the copy is renamed over `database`
    /// (mode 0600 on Unix).
    pub(crate) fn restore_file(backup: &Path, database: &Path) -> Result<()> {
        let backup_wal = schema::sidecar(backup, "-wal");
        if std::fs::metadata(&backup_wal).is_ok_and(|meta| meta.len() > 0) {
            return Err(not_a_store(
                backup,
                format!(
                    "it has a write-ahead log ({}) that a plain copy would lose; make the \
                     copy with `pocketpilot backup`",
                    backup_wal.display()
                ),
            ));
        }
        let mut source = File::open(backup).map_err(|error| io_error("read", backup, error))?;
        let (temp, mut file) = create_temp_next_to(database)?;
        let restored = io::copy(&mut source, &mut file)
            .map_err(|error| io_error("copy the backup to", &temp, error))
            .and_then(|_| check_store(&temp, backup))
            .and_then(|()| sync(&file, &temp))
            .and_then(|()| remove_sidecars(database))
            .and_then(|()| rename_durably(&temp, database));
        if restored.is_err() {
            let _ = std::fs::remove_file(&temp);
            for suffix in ["-wal", "-shm", "-journal"] {
                let _ = std::fs::remove_file(schema::sidecar(&temp, suffix));
            }
        }
        restored
    }
}

/// Copies every page of `source` into a new database at `temp`, as one snapshot, and
/// leaves `temp` a self-contained rollback-journal database.
fn copy_pages(source: &Connection, temp: &Path) -> Result<()> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut target = Connection::open_with_flags(temp, flags)?;
    {
        let backup = Backup::new(source, &mut target)?;
        let deadline = Instant::now() + BUSY_TIMEOUT;
        // -1: all pages in one step, so the copy is one read transaction (one snapshot).
        loop {
            match backup.step(-1)? {
                StepResult::Done => break,
                StepResult::More => {}
                StepResult::Busy | StepResult::Locked if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                StepResult::Busy | StepResult::Locked => {
                    return Err(Error::Sqlite(Box::new(rusqlite::Error::SqliteFailure(
                        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                        Some("the database stayed locked during the backup".into()),
                    ))));
                }
                _ => {}
            }
        }
    }
    let _mode: String = target.query_row("PRAGMA journal_mode = DELETE", [], |row| row.get(0))?;
    target.close().map_err(|(_, error)| error)?;
    Ok(())
}

/// Checks that `temp` (a copy of `origin`) is a PocketPilot database this build can
/// open, and leaves it a self-contained rollback-journal file.
fn check_store(temp: &Path, origin: &Path) -> Result<()> {
    let fail = |reason: String| not_a_store(origin, reason);
    let sqlite = |error: rusqlite::Error| fail(format!("not a readable SQLite database ({error})"));
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection = Connection::open_with_flags(temp, flags).map_err(sqlite)?;
    let check: String = connection
        .query_row("PRAGMA quick_check", [], |row| row.get(0))
        .map_err(sqlite)?;
    if check != "ok" {
        return Err(fail(format!("the integrity check failed: {check}")));
    }
    let version = schema::user_version(&connection).map_err(sqlite)?;
    if !(1..=SCHEMA_VERSION).contains(&version) {
        return Err(fail(format!(
            "schema version {version} is not one this build knows (1 to {SCHEMA_VERSION})"
        )));
    }
    for table in REQUIRED_TABLES.iter().chain([&login_table(version)]) {
        let found: bool = connection
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
                [table],
                |row| row.get(0),
            )
            .map_err(sqlite)?;
        if !found {
            return Err(fail(format!("it has no `{table}` table")));
        }
    }
    let _mode: String = connection
        .query_row("PRAGMA journal_mode = DELETE", [], |row| row.get(0))
        .map_err(sqlite)?;
    connection.close().map_err(|(_, error)| sqlite(error))?;
    Ok(())
}

/// Creates `.<name>.<random>.tmp` next to `path`, new and private (0600 on Unix).
fn create_temp_next_to(path: &Path) -> Result<(PathBuf, File)> {
    let name = path.file_name().ok_or_else(|| {
        io_error(
            "write",
            path,
            io::Error::new(io::ErrorKind::InvalidInput, "not a file name"),
        )
    })?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(".{}.tmp", ids::random_suffix()?));
    let temp = path.with_file_name(temp_name);
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let file = options
        .open(&temp)
        .map_err(|error| io_error("create", &temp, error))?;
    Ok((temp, file))
}

fn sync(file: &File, path: &Path) -> Result<()> {
    file.sync_all()
        .map_err(|error| io_error("flush to disk", path, error))
}

/// Removes the database's `-wal` and `-shm` files: a write-ahead log left from the old
/// database must never be replayed into the restored one.
fn remove_sidecars(database: &Path) -> Result<()> {
    for suffix in ["-wal", "-shm"] {
        let side = schema::sidecar(database, suffix);
        match std::fs::remove_file(&side) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(io_error("remove", &side, error)),
        }
    }
    Ok(())
}

/// Renames `temp` to `dest` and flushes the directory entry.
fn rename_durably(temp: &Path, dest: &Path) -> Result<()> {
    std::fs::rename(temp, dest).map_err(|error| io_error("replace", dest, error))?;
    #[cfg(unix)]
    if let Some(parent) = dest.parent() {
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        File::open(parent)
            .and_then(|directory| directory.sync_all())
            .map_err(|error| io_error("flush the directory of", dest, error))?;
    }
    Ok(())
}

/// Whether `a` and `b` name the same existing file.
fn is_same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn io_error(action: &'static str, path: &Path, source: io::Error) -> Error {
    Error::File {
        action,
        path: path.to_owned(),
        source,
    }
}

fn not_a_store(path: &Path, reason: String) -> Error {
    Error::NotAStore {
        path: path.to_owned(),
        reason,
    }
}
