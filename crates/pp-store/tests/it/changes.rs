//! The change log: rows, task counts, the revert intent/done pair and snapshot expiry.

use std::collections::HashSet;
use std::time::Duration;

use pp_store::{Before, ChangeState, NewChange};
use pp_types::{AuditAction, ChangeKind, ChangeRoot, NewAudit, TaskId};
use pretty_assertions::assert_eq;

use crate::TestDb;

fn change(task: &TaskId, kind: ChangeKind, before: Before) -> NewChange {
    NewChange {
        task_id: task.clone(),
        approval_id: None,
        tool: "write_file".into(),
        kind,
        path: Some("a.txt".into()),
        from_path: None,
        root: ChangeRoot::Workspace,
        bytes: Some(3),
        before,
        before_mode: None,
        after_fingerprint: Some("fp".into()),
        after_sha256: Some("after".into()),
    }
}

both!(a_change_keeps_the_mode_and_owner_it_replaced);
async fn a_change_keeps_the_mode_and_owner_it_replaced(db: TestDb) {
    let task = db.create("tidy up").await;
    let mode = pp_types::FileMode {
        mode: 0o4750,
        uid: Some(4_000_000_000),
        gid: Some(0),
    };
    let deleted = db
        .store
        .insert_change(NewChange {
            before_mode: Some(mode),
            ..change(&task.id, ChangeKind::Deleted, Before::Kept("b".into()))
        })
        .await
        .unwrap();
    assert_eq!(deleted.before_mode, Some(mode));
    let loaded = db.store.change(&deleted.change.id).await.unwrap();
    assert_eq!(loaded.before_mode, Some(mode));
    // A change that recorded none (older rows, a created file) loads without one.
    let created = db
        .store
        .insert_change(change(&task.id, ChangeKind::Created, Before::Absent))
        .await
        .unwrap();
    assert_eq!(
        db.store
            .change(&created.change.id)
            .await
            .unwrap()
            .before_mode,
        None
    );
}

both!(a_change_keeps_the_root_its_path_is_relative_to);
async fn a_change_keeps_the_root_its_path_is_relative_to(db: TestDb) {
    let task = db.create("remember").await;
    let memory = db
        .store
        .insert_change(NewChange {
            tool: "memory_write".into(),
            path: Some("memory.md".into()),
            root: ChangeRoot::Memory,
            ..change(&task.id, ChangeKind::Edited, Before::Kept("b".into()))
        })
        .await
        .unwrap();
    let file = db
        .store
        .insert_change(change(&task.id, ChangeKind::Created, Before::Absent))
        .await
        .unwrap();
    assert_eq!(
        db.store
            .change(&memory.change.id)
            .await
            .unwrap()
            .change
            .root,
        ChangeRoot::Memory
    );
    assert_eq!(
        db.store.change(&file.change.id).await.unwrap().change.root,
        ChangeRoot::Workspace
    );
}

both!(changes_are_listed_oldest_first_and_counted_on_the_task);
async fn changes_are_listed_oldest_first_and_counted_on_the_task(db: TestDb) {
    let task = db.create("write").await;
    let other = db.create("other").await;
    let created = db
        .store
        .insert_change(change(&task.id, ChangeKind::Created, Before::Absent))
        .await
        .unwrap();
    db.store
        .insert_change(change(
            &task.id,
            ChangeKind::Edited,
            Before::Kept("b".into()),
        ))
        .await
        .unwrap();
    db.store
        .insert_change(change(&task.id, ChangeKind::Overwritten, Before::NotKept))
        .await
        .unwrap();
    let rows = db.store.task_changes(&task.id).await.unwrap();
    let summary: Vec<(ChangeKind, bool)> = rows
        .iter()
        .map(|row| (row.change.kind, row.change.revertible))
        .collect();
    assert_eq!(
        summary,
        [
            (ChangeKind::Created, true),
            (ChangeKind::Edited, true),
            (ChangeKind::Overwritten, false)
        ]
    );
    assert_eq!(rows[0].change.id, created.change.id);
    assert!(created.change.id.as_str().starts_with("c_"));
    let counts = db.store.task(&task.id).await.unwrap().changes;
    assert_eq!(
        (counts.created, counts.edited, counts.overwritten),
        (1, 1, 1)
    );
    assert_eq!(
        db.store.task(&other.id).await.unwrap().changes,
        Default::default()
    );
    let listed = db.store.list_tasks(None, 10).await.unwrap();
    assert_eq!(listed[1].changes.created, 1, "lists carry the counts too");
}

