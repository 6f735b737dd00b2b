//! The SQLite backend: one database file in WAL mode, used through synchronous methods
//! that the [`crate::Store`] facade calls on the blocking pool. Every state change is a
//! compare-and-set inside one `BEGIN IMMEDIATE` transaction, so several processes sharing
//! the file never claim, run or resolve the same row twice. The schema lives in
//! `migrations/sqlite/` and is applied on open.

mod approvals;
mod audit;
mod backup;
mod cancel;
mod changes;
mod channels;
mod chat;
mod events;
mod knowledge;
mod links;
mod logins;
mod model_calls;
mod prune;
mod remote;
mod rows;
mod schedules;
mod schema;
mod started;
mod task_search;
mod tasks;
mod users;
mod workers;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use pp_types::{Clock, Timestamp};
use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Result};

pub use schema::SCHEMA_VERSION;

/// The SQLite database: one file in WAL mode.
///
/// `Send + Sync`; share it with an `Arc`. Within a process the mutex serialises use of
/// the one connection; across processes SQLite's locks and the `BEGIN IMMEDIATE`
/// transactions do.
#[derive(Debug)]
pub(crate) struct SqliteStore {
    /// The connection. A mutex rather than a pool: writes are serialised by SQLite
    /// anyway, and the operations are short.
    connection: Mutex<Connection>,
    /// The database file, as given to [`SqliteStore::open_with_clock`].
    path: PathBuf,
    /// Where every stored time comes from (creation, changes, heartbeats, lease and
    /// session expiry checks, pruning): shared with the task service through
    /// [`crate::Store::clock`] so both agree, and replaceable in tests.
    clock: Arc<dyn Clock>,
}

impl SqliteStore {
    /// Opens the database at `path`, creating it (mode 0600 on Unix) and applying any
    /// missing migrations. Times come from the system clock.
    ///
    /// On Unix an existing database file, `-wal` or `-shm` file that its group or other
    /// users may read or write is tightened to mode 0600: it holds file contents from
    /// checkpoints. The parent directory must exist. Fails with [`Error::NewerSchema`]
    /// when the file was written by a newer build.
    #[cfg(test)]
    pub(crate) fn open(path: &Path) -> Result<SqliteStore> {
        Self::open_with_clock(path, Arc::new(pp_types::SystemClock))
    }

    /// Like [`SqliteStore::open_with_clock`], with every time taken from `clock`.
    pub(crate) fn open_with_clock(path: &Path, clock: Arc<dyn Clock>) -> Result<SqliteStore> {
        let open_error = |source: Box<dyn std::error::Error + Send + Sync>| Error::Open {
            path: path.to_owned(),
            source,
        };
        schema::create_file(path).map_err(|error| open_error(Box::new(error)))?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut connection = Connection::open_with_flags(path, flags)
            .and_then(|connection| schema::configure(&connection).map(|()| connection))
            .map_err(|error| open_error(Box::new(error)))?;
        schema::migrate(&mut connection)?;
        Ok(SqliteStore {
            connection: Mutex::new(connection),
            path: path.to_owned(),
            clock,
        })
    }

    /// The current time by the store's clock.
    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The database file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open database.
    pub(crate) fn schema_version(&self) -> Result<i64> {
        Ok(schema::user_version(&self.connection())?)
    }

