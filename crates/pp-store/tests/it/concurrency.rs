//! Several processes on one file: each thread opens its own `Store` (its own SQLite
//! connection), exactly as a server and a CLI would.

use std::collections::HashSet;
use std::sync::Barrier;
use std::thread;

use pp_store::{AuditFilter, Error, Store};
use pp_types::{ApprovalState, TaskId, TaskState};

use crate::{TestDb, approve};

const THREADS: usize = 16;

#[test]
fn one_approval_resolved_by_many_processes_at_once_is_resolved_once() {
    let db = TestDb::new();
    let (task, approval) = db.waiting("race me");
    let stores: Vec<Store> = (0..THREADS).map(|_| db.open_again()).collect();
    let barrier = Barrier::new(THREADS);
    let outcomes: Vec<_> = thread::scope(|scope| {
        let handles: Vec<_> = stores
            .iter()
            .map(|store| {
                let barrier = &barrier;
                let id = &approval.id;
                scope.spawn(move || {
                    barrier.wait();
                    store.resolve(id, approve())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

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
        .unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].approval_id.as_ref(), Some(&approval.id));
    let resolved_events = db
        .store
        .task_events(&task.id, 0)
        .unwrap()
        .into_iter()
        .filter(|e| e.event.type_name() == "approval_resolved")
        .count();
    assert_eq!(resolved_events, 1);
}

#[test]
fn many_processes_claiming_queued_tasks_claim_each_exactly_once() {
    const TASKS: usize = 60;
    const WORKERS: usize = 8;
    let db = TestDb::new();
    let created: HashSet<TaskId> = (0..TASKS)
        .map(|n| db.create(&format!("task {n}")).id)
        .collect();
    let stores: Vec<Store> = (0..WORKERS).map(|_| db.open_again()).collect();
    let barrier = Barrier::new(WORKERS);
    let claimed: Vec<Vec<TaskId>> = thread::scope(|scope| {
        let handles: Vec<_> = stores
            .iter()
            .map(|store| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    let mut mine = Vec::new();
                    while let Some(task) = store.claim_queued().unwrap() {
                        assert_eq!(task.state, TaskState::Running);
                        mine.push(task.id);
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let all: Vec<TaskId> = claimed.into_iter().flatten().collect();
    assert_eq!(all.len(), TASKS, "no task claimed twice");
    assert_eq!(all.into_iter().collect::<HashSet<_>>(), created);
    assert!(
        db.store
            .list_tasks(Some(TaskState::Queued), 100)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn racing_transitions_on_one_task_let_exactly_one_through() {
    let db = TestDb::new();
    let task = db.create("x");
    db.store.claim(&task.id, &[TaskState::Queued]).unwrap();
    let stores: Vec<Store> = (0..THREADS).map(|_| db.open_again()).collect();
    let barrier = Barrier::new(THREADS);
    let wins = thread::scope(|scope| {
        let handles: Vec<_> = stores
            .iter()
            .enumerate()
            .map(|(n, store)| {
                let barrier = &barrier;
                let id = &task.id;
                scope.spawn(move || {
                    barrier.wait();
                    // Half try to complete it, half to cancel it.
                    let result = if n % 2 == 0 {
                        store
                            .transition(
                                id,
                                &[TaskState::Running],
                                pp_store::TaskChange::to(TaskState::Completed),
                            )
                            .map(|(task, _)| task)
                    } else {
                        store.cancel_task(
                            id,
                            &[TaskState::Running],
                            pp_store::TaskChange {
                                error: Some("stop".into()),
                                ..pp_store::TaskChange::to(TaskState::Cancelled)
                            },
                            pp_types::NewAudit::new(pp_types::AuditAction::TaskCancelled),
                        )
                    };
                    match result {
                        Ok(_) => 1,
                        Err(Error::Conflict { .. }) => 0,
                        Err(other) => panic!("unexpected: {other:?}"),
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .sum::<usize>()
    });
    assert_eq!(wins, 1);
    assert!(db.store.task(&task.id).unwrap().state.is_terminal());
}

#[test]
fn ids_made_by_many_processes_do_not_collide() {
    let db = TestDb::new();
    let stores: Vec<Store> = (0..4).map(|_| db.open_again()).collect();
    thread::scope(|scope| {
        for store in &stores {
            scope.spawn(move || {
                for n in 0..50 {
                    store.create_task(crate::new_task(&format!("{n}"))).unwrap();
                }
            });
        }
    });
    let ids: HashSet<_> = crate::ids(&db.store.list_tasks(None, 1000).unwrap())
        .into_iter()
        .collect();
    assert_eq!(ids.len(), 200);
}
