//! The store itself, on either backend: opening again, the schema version, the backend's
//! name, the clock, backups.

use std::sync::Arc;

use pp_store::{Error, Store};
use pp_types::{SystemClock, Timestamp};

use crate::backend::Backend;
use crate::{START, TestDb};

both!(reopening_keeps_the_data_and_migrates_nothing);
async fn reopening_keeps_the_data_and_migrates_nothing(db: TestDb) {
    let task = db.create("keep me").await;
    let version = db.store.schema_version().await.unwrap();
    assert!(version > 0, "{version}");
    drop(db.open_again().await);
    let again = db.open_again().await;
    assert_eq!(again.schema_version().await.unwrap(), version);
    assert_eq!(again.task(&task.id).await.unwrap(), task);
    assert_eq!(again.list_tasks(None, 10).await.unwrap().len(), 1);
}

both!(the_store_names_its_backend_and_its_file);
async fn the_store_names_its_backend_and_its_file(db: TestDb) {
    match db.backend {
        Backend::Sqlite => {
            assert_eq!(db.store.backend_name(), "sqlite");
            assert_eq!(db.store.path(), Some(db.path().as_path()));
            assert_eq!(
                db.store.schema_version().await.unwrap(),
                pp_store::SCHEMA_VERSION
            );
        }
        Backend::Postgres => {
            assert_eq!(db.store.backend_name(), "postgres");
            assert_eq!(db.store.path(), None);
        }
    }
}

both!(a_backup_is_a_file_on_sqlite_and_refused_with_a_hint_on_a_server_database);
async fn a_backup_is_a_file_on_sqlite_and_refused_with_a_hint_on_a_server_database(db: TestDb) {
    let task = db.create("keep").await;
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("backup.db");
    let backup = db.store.backup_to(&dest).await;
    match db.backend {
        Backend::Sqlite => {
            backup.unwrap();
            let copy = crate::open_file(&dest).await.unwrap();
            assert_eq!(copy.task(&task.id).await.unwrap(), task);
        }
        Backend::Postgres => {
            let error = backup.unwrap_err();
            assert!(
                matches!(
                    error,
                    Error::Unsupported {
                        what: "backup",
                        backend: "postgres",
                        ..
                    }
                ),
                "{error:?}"
            );
            assert!(error.to_string().contains("pg_dump"), "{error}");
            assert!(!dest.exists());
        }
    }
}

both!(the_store_hands_out_its_clock);
async fn the_store_hands_out_its_clock(db: TestDb) {
    let clock = db.store.clock();
    assert_eq!(clock.now(), START);
    db.clock.advance(std::time::Duration::from_millis(7));
    assert_eq!(clock.now().as_millis(), START.as_millis() + 7);
    // A store connected on the system clock keeps its times.
    let system = Store::connect(&db.url, Arc::new(SystemClock))
        .await
        .unwrap();
    let before = Timestamp::now();
    let now = system.clock().now();
    assert!(now >= before && now <= Timestamp::now());
    let task = system.create_task(crate::new_task("now")).await.unwrap();
    assert!(task.created_at >= before && task.created_at <= Timestamp::now());
}