both!(a_revert_is_an_intent_then_done_once);
async fn a_revert_is_an_intent_then_done_once(db: TestDb) {
    let task = db.create("write").await;
    let target = db
        .store
        .insert_change(change(
            &task.id,
            ChangeKind::Overwritten,
            Before::Kept("old".into()),
        ))
        .await
        .unwrap();
    let intent = change(&task.id, ChangeKind::Reverted, Before::Kept("agent".into()));
    let pending = db
        .store
        .begin_revert(&target.change.id, intent.clone())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(pending.state, ChangeState::Pending);
    assert_eq!(pending.reverts.as_ref(), Some(&target.change.id));
    assert!(
        db.store
            .begin_revert(&target.change.id, intent.clone())
            .await
            .unwrap()
            .is_none(),
        "one revert under way at a time"
    );
    assert_eq!(
        db.store
            .pending_reverts(Some(&task.id))
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        db.store.task(&task.id).await.unwrap().changes.reverted,
        0,
        "not done yet"
    );

    let done = db
        .store
        .finish_revert(
            &pending.change.id,
            Some("fp2"),
            Some(9),
            NewAudit::new(AuditAction::ChangeReverted),
        )
        .await
        .unwrap();
    assert_eq!(
        (done.state, done.change.bytes),
        (ChangeState::Done, Some(9))
    );
    let target = db.store.change(&target.change.id).await.unwrap();
    assert_eq!(target.change.reverted_by.as_ref(), Some(&done.change.id));
    assert!(!target.change.revertible);
    assert!(
        db.store
            .begin_revert(&target.change.id, intent)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(db.store.task(&task.id).await.unwrap().changes.reverted, 1);
    let audit = db.store.list_audit(&Default::default()).await.unwrap();
    assert_eq!(audit[0].action, AuditAction::ChangeReverted);
    assert_eq!(
        audit[0].task_id.as_ref(),
        Some(&task.id),
        "filled in by the store"
    );
    assert!(db.store.pending_reverts(None).await.unwrap().is_empty());
}

both!(an_abandoned_intent_is_hidden_and_the_change_stays_revertible);
async fn an_abandoned_intent_is_hidden_and_the_change_stays_revertible(db: TestDb) {
    let task = db.create("write").await;
    let target = db
        .store
        .insert_change(change(&task.id, ChangeKind::Created, Before::Absent))
        .await
        .unwrap();
    let intent = change(&task.id, ChangeKind::Reverted, Before::Kept("agent".into()));
    let pending = db
        .store
        .begin_revert(&target.change.id, intent.clone())
        .await
        .unwrap()
        .unwrap();
    db.store.abandon_revert(&pending.change.id).await.unwrap();
    assert_eq!(db.store.task_changes(&task.id).await.unwrap().len(), 1);
    assert!(
        db.store
            .begin_revert(&target.change.id, intent)
            .await
            .unwrap()
            .is_some()
    );
}

both!(old_snapshots_expire_and_only_named_blobs_stay_referenced);
async fn old_snapshots_expire_and_only_named_blobs_stay_referenced(db: TestDb) {
    let task = db.create("write").await;
    let old = db
        .store
        .insert_change(change(
            &task.id,
            ChangeKind::Overwritten,
            Before::Kept("old".into()),
        ))
        .await
        .unwrap();
    db.clock.advance(Duration::from_secs(10 * 86_400));
    let mut recent = change(&task.id, ChangeKind::Edited, Before::Kept("recent".into()));
    recent.after_sha256 = Some("recent-after".into());
    db.store.insert_change(recent).await.unwrap();
    let (expired, referenced) = db
        .store
        .expire_snapshots(Duration::from_secs(5 * 86_400))
        .await
        .unwrap();
    assert_eq!(expired, 1);
    assert_eq!(
        referenced,
        HashSet::from(["recent".to_owned(), "recent-after".to_owned()])
    );
    let old = db.store.change(&old.change.id).await.unwrap();
    assert_eq!(old.before, Before::Expired);
    assert!(!old.change.revertible);
}

both!(moves_deletes_and_folders_are_stored_with_where_a_move_came_from);
async fn moves_deletes_and_folders_are_stored_with_where_a_move_came_from(db: TestDb) {
    let task = db.create("tidy").await;
    let moved = db
        .store
        .insert_change(NewChange {
            tool: "move_file".into(),
            path: Some("b.txt".into()),
            from_path: Some("a.txt".into()),
            ..change(&task.id, ChangeKind::Moved, Before::Absent)
        })
        .await
        .unwrap();
    assert_eq!(moved.change.from_path.as_deref(), Some("a.txt"));
    assert!(moved.change.revertible);
    let folder = db
        .store
        .insert_change(change(&task.id, ChangeKind::Deleted, Before::Folder))
        .await
        .unwrap();
    assert_eq!(folder.before, Before::Folder);
    assert!(folder.change.revertible, "an empty folder is created again");
    let link = db
        .store
        .insert_change(change(&task.id, ChangeKind::Deleted, Before::NotKept))
        .await
        .unwrap();
    assert!(!link.change.revertible);
    let created = db
        .store
        .insert_change(change(&task.id, ChangeKind::FolderCreated, Before::Absent))
        .await
        .unwrap();
    assert!(created.change.revertible);
    let listed = db.store.task_changes(&task.id).await.unwrap();
    assert_eq!(listed.len(), 4);
    assert_eq!(listed[0].change.from_path.as_deref(), Some("a.txt"));
    assert_eq!(listed[1].change.from_path, None);
    let counts = db.store.task(&task.id).await.unwrap().changes;
    assert_eq!(
        (counts.moved, counts.deleted, counts.folder_created),
        (1, 2, 1)
    );
}

both!(an_approved_calls_outcome_is_stored_with_its_audit_and_changes_at_once);
async fn an_approved_calls_outcome_is_stored_with_its_audit_and_changes_at_once(db: TestDb) {
    let (task, approval) = db.waiting("x").await;
    db.store
        .resolve(&approval.id, crate::approve())
        .await
        .unwrap();
    let audit = |action: AuditAction, detail: &str| NewAudit {
        task_id: Some(task.id.clone()),
        approval_id: Some(approval.id.clone()),
        detail: Some(detail.into()),
        ..NewAudit::new(action)
    };
    let result = crate::started("the call's result");
    let stored = db
        .store
        .append_events_with_records(
            &task.id,
            std::slice::from_ref(&result),
            vec![audit(AuditAction::ToolExecuted, "wrote a.txt")],
            vec![NewChange {
                approval_id: Some(approval.id.clone()),
                ..change(&task.id, ChangeKind::Created, Before::Absent)
            }],
        )
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].event, result);
    let changes = db.store.approval_changes(&approval.id).await.unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].change.path.as_deref(), Some("a.txt"));
    assert_eq!(changes[0].change.approval_id.as_ref(), Some(&approval.id));
    assert!(
        db.store
            .approval_changes(&"a_other".into())
            .await
            .unwrap()
            .is_empty()
    );
    let ledger = db.store.approval_ledger(&approval.id).await.unwrap();
    let actions: Vec<_> = ledger.iter().map(|(action, _)| *action).collect();
    assert_eq!(
        actions,
        [AuditAction::ApprovalApproved, AuditAction::ToolExecuted]
    );
    assert_eq!(ledger[1].1.as_deref(), Some("wrote a.txt"));

    // Events with their audit rows: both or neither.
    let more = db
        .store
        .append_events_with_audit(
            &task.id,
            &[crate::started("another result")],
            vec![audit(AuditAction::ToolFailed, "disk full")],
        )
        .await
        .unwrap();
    assert_eq!(more.len(), 1);
    assert!(more[0].seq > stored[0].seq);
    let error = db
        .store
        .append_events_with_audit(
            &"t_missing".into(),
            &[crate::started("lost")],
            vec![NewAudit::new(AuditAction::ToolFailed)],
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, pp_store::Error::NotFound { what: "task", .. }),
        "{error:?}"
    );
    let failed = db
        .store
        .list_audit(&pp_store::AuditFilter {
            action: Some("tool_failed".into()),
            ..pp_store::AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(failed.len(), 1, "the refused append wrote no audit row");
    assert_eq!(failed[0].detail.as_deref(), Some("disk full"));
}
