//! Opening an SQLite file: creation, file modes, WAL, migrations from old versions,
//! several processes opening one fresh file. SQLite-only: these are about the file.

use std::sync::Arc;

use pp_store::{Error, SCHEMA_VERSION, Store};
use pp_types::TaskState;

use crate::TestDb;

/// A database as a version 3 build left it, with one login (secret "abc") valid for ever.
fn version_3_database(path: &std::path::Path) {
    let connection = rusqlite::Connection::open(path).unwrap();
    for sql in [
        include_str!("../../../migrations/sqlite/0001_init.sql"),
        include_str!("../../../migrations/sqlite/0002_heartbeat.sql"),
        include_str!("../../../migrations/sqlite/0003_prune_guard.sql"),
    ] {
        connection.execute_batch(sql).unwrap();
    }
    connection.pragma_update(None, "user_version", 3).unwrap();
    // Only the SHA-256 of the login's secret is stored.
    connection
        .execute(
            "INSERT INTO sessions (id_sha256, created_at, expires_at) VALUES \
             ('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', 1, ?1)",
            [i64::MAX],
        )
        .unwrap();
}

#[tokio::test]
async fn a_new_file_is_migrated_to_the_current_version() {
    let db = TestDb::sqlite().await;
    assert_eq!(db.store.schema_version().await.unwrap(), SCHEMA_VERSION);
    let version: i64 = db
        .raw()
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(db.store.path(), Some(db.path().as_path()));
}

#[tokio::test]
async fn the_journal_is_wal_and_foreign_keys_are_on() {
    let db = TestDb::sqlite().await;
    let mode: String = db
        .raw()
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    // Foreign keys: an event for a task that does not exist is refused.
    let error = db
        .store
        .append_events(&"t_missing".into(), &[crate::started("x")])
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::NotFound { what: "task", .. }),
        "{error}"
    );
}

#[tokio::test]
async fn a_newer_schema_is_refused_with_a_clear_error() {
    let db = TestDb::sqlite().await;
    db.raw()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    let error = crate::open_file(&db.path()).await.unwrap_err();
    assert!(
        matches!(error, Error::NewerSchema { found, supported }
            if found == SCHEMA_VERSION + 1 && supported == SCHEMA_VERSION),
        "{error:?}"
    );
    assert!(error.to_string().contains("newer than this build supports"));
}

#[tokio::test]
async fn a_missing_directory_is_an_open_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing").join("pocketpilot.db");
    let error = crate::open_file(&path).await.unwrap_err();
    assert!(matches!(error, Error::Open { .. }), "{error:?}");
    assert!(error.to_string().contains("missing"), "{error}");
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pocketpilot.db");
    std::fs::write(&path, vec![b'x'; 4096]).unwrap();
    assert!(crate::open_file(&path).await.is_err());
}

#[cfg(unix)]
#[tokio::test]
async fn the_file_is_private_to_its_owner() {
    use std::os::unix::fs::PermissionsExt;
    let db = TestDb::sqlite().await;
    db.create("make the wal file exist").await;
    for suffix in ["", "-wal", "-shm"] {
        let path = format!("{}{suffix}", db.path().display());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{path}: {mode:o}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn processes_opening_a_fresh_file_at_once_migrate_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pocketpilot.db");
    let mut processes = tokio::task::JoinSet::new();
    let barrier = Arc::new(tokio::sync::Barrier::new(8));
    for _ in 0..8 {
        let (barrier, path) = (Arc::clone(&barrier), path.clone());
        processes.spawn(async move {
            barrier.wait().await;
            let store = crate::open_file(&path).await.unwrap();
            store.create_task(crate::new_task("hello")).await.unwrap();
        });
    }
    processes.join_all().await;
    let store = crate::open_file(&path).await.unwrap();
    assert_eq!(store.schema_version().await.unwrap(), SCHEMA_VERSION);
    assert_eq!(
        store
            .list_tasks(Some(TaskState::Queued), 100)
            .await
            .unwrap()
            .len(),
        8
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_readable_database_and_its_logs_are_tightened_on_open() {
    use std::os::unix::fs::PermissionsExt;
    let db = TestDb::sqlite().await;
    let task = db.create("secret file contents").await;
    // Keep a second connection open so the -wal and -shm files stay.
    let keep = db.open_again().await;
    let paths: Vec<_> = ["", "-wal", "-shm"]
        .iter()
        .map(|suffix| crate::sidecar(&db.path(), suffix))
        .collect();
    for path in &paths {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let reopened = db.open_again().await;
    for path in &paths {
        let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}: {mode:o}", path.display());
    }
    assert_eq!(reopened.task(&task.id).await.unwrap(), task);
    drop(keep);
    // Owner-only modes are left alone.
    std::fs::set_permissions(&paths[0], std::fs::Permissions::from_mode(0o700)).unwrap();
    drop(crate::open_file(&db.path()).await.unwrap());
    let mode = std::fs::metadata(&paths[0]).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
}

#[tokio::test]
async fn a_version_3_database_migrates_and_keeps_its_logins() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pocketpilot.db");
    version_3_database(&path);
    let store = crate::open_file(&path).await.unwrap();
    assert_eq!(
        store.schema_version().await.unwrap(),
        pp_store::SCHEMA_VERSION
    );
    assert!(store.login_valid("abc").await.unwrap());
    assert!(!store.login_valid("abd").await.unwrap());
    store.delete_login("abc").await.unwrap();
    assert!(!store.login_valid("abc").await.unwrap());
    assert!(store.chat_sessions(100).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_version_3_backup_restores_and_migrates() {
    let dir = tempfile::tempdir().unwrap();
    let backup = dir.path().join("old.db");
    version_3_database(&backup);
    let database = dir.path().join("pocketpilot.db");
    Store::restore_file(&backup, &database).await.unwrap();
    let store = crate::open_file(&database).await.unwrap();
    assert!(store.login_valid("abc").await.unwrap());
    // And a current database backs up and restores too (its login table has the new name).
    let current = dir.path().join("current.db");
    store.backup_to(&current).await.unwrap();
    Store::restore_file(&current, &dir.path().join("again.db"))
        .await
        .unwrap();
}
