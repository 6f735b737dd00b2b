//! Creating the database file, connection settings and versioned migrations.
//!
//! Migrations live in `migrations/sqlite/NNNN_*.sql`, are embedded at build time and tracked
//! with `PRAGMA user_version`: version `n` means the first `n` files have been applied.
//! Each file is applied in its own `BEGIN IMMEDIATE` transaction, so two processes
//! opening a fresh database at once apply it exactly once.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, TransactionBehavior};

use crate::error::{Error, Result};

/// Every migration, in order; index `i` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/sqlite/0001_init.sql"),
    include_str!("../../migrations/sqlite/0002_heartbeat.sql"),
    include_str!("../../migrations/sqlite/0003_prune_guard.sql"),
    include_str!("../../migrations/sqlite/0004_chat_sessions.sql"),
    include_str!("../../migrations/sqlite/0005_changes.sql"),
    include_str!("../../migrations/sqlite/0006_change_moves.sql"),
    include_str!("../../migrations/sqlite/0007_usage.sql"),
    include_str!("../../migrations/sqlite/0008_schedules.sql"),
    include_str!("../../migrations/sqlite/0009_task_origin.sql"),
    include_str!("../../migrations/sqlite/0010_channels.sql"),
    include_str!("../../migrations/sqlite/0011_workers.sql"),
    include_str!("../../migrations/sqlite/0012_users.sql"),
    include_str!("../../migrations/sqlite/0013_change_modes.sql"),
    include_str!("../../migrations/sqlite/0014_edited_preview.sql"),
    include_str!("../../migrations/sqlite/0015_changesets.sql"),
    include_str!("../../migrations/sqlite/0016_team_knowledge.sql"),
    include_str!("../../migrations/sqlite/0017_started_calls.sql"),
    include_str!("../../migrations/sqlite/0018_cancel_requests.sql"),
    include_str!("../../migrations/sqlite/0019_via.sql"),
    include_str!("../../migrations/sqlite/0020_approval_links.sql"),
    include_str!("../../migrations/sqlite/0021_remote_messages.sql"),
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// How long a statement waits for another process's write lock before failing.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(15);

/// Creates the database file if it is missing, readable and writable by its owner only.
///
/// On Unix an existing file that its group or other users may read or write is tightened
/// to 0600 (it holds file contents from checkpoints), and so are existing `-wal` and
/// `-shm` files; SQLite gives the `-wal` and `-shm` files it creates the mode of the
/// database file.
///
/// An existing file is never opened here, only `chmod`ed by path: another connection of
/// this process may have it open, and closing any descriptor of a file drops all of the
/// process's POSIX locks on it, SQLite's included (another process could then reset the
/// shared-memory file under a live mapping).
#[expect(
    clippy::disallowed_methods,
    reason = "the operator's own database path from configuration, not a model-supplied path"
)]
pub(crate) fn create_file(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(path) {
        Ok(file) => drop(file),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(error),
    }
    #[cfg(unix)]
    for suffix in ["", "-wal", "-shm"] {
        make_private(&sidecar(path, suffix))?;
    }
    Ok(())
}

/// Sets mode 0600 on a regular file whose group or other users have any access (Unix);
/// a missing file or anything else (a link) is left alone.
#[cfg(unix)]
#[expect(
    clippy::disallowed_methods,
    reason = "the operator's own database files, not a model-supplied path"
)]
pub(crate) fn make_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

/// The `-wal` or `-shm` file next to the database `path`.
pub(crate) fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Connection settings, set once per connection in one batch: WAL, `synchronous`,
/// foreign keys.
///
/// `synchronous = NORMAL` is durable across application crashes in WAL mode; a power
/// loss may lose the last transactions but never corrupts the file.
const PRAGMAS: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                       PRAGMA foreign_keys = ON;";

/// Statements each connection keeps prepared (`prepare_cached`). A served task's calls use
/// a few dozen different statements; with rusqlite's default of 16 they pushed each other
/// out and were compiled again call after call.
const STATEMENTS_KEPT: usize = 96;

