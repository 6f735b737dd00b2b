//! Rows damaged behind the store's back give `Error::Corrupt`, never a panic.

use pp_store::Error;
use pp_types::TaskState;

use crate::{TestDb, started};

fn assert_corrupt<T: std::fmt::Debug>(
    result: pp_store::Result<T>,
    table: &str,
    column: &str,
    id: &str,
) {
    match result {
        Err(Error::Corrupt {
            table: found_table,
            column: found_column,
            id: found_id,
            ..
        }) => {
            assert_eq!(
                (found_table, found_column, found_id.as_str()),
                (table, column, id)
            );
        }
        other => panic!("expected corrupt {table}.{column} {id}, got {other:?}"),
    }
}

#[tokio::test]
async fn a_task_with_bad_json_or_an_unknown_actor_is_corrupt() {
    let db = TestDb::sqlite().await;
    let task = db.create("x").await;
    let raw = db.raw();
    raw.execute(
        "UPDATE tasks SET script = '{not json' WHERE id = ?1",
        [task.id.as_str()],
    )
    .unwrap();
    assert_corrupt(
        db.store.task(&task.id).await,
        "tasks",
        "script",
        task.id.as_str(),
    );
    assert_corrupt(
        db.store.list_tasks(None, 10).await,
        "tasks",
        "script",
        task.id.as_str(),
    );
    let error = db.store.task(&task.id).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("corrupt script in tasks row {}", task.id)
    );
    assert!(std::error::Error::source(&error).is_some());

    raw.execute(
        "UPDATE tasks SET script = NULL, created_by = 'robot' WHERE id = ?1",
        [task.id.as_str()],
    )
    .unwrap();
    assert_corrupt(
        db.store.task(&task.id).await,
        "tasks",
        "created_by",
        task.id.as_str(),
    );
    // A change whose result cannot be read back is rolled back, not half-applied.
    assert_corrupt(
        db.store.claim(&task.id, &[TaskState::Queued]).await,
        "tasks",
        "created_by",
        task.id.as_str(),
    );
    let state: String = raw
        .query_row(
            "SELECT state FROM tasks WHERE id = ?1",
            [task.id.as_str()],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(state, TaskState::Queued.as_str());
}

#[tokio::test]
async fn an_approval_with_a_bad_checkpoint_is_corrupt() {
    let db = TestDb::sqlite().await;
    let (_, approval) = db.waiting("x").await;
    db.raw()
        .execute(
            "UPDATE approvals SET checkpoint = '{\"version\": 1}' WHERE id = ?1",
            [approval.id.as_str()],
        )
        .unwrap();
    let id = approval.id.as_str();
    assert_corrupt(
        db.store.approval(&approval.id).await,
        "approvals",
        "checkpoint",
        id,
    );
    assert_corrupt(
        db.store.list_approvals(None, 10).await,
        "approvals",
        "checkpoint",
        id,
    );
    assert_corrupt(
        db.store.approvals_for_task(&approval.task_id).await,
        "approvals",
        "checkpoint",
        id,
    );
    assert_corrupt(
        db.store.resolve(&approval.id, crate::approve()).await,
        "approvals",
        "checkpoint",
        id,
    );
    // Nothing was committed by the failed resolve.
    db.raw()
        .execute(
            "UPDATE approvals SET risk = 'apocalyptic' WHERE id = ?1",
            [approval.id.as_str()],
        )
        .unwrap();
    assert_corrupt(
        db.store.approval(&approval.id).await,
        "approvals",
        "risk",
        id,
    );
    let state: String = db
        .raw()
        .query_row("SELECT state FROM approvals WHERE id = ?1", [id], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(state, "pending");
}

#[tokio::test]
async fn an_event_with_a_bad_payload_is_corrupt() {
    let db = TestDb::sqlite().await;
    let task = db.create("x").await;
    let good = db
        .store
        .append_events(&task.id, &[started("x")])
        .await
        .unwrap();
    db.raw()
        .execute(
            "INSERT INTO events (task_id, at, type, step, payload) \
             VALUES (?1, 0, 'mystery', 0, '{\"type\": \"mystery\", \"step\": 0}')",
            [task.id.as_str()],
        )
        .unwrap();
    let bad_seq = (good[0].seq + 1).to_string();
    assert_corrupt(
        db.store.task_events(&task.id, 0).await,
        "events",
        "payload",
        &bad_seq,
    );
    assert_corrupt(
        db.store.events_after(0, 10).await,
        "events",
        "payload",
        &bad_seq,
    );
    // Reading before the bad row still works.
    assert_eq!(db.store.events_after(0, 1).await.unwrap(), good);
}