    fn connection(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves no transaction open (dropping a
        // `Transaction` rolls it back), so the connection is still sound.
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `work` in one `BEGIN IMMEDIATE` transaction: the write lock is taken first, so
    /// what `work` reads cannot change before it writes. Commits only if `work` succeeds.
    ///
    /// Inside a batch ([`SqliteStore::begin_batch`]: the write lock is already held) it
    /// runs in a savepoint of the batch instead: released if `work` succeeds, rolled back
    /// (with nothing else of the batch) if it fails. Its writes are then durable and
    /// visible to others when the batch commits.
    pub(crate) fn write<T>(&self, work: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let connection = self.connection();
        let (open, keep, undo): (&str, &str, &[&str]) = if connection.is_autocommit() {
            ("BEGIN IMMEDIATE", "COMMIT", &["ROLLBACK"])
        } else {
            (
                "SAVEPOINT pp_call",
                "RELEASE pp_call",
                &["ROLLBACK TO pp_call", "RELEASE pp_call"],
            )
        };
        control(&connection, open)?;
        let mut opened = Opened {
            connection: &connection,
            undo,
        };
        let value = work(&connection)?;
        control(&connection, keep)?;
        opened.undo = &[];
        Ok(value)
    }

    /// Opens a batch: one `BEGIN IMMEDIATE` transaction that the calls run next join
    /// ([`SqliteStore::write`]), until [`SqliteStore::end_batch`]. Only the store's queue
    /// does this, with the calls of one batch run one after the other on its thread.
    pub(crate) fn begin_batch(&self) -> Result<()> {
        Ok(control(&self.connection(), "BEGIN IMMEDIATE")?)
    }

    /// Whether a batch is still open: SQLite rolls the whole transaction back by itself
    /// on some errors (disk full, I/O), and then no later call may count on it.
    pub(crate) fn in_batch(&self) -> bool {
        !self.connection().is_autocommit()
    }

    /// Ends the open batch: commits it, or rolls it back if `commit` is false (or the
    /// commit fails). If SQLite already rolled it back by itself, there is nothing to
    /// end and the answer is an error: the batch's writes are gone.
    pub(crate) fn end_batch(&self, commit: bool) -> Result<()> {
        let connection = self.connection();
        if connection.is_autocommit() {
            return Err(Error::Sqlite(Box::new(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
                Some("the batch transaction was rolled back by SQLite".to_owned()),
            ))));
        }
        if commit {
            match control(&connection, "COMMIT") {
                Ok(()) => return Ok(()),
                Err(error) => {
                    if !connection.is_autocommit() {
                        let _ = control(&connection, "ROLLBACK");
                    }
                    return Err(error.into());
                }
            }
        }
        control(&connection, "ROLLBACK")?;
        Ok(())
    }

    /// Runs `work` on the connection (one statement: no transaction needed).
    pub(crate) fn read<T>(&self, work: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        work(&self.connection())
    }
}

/// Runs one of the statements that open and end transactions and savepoints, kept
/// prepared: every store call runs two of them, and rusqlite's `Transaction` and
/// `Savepoint` compile theirs afresh each time.
fn control(connection: &Connection, sql: &str) -> rusqlite::Result<()> {
    connection.prepare_cached(sql)?.execute([])?;
    Ok(())
}

/// An open transaction or savepoint of [`SqliteStore::write`]: undone when dropped (the
/// work failed, panicked or could not be kept) unless `undo` was emptied once kept.
struct Opened<'c> {
    connection: &'c Connection,
    undo: &'static [&'static str],
}

impl Drop for Opened<'_> {
    fn drop(&mut self) {
        for sql in self.undo {
            // Nothing to undo if SQLite already rolled the transaction back itself.
            let _ = control(self.connection, sql);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write outside any batch that fails or panics leaves nothing behind and no
    /// transaction open; the next write goes through.
    #[test]
    fn a_write_that_fails_or_panics_is_undone_and_the_connection_stays_usable() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("pp.db")).unwrap();
        let insert = |connection: &Connection, x: i64| -> Result<()> {
            connection.execute("INSERT INTO t (x) VALUES (?1)", [x])?;
            Ok(())
        };
        store
            .write(|connection| Ok(connection.execute_batch("CREATE TABLE t (x INTEGER)")?))
            .unwrap();
        let failed: Result<()> = store.write(|connection| {
            insert(connection, 1)?;
            Err(Error::Worker("no".to_owned()))
        });
        assert!(failed.is_err());
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            store.write(|connection| -> Result<()> {
                insert(connection, 2)?;
                panic!("boom")
            })
        }));
        assert!(panicked.is_err());
        assert!(store.connection().is_autocommit());
        store.write(|connection| insert(connection, 3)).unwrap();
        let rows: Vec<i64> = store
            .connection()
            .prepare("SELECT x FROM t")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(rows, [3]);
    }

    #[test]
    fn store_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<SqliteStore>();
    }
}
