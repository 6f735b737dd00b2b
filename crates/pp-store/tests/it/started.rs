//! Started calls: the state before an approved call, kept with its `tool_started` row,
//! marked cut by a retry when no result was recorded, and named by the approval that
//! asks the call again.

use pp_store::{Before, NewStartedCall, StartedFile};
use pp_types::{ApprovalRecord, AuditAction, ChangeRoot, NewAudit, TaskState};
use pretty_assertions::assert_eq;

use crate::{START, TestDb, approve, new_approval};

fn started(approval: &ApprovalRecord) -> (NewStartedCall, NewAudit) {
    let call = NewStartedCall {
        approval_id: approval.id.clone(),
        task_id: approval.task_id.clone(),
        tool: approval.tool.clone(),
        target: approval.target.clone(),
        files: vec![StartedFile {
            root: ChangeRoot::Workspace,
            path: "notes/summary.md".into(),
            before: Before::Kept("ab12".into()),
            size: Some(3),
        }],
    };
    let audit = NewAudit {
        task_id: Some(approval.task_id.clone()),
        approval_id: Some(approval.id.clone()),
        tool: Some(approval.tool.clone()),
        ..NewAudit::new(AuditAction::ToolStarted)
    };
    (call, audit)
}

both!(a_started_call_with_no_result_is_cut_and_asked_again_once);
async fn a_started_call_with_no_result_is_cut_and_asked_again_once(db: TestDb) {
    let (task, approval) = db.waiting("write the summary").await;
    db.store.resolve(&approval.id, approve()).await.unwrap();
    let (call, audit) = started(&approval);
    db.store.call_started(call, audit).await.unwrap();
    let ledger = db.store.approval_ledger(&approval.id).await.unwrap();
    assert_eq!(
        ledger.last().map(|(action, _)| *action),
        Some(AuditAction::ToolStarted)
    );
    // Nothing asks it again before a retry marked it cut.
    let asking = db
        .store
        .reopen_approval(&task.id, &[TaskState::Running], new_approval(), Vec::new())
        .await
        .unwrap();
    let target = Some("notes/summary.md");
    assert_eq!(
        db.store
            .ask_cut_call_again(&asking.id, &task.id, "write_file", target)
            .await
            .unwrap(),
        None
    );
    assert_eq!(db.store.mark_cut_calls(&task.id).await.unwrap(), 1);
    assert_eq!(db.store.mark_cut_calls(&task.id).await.unwrap(), 0);
    // Another target is another call.
    assert_eq!(
        db.store
            .ask_cut_call_again(&asking.id, &task.id, "write_file", Some("other.md"))
            .await
            .unwrap(),
        None
    );
    let cut = db
        .store
        .ask_cut_call_again(&asking.id, &task.id, "write_file", target)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(cut.approval_id, approval.id);
    assert_eq!(cut.started_at, START);
    assert!(cut.cut);
    assert_eq!(cut.asked_again_by.as_ref(), Some(&asking.id));
    assert_eq!(
        cut.files,
        vec![StartedFile {
            root: ChangeRoot::Workspace,
            path: "notes/summary.md".into(),
            before: Before::Kept("ab12".into()),
            size: Some(3),
        }]
    );
    // Asked again once: a later approval of the same call is not flagged.
    assert_eq!(
        db.store
            .ask_cut_call_again(&asking.id, &task.id, "write_file", target)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        db.store.cut_call_asked_by(&asking.id).await.unwrap(),
        Some(cut)
    );
    assert_eq!(
        db.store.cut_call_asked_by(&approval.id).await.unwrap(),
        None
    );
}

both!(a_started_call_whose_result_is_recorded_is_not_cut);
async fn a_started_call_whose_result_is_recorded_is_not_cut(db: TestDb) {
    let (task, approval) = db.waiting("write the summary").await;
    db.store.resolve(&approval.id, approve()).await.unwrap();
    let (call, audit) = started(&approval);
    db.store.call_started(call, audit).await.unwrap();
    db.store
        .append_audit(NewAudit {
            task_id: Some(task.id.clone()),
            approval_id: Some(approval.id.clone()),
            ..NewAudit::new(AuditAction::ToolExecuted)
        })
        .await
        .unwrap();
    assert_eq!(db.store.mark_cut_calls(&task.id).await.unwrap(), 0);
}