/// Connection settings: busy timeout, the query planner's stability guarantee, the
/// statement cache, then [`PRAGMAS`].
///
/// The stability guarantee (`SQLITE_DBCONFIG_ENABLE_QPSG`): without it SQLite, as bundled
/// here, marks a statement whose plan might depend on a bound value (`task_id = ?1` on an
/// indexed column is enough) to be compiled again each time a new value is bound, so
/// every kept statement was compiled on every use: 7 % of the store queue's time under
/// load. With it a statement keeps the plan it was first compiled with; the store's
/// queries are indexed lookups whose plan does not depend on the value.
///
/// Switching a fresh file to WAL needs an exclusive lock, and SQLite answers `SQLITE_BUSY`
/// at once, without its busy handler, when another process holds a lock meanwhile (seen
/// when several processes open a new data directory together): that switch is retried
/// here, with short growing pauses, until [`BUSY_TIMEOUT`] has passed.
pub(crate) fn configure(connection: &Connection) -> rusqlite::Result<()> {
    connection.busy_timeout(BUSY_TIMEOUT)?;
    connection.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    connection.set_prepared_statement_cache_capacity(STATEMENTS_KEPT);
    let deadline = Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(2);
    loop {
        match connection.execute_batch(PRAGMAS) {
            Err(rusqlite::Error::SqliteFailure(failure, _))
                if failure.code == rusqlite::ErrorCode::DatabaseBusy
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            result => return result,
        }
    }
}

/// The database's schema version.
pub(crate) fn user_version(connection: &Connection) -> rusqlite::Result<i64> {
    connection.pragma_query_value(None, "user_version", |row| row.get(0))
}

/// Applies every migration the database lacks, one transaction each.
pub(crate) fn migrate(connection: &mut Connection) -> Result<()> {
    migrate_with(connection, MIGRATIONS)
}

