//! Several processes on one database: each racer opens its own `Store` (its own
//! connections), exactly as a server and a CLI would, and they are released together.

use std::collections::HashSet;

use pp_store::{AuditFilter, Error, Store};
use pp_types::{ApprovalState, TaskId, TaskState};

use crate::{TestDb, approve, race};

const RACERS: usize = 16;

async fn stores(db: &TestDb, count: usize) -> Vec<Store> {
    let mut stores = Vec::with_capacity(count);
    for _ in 0..count {
        stores.push(db.open_again().await);
    }
    stores
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_approval_resolved_by_many_processes_at_once_is_resolved_once() {
    let db = TestDb::new().await;
    let (task, approval) = db.waiting("race me").await;
    let outcomes = race(stores(&db, RACERS).await, |_, store| {
        let id = approval.id.clone();
        async move { store.resolve(&id, approve()).await }
    })
    .await;

    let mut won = 0;
    for outcome in outcomes {
        match outcome {
            Ok((resolved, task)) => {
                won += 1;
                assert_eq!(resolved.state, ApprovalState::Approved);
                assert_eq!(task.state, TaskState::Running);
            }
            Err(Error::AlreadyResolved {
                state: ApprovalState::Approved,
                ..
            }) => {}
            Err(other) => panic!("unexpected outcome: {other:?}"),
        }
    }
    assert_eq!(won, 1);
    let audit = db
        .store
        .list_audit(&AuditFilter {
            action: Some("approval_approved".into()),
            ..AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].approval_id.as_ref(), Some(&approval.id));
    let resolved_events = db
        .store
        .task_events(&task.id, 0)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.event.type_name() == "approval_resolved")
        .count();
    assert_eq!(resolved_events, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_processes_claiming_queued_tasks_claim_each_exactly_once() {
    const TASKS: usize = 60;
    const WORKERS: usize = 8;
    let db = TestDb::new().await;
    let mut created = HashSet::new();
    for n in 0..TASKS {
        created.insert(db.create(&format!("task {n}")).await.id);
    }
    let claimed = race(stores(&db, WORKERS).await, |_, store| async move {
        let mut mine = Vec::new();
        while let Some(task) = store.claim_queued().await.unwrap() {
            assert_eq!(task.state, TaskState::Running);
            mine.push(task.id);
        }
        mine
    })
    .await;
    let all: Vec<TaskId> = claimed.into_iter().flatten().collect();
    assert_eq!(all.len(), TASKS, "no task claimed twice");
    assert_eq!(all.into_iter().collect::<HashSet<_>>(), created);
    assert!(
        db.store
            .list_tasks(Some(TaskState::Queued), 100)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_transitions_on_one_task_let_exactly_one_through() {
    let db = TestDb::new().await;
    let task = db.create("x").await;
    db.store
        .claim(&task.id, &[TaskState::Queued])
        .await
        .unwrap();
    let outcomes = race(stores(&db, RACERS).await, |n, store| {
        let id = task.id.clone();
        async move {
            // Half try to complete it, half to cancel it.
            let result = if n % 2 == 0 {
                store
                    .transition(
                        &id,
                        &[TaskState::Running],
                        pp_store::TaskChange::to(TaskState::Completed),
                    )
                    .await
                    .map(|(task, _)| task)
            } else {
                store
                    .cancel_task(
                        &id,
                        &[TaskState::Running],
                        pp_store::TaskChange {
                            error: Some("stop".into()),
                            ..pp_store::TaskChange::to(TaskState::Cancelled)
                        },
                        pp_types::NewAudit::new(pp_types::AuditAction::TaskCancelled),
                    )
                    .await
            };
            match result {
                Ok(_) => 1,
                Err(Error::Conflict { .. }) => 0,
                Err(other) => panic!("unexpected: {other:?}"),
            }
        }
    })
    .await;
    assert_eq!(outcomes.iter().sum::<usize>(), 1);
    assert!(db.store.task(&task.id).await.unwrap().state.is_terminal());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ids_made_by_many_processes_do_not_collide() {
    let db = TestDb::new().await;
    race(stores(&db, 4).await, |_, store| async move {
        for n in 0..50 {
            store
                .create_task(crate::new_task(&format!("{n}")))
                .await
                .unwrap();
        }
    })
    .await;
    let ids: HashSet<_> = crate::ids(&db.store.list_tasks(None, 1000).await.unwrap())
        .into_iter()
        .collect();
    assert_eq!(ids.len(), 200);
}
