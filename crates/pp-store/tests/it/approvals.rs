//! Approvals: suspend, resolve exactly once, reopen.

use pp_store::{Error, Resolve, TaskChange};
use pp_types::{Actor, ApprovalState, Checkpoint, TaskState};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{TestDb, approval_required, approve, checkpoint, new_approval, suspend_change};

fn approval_required_for(approval: &pp_types::ApprovalRecord) -> pp_types::Event {
    let mut event = approval_required();
    if let pp_types::EventKind::ApprovalRequired {
        approval_id,
        changeset_id,
        ..
    } = &mut event.kind
    {
        *approval_id = Some(approval.id.to_string());
        changeset_id.clone_from(&approval.changeset_id);
    }
    event
}

async fn approval_rows(db: &TestDb) -> usize {
    db.store
        .list_audit(&pp_store::AuditFilter {
            action: Some("approval_approved".into()),
            ..pp_store::AuditFilter::default()
        })
        .await
        .unwrap()
        .len()
}

both!(suspend_stores_the_checkpoint_and_resolve_resumes_the_task);
async fn suspend_stores_the_checkpoint_and_resolve_resumes_the_task(db: TestDb) {
    let task = db.create("Summarise notes.md").await;
    db.store
        .claim(&task.id, &[TaskState::Queued])
        .await
        .unwrap();

    let (approval, stored) = db
        .store
        .suspend(&task.id, vec![new_approval()], suspend_change())
        .await
        .map(|(mut approvals, events)| (approvals.remove(0), events))
        .unwrap();
    assert!(approval.id.as_str().starts_with("a_"));
    assert_eq!(approval.state, ApprovalState::Pending);
    assert_eq!(approval.task_id, task.id);
    assert_eq!(stored.len(), 1);
    // The store names the new approval in the approval_required event.
    assert!(approval.changeset_id.as_deref().unwrap().starts_with("cs_"));
    assert_eq!(approval.call_id, "call_1");
    assert_eq!(stored[0].event, approval_required_for(&approval));
    assert_eq!(db.store.task_events(&task.id, 0).await.unwrap(), stored);

    // The checkpoint survives the database (and a reopen) exactly.
    let read_back = db.open_again().await.approval(&approval.id).await.unwrap();
    assert_eq!(read_back, approval);
    assert_eq!(read_back.checkpoint, checkpoint());
    let json = serde_json::to_string(&read_back.checkpoint).unwrap();
    assert_eq!(
        serde_json::from_str::<Checkpoint>(&json).unwrap(),
        checkpoint()
    );

    let waiting = db.store.task(&task.id).await.unwrap();
    assert_eq!(waiting.state, TaskState::WaitingApproval);
    assert_eq!(waiting.running_ms, 40);
    assert_eq!(
        db.store
            .list_approvals(Some(ApprovalState::Pending), 10)
            .await
            .unwrap(),
        std::slice::from_ref(&approval)
    );

    let edited = json!({"path": "notes/summary.md", "content": "Four points."});
    let (resolved, running) = db
        .store
        .resolve(
            &approval.id,
            Resolve {
                edited_arguments: Some(edited.clone()),
                edited_preview: None,
                fingerprint: None,
                ..approve()
            },
        )
        .await
        .unwrap();
    assert_eq!(resolved.state, ApprovalState::Approved);
    assert_eq!(resolved.resolved_by, Some(Actor::Operator));
    assert_eq!(resolved.edited_arguments, Some(edited));
    assert!(resolved.resolved_at.is_some());
    assert_eq!(resolved.checkpoint, checkpoint());
    assert_eq!(running.state, TaskState::Running);
    assert_eq!(running.running_ms, 40);
    assert_eq!(db.store.approval(&approval.id).await.unwrap(), resolved);

    let audit = db
        .store
        .list_audit(&pp_store::AuditFilter {
            action: Some("approval_approved".into()),
            ..pp_store::AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].approval_id.as_ref(), Some(&approval.id));
    assert_eq!(audit[0].task_id.as_ref(), Some(&task.id));
    assert_eq!(audit[0].actor, Actor::Operator);
    assert_eq!(audit[0].tool.as_deref(), Some("write_file"));

    let events = db.store.task_events(&task.id, 0).await.unwrap();
    let types: Vec<_> = events.iter().map(|e| e.event.type_name()).collect();
    assert_eq!(types, ["approval_required", "approval_resolved"]);
    assert!(
        db.store
            .list_approvals(Some(ApprovalState::Pending), 10)
            .await
            .unwrap()
            .is_empty()
    );
}