fn migrate_with(connection: &mut Connection, migrations: &[&str]) -> Result<()> {
    let supported = i64::try_from(migrations.len()).unwrap_or(i64::MAX);
    // The common case, an up-to-date database, costs this one read and no write lock.
    // The version only grows, so a current one cannot go stale before the next query.
    match user_version(connection)? {
        found if found == supported => return Ok(()),
        found if found > supported => return Err(Error::NewerSchema { found, supported }),
        _ => {}
    }
    loop {
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Read under the write lock: another process may have migrated meanwhile.
        let found = user_version(&transaction)?;
        if found > supported {
            return Err(Error::NewerSchema { found, supported });
        }
        let Some(sql) = usize::try_from(found)
            .ok()
            .and_then(|index| migrations.get(index))
        else {
            return Ok(());
        };
        transaction.execute_batch(sql)?;
        transaction.pragma_update(None, "user_version", found + 1)?;
        transaction.commit()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table_names(connection: &Connection) -> Vec<String> {
        let mut statement = connection
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap();
        statement
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    #[test]
    fn migrations_apply_in_order_and_only_once() {
        let mut connection = Connection::open_in_memory().unwrap();
        let steps = ["CREATE TABLE a (x INTEGER)", "CREATE TABLE b (y INTEGER)"];
        migrate_with(&mut connection, &steps[..1]).unwrap();
        assert_eq!(user_version(&connection).unwrap(), 1);
        migrate_with(&mut connection, &steps).unwrap();
        migrate_with(&mut connection, &steps).unwrap();
        assert_eq!(user_version(&connection).unwrap(), 2);
        assert_eq!(table_names(&connection), ["a", "b"]);
    }

    #[test]
    fn a_failing_migration_leaves_the_previous_version() {
        let mut connection = Connection::open_in_memory().unwrap();
        let steps = ["CREATE TABLE a (x INTEGER)", "CREATE TABLE c (z); NOT SQL"];
        assert!(matches!(
            migrate_with(&mut connection, &steps),
            Err(Error::Sqlite(_))
        ));
        assert_eq!(user_version(&connection).unwrap(), 1);
        assert_eq!(table_names(&connection), ["a"]);
    }

    #[test]
    fn a_newer_database_is_refused() {
        let mut connection = Connection::open_in_memory().unwrap();
        connection.pragma_update(None, "user_version", 7).unwrap();
        let error = migrate_with(&mut connection, &["SELECT 1"]).unwrap_err();
        assert!(matches!(
            error,
            Error::NewerSchema {
                found: 7,
                supported: 1
            }
        ));
    }

    #[test]
    fn opening_a_current_database_takes_no_write_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pocketpilot.db");
        drop(super::super::SqliteStore::open(&path).unwrap());
        // Another process is in the middle of a write.
        let writer = Connection::open(&path).unwrap();
        writer.execute_batch("BEGIN IMMEDIATE").unwrap();
        let store = super::super::SqliteStore::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        writer.execute_batch("COMMIT").unwrap();
    }

    #[test]
    fn pragmas_are_set_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let connection = Connection::open(dir.path().join("db")).unwrap();
        configure(&connection).unwrap();
        let mode: String = connection
            .pragma_query_value(None, "journal_mode", |row| row.get(0))
            .unwrap();
        let synchronous: i64 = connection
            .pragma_query_value(None, "synchronous", |row| row.get(0))
            .unwrap();
        let foreign_keys: i64 = connection
            .pragma_query_value(None, "foreign_keys", |row| row.get(0))
            .unwrap();
        assert_eq!((mode.as_str(), synchronous, foreign_keys), ("wal", 1, 1));
    }

    /// A kept statement is compiled once, not again for every new value bound to it (the
    /// query planner's stability guarantee): the bundled SQLite would otherwise compile
    /// this indexed lookup again on every use.
    #[test]
    fn a_kept_statement_is_not_compiled_again_for_each_new_value() {
        let dir = tempfile::tempdir().unwrap();
        let store = super::super::SqliteStore::open(&dir.path().join("pocketpilot.db")).unwrap();
        let connection = store.connection();
        for task in ["t_1", "t_2", "t_3"] {
            let mut statement = connection
                .prepare_cached("SELECT id FROM approvals WHERE task_id = ?1 ORDER BY rowid")
                .unwrap();
            let found: Vec<String> = statement
                .query_map([task], |row| row.get(0))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            assert!(found.is_empty());
            assert_eq!(
                statement.get_status(rusqlite::StatementStatus::RePrepare),
                0,
                "compiled again when {task} was bound"
            );
        }
    }

    /// Migration 0006 rebuilds `changes` (new kinds, `from_path`): rows, their
    /// self-references and foreign keys survive it, and the new CHECKs hold.
    #[test]
    fn the_change_log_rebuild_keeps_every_row() {
        let mut connection = Connection::open_in_memory().unwrap();
        connection
            .execute_batch("PRAGMA foreign_keys = ON;")
            .unwrap();
        migrate_with(&mut connection, &MIGRATIONS[..5]).unwrap();
        connection
            .execute_batch(
                "INSERT INTO tasks (id, prompt, workspace, workspace_path, state, created_by, \
                 created_at, updated_at) VALUES ('t_1', 'p', 'w', '/w', 'completed', 'operator', 0, 0);
                 INSERT INTO changes (id, task_id, tool, kind, path, at, before_state, state) \
                 VALUES ('c_1', 't_1', 'write_file', 'created', 'a.txt', 1, 'absent', 'done');
                 INSERT INTO changes (id, task_id, tool, kind, path, at, before_state, reverts, state) \
                 VALUES ('c_2', 't_1', 'revert', 'reverted', 'a.txt', 2, 'none', 'c_1', 'done');
                 UPDATE changes SET reverted_by = 'c_2' WHERE id = 'c_1';",
            )
            .unwrap();
        migrate(&mut connection).unwrap();
        let rows: Vec<(String, String, Option<String>, Option<String>)> = connection
            .prepare("SELECT id, kind, reverts, reverted_by FROM changes ORDER BY rowid")
            .unwrap()
            .query_map([], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(
            rows,
            [
                ("c_1".into(), "created".into(), None, Some("c_2".into())),
                ("c_2".into(), "reverted".into(), Some("c_1".into()), None)
            ]
        );
        let insert = |kind: &str, from: Option<&str>, before: &str| {
            connection.execute(
                "INSERT INTO changes (id, task_id, tool, kind, path, from_path, at, \
                 before_state) VALUES (?1, 't_1', 'x', ?1, 'b', ?2, 3, ?3)",
                rusqlite::params![kind, from, before],
            )
        };
        insert("moved", Some("a"), "absent").unwrap();
        insert("deleted", None, "folder").unwrap();
        insert("folder_created", None, "absent").unwrap();
        assert!(
            insert("edited", Some("a"), "kept").is_err(),
            "from_path only on moves"
        );
        let violations: i64 = connection
            .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |row| {
                row.get(0)
            })
            .unwrap();
        assert_eq!(violations, 0);
    }

    #[test]
    fn the_real_schema_applies() {
        let mut connection = Connection::open_in_memory().unwrap();
        migrate(&mut connection).unwrap();
        assert_eq!(user_version(&connection).unwrap(), SCHEMA_VERSION);
        let tables = table_names(&connection);
        for table in [
            "approvals",
            "audit",
            "changes",
            "chat_sessions",
            "console_logins",
            "events",
            "session_turns",
            "tasks",
        ] {
            assert!(
                tables.iter().any(|name| name == table),
                "{table}: {tables:?}"
            );
        }
    }
}
