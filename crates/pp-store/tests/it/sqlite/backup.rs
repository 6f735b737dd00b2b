//! Backup (online, while others write) and restore (validated, atomic).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use pp_store::{Error, SCHEMA_VERSION, Store};
use pp_types::TaskState;

use crate::{TestDb, new_task, started};

fn count(connection: &rusqlite::Connection, sql: &str) -> i64 {
    connection.query_row(sql, [], |row| row.get(0)).unwrap()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_another_connection_writes_is_consistent() {
    let db = TestDb::sqlite().await;
    let out = tempfile::tempdir().unwrap();
    let writer = db.open_again().await;
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicUsize::new(0));
    let writing = {
        let (stop, written) = (Arc::clone(&stop), Arc::clone(&written));
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                // Each iteration is two transactions: a task with its audit row, then
                // three events at once. A consistent copy sees whole transactions only.
                let task = writer.create_task(new_task("busy")).await.unwrap();
                writer
                    .append_events(&task.id, &[started("a"), started("b"), started("c")])
                    .await
                    .unwrap();
                written.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    while written.load(Ordering::SeqCst) < 5 {
        tokio::task::yield_now().await;
    }
    let mut backups = Vec::new();
    for index in 0..5 {
        let path = out.path().join(format!("copy-{index}.db"));
        db.store.backup_to(&path).await.unwrap();
        backups.push((path, written.load(Ordering::SeqCst)));
    }
    stop.store(true, Ordering::SeqCst);
    writing.await.unwrap();
    let live = db.raw();
    let live_tasks = count(&live, "SELECT COUNT(*) FROM tasks");
    for (path, written_after) in &backups {
        let copy = rusqlite::Connection::open(path).unwrap();
        let check: String = copy
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        let journal: String = copy
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .unwrap();
        assert_eq!(journal, "delete", "a self-contained file");
        let tasks = count(&copy, "SELECT COUNT(*) FROM tasks");
        assert!(tasks >= 5 && tasks <= live_tasks, "{tasks}");
        assert!(
            usize::try_from(tasks).unwrap() <= written_after + 1,
            "taken before the writer's later tasks"
        );
        assert_eq!(
            count(
                &copy,
                "SELECT COUNT(*) FROM audit WHERE action = 'task_created'"
            ),
            tasks,
            "every task with its audit row"
        );
        let events = count(&copy, "SELECT COUNT(*) FROM events");
        assert_eq!(events % 3, 0, "only whole event batches: {events}");
        assert!(events >= 3 * (tasks - 1) && events <= 3 * tasks, "{events}");
        drop(copy);
        let reopened = crate::open_file(path).await.unwrap();
        assert_eq!(reopened.schema_version().await.unwrap(), SCHEMA_VERSION);
        #[cfg(unix)]
        assert_eq!(mode(path), 0o600);
    }
    // Nothing but the copies was left behind (no temp files, no -wal beside a copy).
    drop(live);
    let names = files_in(out.path());
    assert!(
        names.iter().all(|name| name.starts_with("copy-")),
        "{names:?}"
    );
}

#[tokio::test]
async fn a_backup_replaces_an_existing_file_and_never_the_database_itself() {
    let db = TestDb::sqlite().await;
    let task = db.create("keep").await;
    let out = tempfile::tempdir().unwrap();
    let path = out.path().join("backup.db");
    std::fs::write(&path, "old contents").unwrap();
    db.store.backup_to(&path).await.unwrap();
    assert_eq!(
        crate::open_file(&path)
            .await
            .unwrap()
            .task(&task.id)
            .await
            .unwrap(),
        task
    );

    let error = db.store.backup_to(&db.path()).await.unwrap_err();
    assert!(matches!(error, Error::File { .. }), "{error:?}");
    assert_eq!(db.store.task(&task.id).await.unwrap(), task);
}

#[tokio::test]
async fn restore_puts_a_backup_back_and_drops_the_stale_log() {
    let db = TestDb::sqlite().await;
    let kept = db.create("in the backup").await;
    let backup = db.dir().join("backup.db");
    db.store.backup_to(&backup).await.unwrap();
    let later = db.create("after the backup").await;
    db.store
        .claim(&later.id, &[TaskState::Queued])
        .await
        .unwrap();
    let path = db.path();
    let clock = db.clock.clone();
    let dir = db.dir().to_path_buf();
    drop(db.store);
    // A write-ahead log of the replaced database must not be replayed into the backup.
    std::fs::write(crate::sidecar(&path, "-wal"), vec![7u8; 4096]).unwrap();

    Store::restore_file(&backup, &path).await.unwrap();
    assert!(!crate::sidecar(&path, "-wal").exists());
    assert!(!crate::sidecar(&path, "-shm").exists());
    #[cfg(unix)]
    assert_eq!(mode(&path), 0o600);
    let restored = crate::open_file_with_clock(&path, clock).await.unwrap();
    assert_eq!(restored.task(&kept.id).await.unwrap(), kept);
    assert!(matches!(
        restored.task(&later.id).await,
        Err(Error::NotFound { .. })
    ));
    assert_eq!(restored.schema_version().await.unwrap(), SCHEMA_VERSION);
    // The backup itself is untouched and no temporary file is left.
    assert!(crate::open_file(&backup).await.is_ok());
    let names = files_in(&dir);
    assert!(
        !names.iter().any(|name| name.ends_with(".tmp")),
        "{names:?}"
    );
}

#[tokio::test]
async fn restore_refuses_what_is_not_a_pocketpilot_store_and_changes_nothing() {
    let db = TestDb::sqlite().await;
    let task = db.create("precious").await;
    let other = tempfile::tempdir().unwrap();

    let garbage = other.path().join("garbage.db");
    std::fs::write(&garbage, vec![b'x'; 8192]).unwrap();
    let empty = other.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let foreign = other.path().join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE tasks (x); PRAGMA user_version = 1;")
        .unwrap();
    let newer = other.path().join("newer.db");
    db.store.backup_to(&newer).await.unwrap();
    rusqlite::Connection::open(&newer)
        .unwrap()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    let truncated = other.path().join("truncated.db");
    db.store.backup_to(&truncated).await.unwrap();
    let bytes = std::fs::read(&truncated).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();

    let path = db.path();
    let dir = db.dir().to_path_buf();
    drop(db.store);
    let before = std::fs::read(&path).unwrap();
    let names_before = files_in(&dir);
    for (file, expected) in [
        (&garbage, "not a readable SQLite database"),
        (&empty, "schema version 0"),
        (&foreign, "no `approvals` table"),
        (&newer, "is not one this build knows"),
        (&truncated, ""),
    ] {
        let error = Store::restore_file(file, &path).await.unwrap_err();
        let Error::NotAStore {
            path: named,
            reason,
        } = &error
        else {
            panic!("{}: {error:?}", file.display());
        };
        assert_eq!(named, file);
        assert!(reason.contains(expected), "{}: {reason}", file.display());
        assert_eq!(std::fs::read(&path).unwrap(), before, "{}", file.display());
        assert_eq!(files_in(&dir), names_before);
    }
    let missing = Store::restore_file(&other.path().join("missing.db"), &path)
        .await
        .unwrap_err();
    assert!(matches!(missing, Error::File { .. }), "{missing:?}");
    let store = crate::open_file(&path).await.unwrap();
    assert_eq!(store.task(&task.id).await.unwrap(), task);
}
