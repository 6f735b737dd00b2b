//! Changesets: the approvals of one model turn stored together, and the compare-and-set
//! on their pending count that moves the task on exactly once.

use pp_store::{Error, NOT_RUN_CANCELLED, Resolve, Store, TaskChange};
use pp_types::{ApprovalRecord, ApprovalState, EventKind, NewAudit, TaskRecord, TaskState};
use pretty_assertions::assert_eq;

use crate::{TestDb, approval_required, approve, new_approval, race, suspend_change};

/// A task suspended on a changeset of `calls` approvals (call ids `call_1`, …).
async fn waiting_on(db: &TestDb, calls: usize) -> (TaskRecord, Vec<ApprovalRecord>) {
    let task = db.create("three writes").await;
    db.store
        .claim(&task.id, &[TaskState::Queued])
        .await
        .unwrap();
    let news = (1..=calls)
        .map(|n| pp_store::NewApproval {
            call_id: format!("call_{n}"),
            target: Some(format!("notes/{n}.md")),
            ..new_approval()
        })
        .collect();
    let mut change = suspend_change();
    change.events = (1..=calls)
        .map(|n| {
            let mut event = approval_required();
            if let EventKind::ApprovalRequired { call_id, .. } = &mut event.kind {
                *call_id = format!("call_{n}");
            }
            event
        })
        .collect();
    let (approvals, events) = db.store.suspend(&task.id, news, change).await.unwrap();
    // Every approval_required event names its own approval and the one changeset.
    for (approval, stored) in approvals.iter().zip(&events) {
        let EventKind::ApprovalRequired {
            approval_id,
            changeset_id,
            call_id,
            ..
        } = &stored.event.kind
        else {
            panic!("not an approval_required event: {stored:?}");
        };
        assert_eq!(approval_id.as_deref(), Some(approval.id.as_str()));
        assert_eq!(changeset_id, &approval.changeset_id);
        assert_eq!(call_id, &approval.call_id);
    }
    (db.store.task(&task.id).await.unwrap(), approvals)
}

fn reject() -> Resolve {
    Resolve {
        state: ApprovalState::Rejected,
        reason: Some("no".into()),
        ..approve()
    }
}

both!(a_changeset_moves_its_task_on_with_its_last_decision_only);
async fn a_changeset_moves_its_task_on_with_its_last_decision_only(db: TestDb) {
    let (task, approvals) = waiting_on(&db, 3).await;
    assert_eq!(task.state, TaskState::WaitingApproval);
    let changeset = approvals[0].changeset_id.clone().unwrap();
    assert!(
        approvals
            .iter()
            .all(|a| a.changeset_id.as_deref() == Some(&*changeset))
    );

    let read = db.store.changeset(&changeset).await.unwrap();
    assert_eq!((read.size, read.pending), (3, 3));
    assert_eq!(read.task_id, task.id);
    assert_eq!(read.approvals, approvals, "stored in the model's order");

    let (_, after_first) = db.store.resolve(&approvals[1].id, approve()).await.unwrap();
    assert_eq!(after_first.state, TaskState::WaitingApproval);
    let (_, after_second) = db.store.resolve(&approvals[0].id, reject()).await.unwrap();
    assert_eq!(after_second.state, TaskState::WaitingApproval);
    assert_eq!(db.store.changeset(&changeset).await.unwrap().pending, 1);
    // A decided approval of the changeset cannot be decided again, nor counted twice.
    assert!(matches!(
        db.store
            .resolve(&approvals[1].id, reject())
            .await
            .unwrap_err(),
        Error::AlreadyResolved { .. }
    ));
    assert_eq!(db.store.changeset(&changeset).await.unwrap().pending, 1);

    let (last, after_last) = db.store.resolve(&approvals[2].id, approve()).await.unwrap();
    assert_eq!(last.state, ApprovalState::Approved);
    assert_eq!(after_last.state, TaskState::Running);
    let read = db.store.changeset(&changeset).await.unwrap();
    assert_eq!(read.pending, 0);
    let states: Vec<_> = read.approvals.iter().map(|a| a.state).collect();
    assert_eq!(
        states,
        [
            ApprovalState::Rejected,
            ApprovalState::Approved,
            ApprovalState::Approved
        ]
    );
    assert!(matches!(
        db.store.changeset("cs_unknown").await.unwrap_err(),
        Error::NotFound { .. }
    ));
}

both!(concurrent_decisions_on_a_changeset_move_the_task_on_exactly_once);
async fn concurrent_decisions_on_a_changeset_move_the_task_on_exactly_once(db: TestDb) {
    let (_, approvals) = waiting_on(&db, 2).await;
    let mut stores: Vec<Store> = Vec::new();
    for _ in 0..4 {
        stores.push(db.open_again().await);
    }
    // Four processes: two decide the first call, two the second, all at once.
    let ids: Vec<_> = approvals.iter().map(|a| a.id.clone()).collect();
    let outcomes = race(stores, |index, store| {
        let id = ids[index % 2].clone();
        async move { store.resolve(&id, approve()).await }
    })
    .await;
    let (mut accepted, mut already, mut moved_on) = (0, 0, 0);
    for outcome in outcomes {
        match outcome {
            Ok((_, task)) => {
                accepted += 1;
                if task.state == TaskState::Running {
                    moved_on += 1;
                }
            }
            Err(Error::AlreadyResolved { .. }) => already += 1,
            Err(other) => panic!("unexpected: {other}"),
        }
    }
    assert_eq!((accepted, already, moved_on), (2, 2, 1));
    let changeset = approvals[0].changeset_id.clone().unwrap();
    assert_eq!(db.store.changeset(&changeset).await.unwrap().pending, 0);
}

both!(a_cancel_ends_a_waiting_changesets_approved_calls_not_run);
async fn a_cancel_ends_a_waiting_changesets_approved_calls_not_run(db: TestDb) {
    let (task, approvals) = waiting_on(&db, 2).await;
    db.store.resolve(&approvals[0].id, approve()).await.unwrap();
    // The approved call has not run, but the task is waiting, not running: the cancel
    // wins.
    assert!(db.store.approved_call_pending(&task.id).await.unwrap());
    let cancelled = db
        .store
        .cancel_task(
            &task.id,
            &[TaskState::WaitingApproval],
            TaskChange {
                error: Some("cancelled by the operator".into()),
                ..TaskChange::to(TaskState::Cancelled)
            },
            NewAudit::new(pp_types::AuditAction::TaskCancelled),
        )
        .await
        .unwrap();
    assert_eq!(cancelled.state, TaskState::Cancelled);
    let first = db.store.approval(&approvals[0].id).await.unwrap();
    assert_eq!(first.state, ApprovalState::Cancelled);
    assert_eq!(first.reason.as_deref(), Some(NOT_RUN_CANCELLED));
    let second = db.store.approval(&approvals[1].id).await.unwrap();
    assert_eq!(second.state, ApprovalState::Cancelled);
    assert_eq!(second.reason.as_deref(), Some("cancelled by the operator"));
    assert!(!db.store.approved_call_pending(&task.id).await.unwrap());
}