both!(suspend_needs_a_running_task);
async fn suspend_needs_a_running_task(db: TestDb) {
    let task = db.create("x").await;
    let error = db
        .store
        .suspend(&task.id, vec![new_approval()], suspend_change())
        .await
        .unwrap_err();
    assert!(matches!(
        error,
        Error::Conflict {
            current: TaskState::Queued,
            ..
        }
    ));
    assert!(
        db.store
            .approvals_for_task(&task.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(db.store.task_events(&task.id, 0).await.unwrap().is_empty());
}

both!(resolving_twice_is_already_resolved_with_one_audit_row);
async fn resolving_twice_is_already_resolved_with_one_audit_row(db: TestDb) {
    let (_, approval) = db.waiting("x").await;
    db.store.resolve(&approval.id, approve()).await.unwrap();
    let error = db.store.resolve(&approval.id, approve()).await.unwrap_err();
    assert!(
        matches!(&error, Error::AlreadyResolved { id, state: ApprovalState::Approved }
            if id == approval.id.as_str()),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!("approval {} is already approved", approval.id)
    );
    // Even a different decision loses.
    let reject = Resolve {
        state: ApprovalState::Rejected,
        ..approve()
    };
    assert!(matches!(
        db.store.resolve(&approval.id, reject).await,
        Err(Error::AlreadyResolved { .. })
    ));
    assert_eq!(approval_rows(&db).await, 1);
}

both!(resolve_is_all_or_nothing_when_the_task_is_not_waiting);
async fn resolve_is_all_or_nothing_when_the_task_is_not_waiting(db: TestDb) {
    let (task, approval) = db.waiting("x").await;
    // Someone moved the task on behind the approval's back.
    db.store
        .transition(
            &task.id,
            &[TaskState::WaitingApproval],
            TaskChange::to(TaskState::TimedOut),
        )
        .await
        .unwrap();
    let error = db.store.resolve(&approval.id, approve()).await.unwrap_err();
    assert!(matches!(
        error,
        Error::Conflict {
            current: TaskState::TimedOut,
            ..
        }
    ));
    assert_eq!(db.store.approval(&approval.id).await.unwrap(), approval);
    assert_eq!(approval_rows(&db).await, 0);
    assert_eq!(db.store.task_events(&task.id, 0).await.unwrap().len(), 1);
}

both!(a_rejection_records_the_reason_and_the_actor);
async fn a_rejection_records_the_reason_and_the_actor(db: TestDb) {
    let (_, approval) = db.waiting("x").await;
    let reject = Resolve {
        state: ApprovalState::Rejected,
        actor: Actor::Operator,
        reason: Some("not that file".into()),
        audit: pp_types::NewAudit {
            user: Some("telegram:42 (@ana)".into()),
            via: Some(pp_types::Via::Telegram),
            ..pp_types::NewAudit::new(pp_types::AuditAction::ApprovalRejected)
        },
        ..approve()
    };
    let (resolved, task) = db.store.resolve(&approval.id, reject).await.unwrap();
    assert_eq!(resolved.state, ApprovalState::Rejected);
    assert_eq!(resolved.reason.as_deref(), Some("not that file"));
    assert_eq!(resolved.edited_arguments, None);
    assert_eq!(task.state, TaskState::Running);
    // Where the person decided, and who, on the approval and on its audit row.
    assert_eq!(resolved.resolved_via, Some(pp_types::Via::Telegram));
    assert_eq!(
        resolved.resolved_by_user.as_deref(),
        Some("telegram:42 (@ana)")
    );
    assert_eq!(db.store.approval(&approval.id).await.unwrap(), resolved);
    let ledger = db
        .store
        .list_audit(&pp_store::AuditFilter::default())
        .await
        .unwrap();
    let row = ledger
        .iter()
        .find(|row| row.action == pp_types::AuditAction::ApprovalRejected)
        .unwrap();
    assert_eq!(row.via, Some(pp_types::Via::Telegram));
    assert_eq!(row.user.as_deref(), Some("telegram:42 (@ana)"));
}

both!(pending_is_not_a_resolution);
async fn pending_is_not_a_resolution(db: TestDb) {
    let (_, approval) = db.waiting("x").await;
    let error = db
        .store
        .resolve(
            &approval.id,
            Resolve {
                state: ApprovalState::Pending,
                ..approve()
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::InvalidResolution { .. }),
        "{error:?}"
    );
    assert_eq!(db.store.approval(&approval.id).await.unwrap(), approval);
}

both!(an_unknown_approval_is_not_found);
async fn an_unknown_approval_is_not_found(db: TestDb) {
    let id = pp_types::ApprovalId::from("a_nope");
    assert!(matches!(
        db.store.approval(&id).await,
        Err(Error::NotFound {
            what: "approval",
            ..
        })
    ));
    assert!(matches!(
        db.store.resolve(&id, approve()).await,
        Err(Error::NotFound {
            what: "approval",
            ..
        })
    ));
}

both!(approvals_list_newest_first_and_per_task_oldest_first);
async fn approvals_list_newest_first_and_per_task_oldest_first(db: TestDb) {
    let (task_a, first) = db.waiting("a").await;
    let (_, second) = db.waiting("b").await;
    db.store.resolve(&first.id, approve()).await.unwrap();
    let (third, _) = db
        .store
        .suspend(&task_a.id, vec![new_approval()], suspend_change())
        .await
        .map(|(mut approvals, events)| (approvals.remove(0), events))
        .unwrap();

    let all: Vec<_> = db
        .store
        .list_approvals(None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(all, [third.id.clone(), second.id, first.id.clone()]);
    let pending: Vec<_> = db
        .store
        .list_approvals(Some(ApprovalState::Pending), 1)
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(pending, std::slice::from_ref(&third.id));
    let of_a: Vec<_> = db
        .store
        .approvals_for_task(&task_a.id)
        .await
        .unwrap()
        .into_iter()
        .map(|a| (a.id, a.state))
        .collect();
    assert_eq!(
        of_a,
        [
            (first.id, ApprovalState::Approved),
            (third.id, ApprovalState::Pending)
        ]
    );
}

both!(reopen_approval_retries_an_interrupted_task_from_an_old_checkpoint);
async fn reopen_approval_retries_an_interrupted_task_from_an_old_checkpoint(db: TestDb) {
    let (task, old) = db.waiting("x").await;
    db.store.resolve(&old.id, approve()).await.unwrap();
    // The process dies while running the approved call.
    assert_eq!(
        db.store.interrupt_running("restarted").await.unwrap(),
        std::slice::from_ref(&task.id)
    );

    let wrong = db
        .store
        .reopen_approval(&task.id, &[TaskState::Running], new_approval(), Vec::new())
        .await
        .unwrap_err();
    assert!(matches!(
        wrong,
        Error::Conflict {
            current: TaskState::Interrupted,
            ..
        }
    ));

    let old = db.store.approval(&old.id).await.unwrap();
    let copy = pp_store::NewApproval {
        checkpoint: old.checkpoint.clone(),
        ..new_approval()
    };
    let reopened = db
        .store
        .reopen_approval(
            &task.id,
            &[TaskState::Interrupted],
            copy,
            vec![approval_required()],
        )
        .await
        .unwrap();
    assert_ne!(reopened.id, old.id);
    assert_eq!(reopened.state, ApprovalState::Pending);
    assert_eq!(reopened.checkpoint, old.checkpoint);
    assert_eq!(
        db.store.task(&task.id).await.unwrap().state,
        TaskState::WaitingApproval
    );
    let states: Vec<_> = db
        .store
        .approvals_for_task(&task.id)
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.state)
        .collect();
    assert_eq!(states, [ApprovalState::Approved, ApprovalState::Pending]);
    let last = db
        .store
        .task_events(&task.id, 0)
        .await
        .unwrap()
        .pop()
        .unwrap();
    assert_eq!(last.event, approval_required_for(&reopened));

    // And it can be resolved like any other.
    let (_, running) = db.store.resolve(&reopened.id, approve()).await.unwrap();
    assert_eq!(running.state, TaskState::Running);
}

both!(an_approved_call_whose_target_changed_is_marked_stale_once);
async fn an_approved_call_whose_target_changed_is_marked_stale_once(db: TestDb) {
    let (task, approval) = db.waiting("x").await;
    let stale_audit = || pp_types::NewAudit {
        task_id: Some(task.id.clone()),
        approval_id: Some(approval.id.clone()),
        ..pp_types::NewAudit::new(pp_types::AuditAction::ApprovalStale)
    };
    // Only an approved approval can go stale.
    assert!(matches!(
        db.store
            .mark_stale(&approval.id, "changed", stale_audit())
            .await,
        Err(Error::AlreadyResolved {
            state: ApprovalState::Pending,
            ..
        })
    ));
    db.store.resolve(&approval.id, approve()).await.unwrap();
    let stale = db
        .store
        .mark_stale(&approval.id, "notes/summary.md changed", stale_audit())
        .await
        .unwrap();
    assert_eq!(stale.state, ApprovalState::Stale);
    assert_eq!(stale.reason.as_deref(), Some("notes/summary.md changed"));
    assert_eq!(db.store.approval(&approval.id).await.unwrap(), stale);
    assert!(matches!(
        db.store
            .mark_stale(&approval.id, "again", stale_audit())
            .await,
        Err(Error::AlreadyResolved {
            state: ApprovalState::Stale,
            ..
        })
    ));
    let ledger: Vec<_> = db
        .store
        .approval_ledger(&approval.id)
        .await
        .unwrap()
        .into_iter()
        .map(|(action, _)| action)
        .collect();
    assert_eq!(
        ledger,
        [
            pp_types::AuditAction::ApprovalApproved,
            pp_types::AuditAction::ApprovalStale
        ]
    );
}

both!(a_decision_may_replace_the_fingerprint_and_the_badge_counts_pending_ones);
async fn a_decision_may_replace_the_fingerprint_and_the_badge_counts_pending_ones(db: TestDb) {
    assert_eq!(db.store.pending_approval_tasks().await.unwrap(), []);
    let (kept_task, kept) = db.waiting("keeps its fingerprint").await;
    let (seen_task, seen) = db.waiting("approved against what was seen").await;
    let mut pending = db.store.pending_approval_tasks().await.unwrap();
    pending.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    let mut expected = vec![kept_task.id.clone(), seen_task.id.clone()];
    expected.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    assert_eq!(pending, expected);

    let (kept, _) = db.store.resolve(&kept.id, approve()).await.unwrap();
    assert_eq!(
        kept.fingerprint,
        new_approval().fingerprint,
        "None keeps it"
    );
    let (seen, _) = db
        .store
        .resolve(
            &seen.id,
            Resolve {
                fingerprint: Some("seen-now".into()),
                ..approve()
            },
        )
        .await
        .unwrap();
    assert_eq!(seen.fingerprint.as_deref(), Some("seen-now"));
    assert_eq!(
        db.store
            .approval(&seen.id)
            .await
            .unwrap()
            .fingerprint
            .as_deref(),
        Some("seen-now")
    );
    // Decided approvals are not counted.
    assert_eq!(db.store.pending_approval_tasks().await.unwrap(), []);
}
