//! Rows checked behind the store's back with raw SQL (`rusqlite`): the append-only
//! triggers, what a login row stores. SQLite-only: the SQL is SQLite's.

use std::time::Duration;

use pp_types::TaskState;

use crate::prune::{DAY, ended, login};
use crate::{TestDb, started};

#[tokio::test]
async fn events_are_append_only_in_the_database() {
    let db = TestDb::sqlite().await;
    let task = db.create("a").await;
    db.store
        .append_events(&task.id, &[started("a")])
        .await
        .unwrap();
    let raw = db.raw();
    assert!(raw.execute("UPDATE events SET step = 9", []).is_err());
    assert!(raw.execute("DELETE FROM events", []).is_err());
    assert!(raw.execute("DELETE FROM audit", []).is_err());
    assert_eq!(db.store.task_events(&task.id, 0).await.unwrap().len(), 1);
}

#[tokio::test]
async fn events_and_audit_stay_append_only_outside_prune() {
    let db = TestDb::sqlite().await;
    ended(&db, "done", TaskState::Completed).await;
    login(&db).await;
    db.clock.advance(400 * DAY);
    let raw = db.raw();
    for sql in [
        "DELETE FROM events",
        "DELETE FROM audit",
        "UPDATE events SET type = 'x'",
        "UPDATE audit SET action = 'x'",
    ] {
        let error = raw.execute(sql, []).unwrap_err();
        assert!(error.to_string().contains("append-only"), "{sql}: {error}");
    }
    db.store.prune(DAY).await.unwrap();
    // The guard row never outlives the prune transaction.
    let guard: i64 = raw
        .query_row("SELECT COUNT(*) FROM prune_guard", [], |row| row.get(0))
        .unwrap();
    assert_eq!(guard, 0);
    let task = db.create("later").await;
    db.store
        .append_events(&task.id, &[started("x")])
        .await
        .unwrap();
    let error = raw.execute("DELETE FROM events", []).unwrap_err();
    assert!(error.to_string().contains("append-only"), "{error}");
    let error = raw.execute("DELETE FROM audit", []).unwrap_err();
    assert!(error.to_string().contains("append-only"), "{error}");
}

#[tokio::test]
async fn logins_expire_by_the_store_clock_and_are_purged_by_it() {
    let db = TestDb::sqlite().await;
    let day = db
        .store
        .create_login(Duration::from_secs(86_400))
        .await
        .unwrap();
    let raw_expiry: i64 = db
        .raw()
        .query_row("SELECT expires_at FROM console_logins", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(raw_expiry, crate::START.as_millis() + 86_400_000);
    db.clock.advance(Duration::from_secs(86_400));
    assert!(!db.store.login_valid(&day).await.unwrap());
    // Creating another session purges the expired one.
    let _next = db
        .store
        .create_login(Duration::from_secs(60))
        .await
        .unwrap();
    let count: i64 = db
        .raw()
        .query_row("SELECT COUNT(*) FROM console_logins", [], |row| row.get(0))
        .unwrap();
    assert_eq!(count, 1);
}

#[tokio::test]
async fn only_a_hash_of_the_login_id_is_stored_and_expired_rows_are_purged() {
    let db = TestDb::sqlite().await;
    let _expired = db.store.create_login(Duration::ZERO).await.unwrap();
    let session = db
        .store
        .create_login(Duration::from_secs(60))
        .await
        .unwrap();
    let raw = db.raw();
    let stored: Vec<String> = raw
        .prepare("SELECT id_sha256 FROM console_logins")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(stored.len(), 1, "the expired session was purged");
    assert_ne!(stored[0], session);
    assert_eq!(stored[0].len(), 64);
}

#[tokio::test]
async fn schedule_history_is_append_only_and_goes_with_its_schedule() {
    let db = TestDb::sqlite().await;
    let schedule = crate::schedules::create(&db.store, crate::schedules::spec("invoices")).await;
    let pp_store::Fired::Task(task) = crate::schedules::fire(&db.store, &schedule).await else {
        panic!("not fired")
    };
    assert!(
        db.raw()
            .execute("UPDATE schedule_history SET missed = 5", [])
            .is_err()
    );
    db.store.delete_schedule(&schedule.id).await.unwrap();
    let left: i64 = db
        .raw()
        .query_row("SELECT count(*) FROM schedule_history", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(left, 0);
    assert_eq!(
        db.store.task(&task.id).await.unwrap().created_by,
        pp_types::Actor::Scheduler
    );
}
