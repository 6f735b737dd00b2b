//! The state a process leaves when it dies while an approved call runs: the approval
//! approved, the call started (its `tool_started` row and its targets' state before it
//! kept, as the runner writes them) and no result recorded; the task `interrupted`, as
//! recovery leaves it once the dead process's lease ran out.

use pp_store::{Before, NewStartedCall, Resolve, StartedFile, Store, TaskChange};
use pp_types::{
    Actor, ApprovalRecord, ApprovalState, AuditAction, ChangeRoot, NewAudit, TaskState,
};

/// Cuts `approval`'s call after it started: `created` names the workspace file it
/// writes, absent before the call (the test writes it, or not: the effect may or may
/// not have happened). Panics on a store failure.
pub async fn cut_after_start(store: &Store, approval: &ApprovalRecord, created: &str) {
    store
        .resolve(
            &approval.id,
            Resolve {
                state: ApprovalState::Approved,
                actor: Actor::Operator,
                reason: None,
                edited_arguments: None,
                edited_preview: None,
                fingerprint: None,
                audit: NewAudit::new(AuditAction::ApprovalApproved),
                task_to: TaskState::Running,
                events: Vec::new(),
            },
        )
        .await
        .expect("approve");
    let started = NewStartedCall {
        approval_id: approval.id.clone(),
        task_id: approval.task_id.clone(),
        tool: approval.tool.clone(),
        target: approval.target.clone(),
        files: vec![StartedFile {
            root: ChangeRoot::Workspace,
            path: created.to_owned(),
            before: Before::Absent,
            size: None,
        }],
    };
    let audit = NewAudit {
        task_id: Some(approval.task_id.clone()),
        approval_id: Some(approval.id.clone()),
        tool: Some(approval.tool.clone()),
        ..NewAudit::new(AuditAction::ToolStarted)
    };
    store.call_started(started, audit).await.expect("start");
    store
        .transition(
            &approval.task_id,
            &[TaskState::Running],
            TaskChange::to(TaskState::Interrupted),
        )
        .await
        .expect("interrupt");
}
