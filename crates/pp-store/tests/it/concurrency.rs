//! Several processes on one database: each racer opens its own `Store` (its own
//! connections), exactly as a server, a CLI and other workers would, and they are released
//! together. Every test here runs on both backends.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pp_store::{AuditFilter, Error, Store};
use pp_types::{ApprovalState, EventKind, TaskId, TaskState};

use crate::backend::Backend;
use crate::{TestDb, approve, event, race};

/// `count` more stores on `db`'s database, each with its own connections.
async fn stores(db: &TestDb, count: usize) -> Vec<Store> {
    let mut stores = Vec::with_capacity(count);
    for _ in 0..count {
        stores.push(db.open_again().await);
    }
    stores
}

both!(one_approval_resolved_by_eight_processes_at_once_is_resolved_once);
async fn one_approval_resolved_by_eight_processes_at_once_is_resolved_once(db: TestDb) {
    let (task, approval) = db.waiting("race me").await;
    let outcomes = race(stores(&db, 8).await, |_, store| {
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

both!(eight_claimers_over_200_queued_tasks_claim_each_exactly_once);
async fn eight_claimers_over_200_queued_tasks_claim_each_exactly_once(db: TestDb) {
    const TASKS: usize = 200;
    let mut created = HashSet::new();
    for n in 0..TASKS {
        created.insert(db.create(&format!("task {n}")).await.id);
    }
    let claimed = race(stores(&db, 8).await, |_, store| async move {
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
            .list_tasks(Some(TaskState::Queued), 300)
            .await
            .unwrap()
            .is_empty()
    );
}

both!(a_reader_paging_while_eight_writers_append_sees_every_event_once_in_order);
async fn a_reader_paging_while_eight_writers_append_sees_every_event_once_in_order(db: TestDb) {
    const WRITERS: usize = 8;
    const BATCHES: u32 = 25;
    let mut tasks = Vec::new();
    for n in 0..WRITERS {
        tasks.push(db.create(&format!("writer {n}")).await.id);
    }
    let before = db.store.last_seq().await.unwrap();
    let writers_done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (store, writers_done) = (db.open_again().await, Arc::clone(&writers_done));
        tokio::spawn(async move {
            let (mut seen, mut last) = (Vec::new(), before);
            loop {
                // Read the flag first: a page read after every writer finished is complete.
                let finished = writers_done.load(Ordering::SeqCst);
                let page = store.events_after(last, 50).await.unwrap();
                if let Some(newest) = page.last() {
                    last = newest.seq;
                }
                seen.extend(page.iter().map(|stored| stored.seq));
                if page.is_empty() {
                    if finished {
                        return seen;
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        })
    };
    race(stores(&db, WRITERS).await, |n, store| {
        let task = tasks[n].clone();
        async move {
            for step in 0..BATCHES {
                // One, two or three events per transaction.
                let batch: Vec<_> = (0..=step % 3)
                    .map(|_| {
                        event(
                            step,
                            EventKind::ModelRequest {
                                message_count: 1,
                                tool_count: 0,
                            },
                        )
                    })
                    .collect();
                store.append_events(&task, &batch).await.unwrap();
            }
        }
    })
    .await;
    writers_done.store(true, Ordering::SeqCst);
    let seen = reader.await.unwrap();

    let all: Vec<i64> = db
        .store
        .events_after(before, 100_000)
        .await
        .unwrap()
        .iter()
        .map(|stored| stored.seq)
        .collect();
    let per_writer: usize = (0..BATCHES).map(|step| (step % 3 + 1) as usize).sum();
    assert_eq!(all.len(), WRITERS * per_writer);
    assert!(all.windows(2).all(|pair| pair[0] < pair[1]), "{all:?}");
    assert_eq!(seen, all, "the reader skipped or repeated an event");
}

both!(racing_transitions_on_one_task_let_exactly_one_through);
async fn racing_transitions_on_one_task_let_exactly_one_through(db: TestDb) {
    let task = db.create("x").await;
    db.store
        .claim(&task.id, &[TaskState::Queued])
        .await
        .unwrap();
    let outcomes = race(stores(&db, 8).await, |n, store| {
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

both!(ids_made_by_many_processes_do_not_collide);
async fn ids_made_by_many_processes_do_not_collide(db: TestDb) {
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

both!(wait_for_events_wakes_when_another_store_appends);
async fn wait_for_events_wakes_when_another_store_appends(db: TestDb) {
    let task = db.create("x").await;
    let last = db.store.last_seq().await.unwrap();
    if db.backend == Backend::Sqlite {
        // SQLite has no change feed across processes: it polls, by design, so the wait
        // simply lasts `at_most`.
        db.store
            .wait_for_events(last, Duration::from_millis(1))
            .await;
        return;
    }
    const AT_MOST: Duration = Duration::from_secs(30);
    let waiter = {
        let store = db.store.clone();
        tokio::spawn(async move {
            let start = Instant::now();
            store.wait_for_events(last, AT_MOST).await;
            start.elapsed()
        })
    };
    // Give the waiter a moment to start listening (it must wake either way: an event
    // above `last` committed before it listened counts too).
    tokio::time::sleep(Duration::from_millis(100)).await;
    db.open_again()
        .await
        .append_events(&task.id, &[crate::started("x")])
        .await
        .unwrap();
    let waited = waiter.await.unwrap();
    assert!(
        waited < AT_MOST,
        "wait_for_events timed out after {waited:?} instead of waking on the append"
    );
}
