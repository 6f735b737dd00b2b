//! Retention: the history of long-finished tasks goes, everything else stays.

use std::time::Duration;

use pp_store::{PruneReport, Store, TaskChange};
use pp_types::{NewAudit, TaskId, TaskRecord, TaskState};
use pretty_assertions::assert_eq;

use crate::{TestDb, started};

pub(crate) const DAY: Duration = Duration::from_secs(86_400);

async fn history(store: &Store, task: &TaskId) -> (usize, usize) {
    let events = store.task_events(task, 0).await.unwrap().len();
    let filter = pp_store::AuditFilter {
        task_id: Some(task.clone()),
        limit: 1000,
        ..pp_store::AuditFilter::default()
    };
    (events, store.list_audit(&filter).await.unwrap().len())
}

/// A running task that appended two events, then moved to `to`.
pub(crate) async fn ended(db: &TestDb, prompt: &str, to: TaskState) -> TaskRecord {
    let task = db.create(prompt).await;
    db.store
        .claim(&task.id, &[TaskState::Queued])
        .await
        .unwrap();
    db.store
        .append_events(&task.id, &[started(prompt), started(prompt)])
        .await
        .unwrap();
    if to != TaskState::Running {
        db.store
            .transition(&task.id, &[TaskState::Running], TaskChange::to(to))
            .await
            .unwrap();
    }
    db.store.task(&task.id).await.unwrap()
}

pub(crate) async fn login(db: &TestDb) {
    db.store
        .append_audit(NewAudit {
            ..NewAudit::new(pp_types::AuditAction::ConsoleLogin)
        })
        .await
        .unwrap();
}

both!(prune_drops_only_the_history_of_tasks_finished_before_the_window);
async fn prune_drops_only_the_history_of_tasks_finished_before_the_window(db: TestDb) {
    let states = [
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Cancelled,
        TaskState::TimedOut,
    ];
    let mut finished: Vec<TaskRecord> = Vec::new();
    for state in states {
        finished.push(ended(&db, state.as_str(), state).await);
    }
    let queued = db.create("queued").await;
    let running = ended(&db, "running", TaskState::Running).await;
    let (waiting, _approval) = db.waiting("waiting").await;
    let interrupted = ended(&db, "interrupted", TaskState::Running).await;
    db.store
        .interrupt_stale("its process stopped", Duration::ZERO)
        .await
        .unwrap();
    db.store
        .claim(&running.id, &[TaskState::Interrupted])
        .await
        .unwrap();
    assert_eq!(
        db.store.task(&interrupted.id).await.unwrap().state,
        TaskState::Interrupted
    );
    login(&db).await;

    db.clock.advance(40 * DAY);
    // Recent: a task finished inside the window and a recent login.
    let recent = ended(&db, "recent", TaskState::Completed).await;
    login(&db).await;
    let unfinished = [&queued, &running, &waiting, &interrupted];
    let mut before = Vec::new();
    for task in unfinished {
        before.push(history(&db.store, &task.id).await);
    }
    let recent_before = history(&db.store, &recent.id).await;
    assert_eq!(recent_before, (2, 1));

    let report = db.store.prune(30 * DAY).await.unwrap();
    assert_eq!(
        report,
        PruneReport {
            tasks: 4,
            events: 8,
            // task_created per finished task, plus the old login.
            audit: 5,
        }
    );
    for task in &finished {
        assert_eq!(
            history(&db.store, &task.id).await,
            (0, 0),
            "{}",
            task.prompt
        );
        // The task row itself stays.
        assert_eq!(db.store.task(&task.id).await.unwrap().state, task.state);
    }
    let mut after = Vec::new();
    for task in unfinished {
        after.push(history(&db.store, &task.id).await);
    }
    assert_eq!(after, before, "tasks not finished keep everything");
    assert_eq!(history(&db.store, &recent.id).await, recent_before);
    let logins = db
        .store
        .list_audit(&pp_store::AuditFilter {
            action: Some("console_login".into()),
            ..pp_store::AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(logins.len(), 1, "the recent login stays");

    // Idempotent, and sequence numbers are never reused after a prune.
    assert_eq!(
        db.store.prune(30 * DAY).await.unwrap(),
        PruneReport::default()
    );
    let last = db.store.last_seq().await.unwrap();
    let appended = db
        .store
        .append_events(&queued.id, &[started("more")])
        .await
        .unwrap();
    assert!(appended[0].seq > last);
}

both!(the_window_is_measured_from_the_finish_and_from_each_row);
async fn the_window_is_measured_from_the_finish_and_from_each_row(db: TestDb) {
    // Created long ago, waited, finished recently: kept whole... until it is old.
    let (task, approval) = db.waiting("slow approval").await;
    db.clock.advance(40 * DAY);
    db.store
        .resolve(&approval.id, crate::approve())
        .await
        .unwrap();
    db.store
        .transition(
            &task.id,
            &[TaskState::Running],
            TaskChange::to(TaskState::Completed),
        )
        .await
        .unwrap();
    assert_eq!(
        db.store.prune(30 * DAY).await.unwrap(),
        PruneReport::default()
    );
    let whole = history(&db.store, &task.id).await;
    assert_eq!(whole, (2, 2));
    db.clock.advance(30 * DAY - Duration::from_millis(1));
    assert_eq!(
        db.store.prune(30 * DAY).await.unwrap(),
        PruneReport::default()
    );
    db.clock.advance(Duration::from_millis(1));
    let report = db.store.prune(30 * DAY).await.unwrap();
    assert_eq!((report.tasks, report.events, report.audit), (1, 2, 2));
    assert_eq!(history(&db.store, &task.id).await, (0, 0));
}
