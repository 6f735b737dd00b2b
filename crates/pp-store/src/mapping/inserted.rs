//! What a backend returns for a row it has just inserted: the record built from the
//! input and what the insert decided (id, time), without reading the row back, the same
//! on both backends.

use pp_types::{
    Actor, ApprovalId, ApprovalRecord, ApprovalState, AuditEntry, ChangeCounts, Event, EventKind,
    NewAudit, TaskId, TaskRecord, TaskState, TaskUsage, Timestamp,
};

use crate::types::{ChatSession, NewApproval, NewChatSession, NewTask};

/// A task just inserted `queued` with `id` at `now` (`user`: who created it, in team mode).
pub(crate) fn task(id: TaskId, new: NewTask, user: Option<&str>, now: Timestamp) -> TaskRecord {
    TaskRecord {
        id,
        prompt: new.prompt,
        workspace: new.workspace,
        workspace_path: new.workspace_path,
        state: TaskState::Queued,
        created_by: new.created_by,
        origin: new.origin,
        created_by_user: user.map(str::to_owned),
        script: new.script,
        script_position: 0,
        running_ms: 0,
        final_text: None,
        failure_reason: None,
        error: None,
        created_at: now,
        updated_at: now,
        finished_at: None,
        changes: ChangeCounts::default(),
        usage: TaskUsage::default(),
    }
}

/// An approval just inserted `pending` as `id` for `task` at `now`.
pub(crate) fn approval(
    id: &ApprovalId,
    task: &TaskId,
    new: NewApproval,
    now: Timestamp,
) -> ApprovalRecord {
    ApprovalRecord {
        id: id.clone(),
        task_id: task.clone(),
        state: ApprovalState::Pending,
        tool: new.tool,
        capability: new.capability,
        risk: new.risk,
        label: new.label,
        target: new.target,
        arguments: new.arguments,
        fingerprint: new.fingerprint,
        checkpoint: new.checkpoint,
        call_id: new.call_id,
        changeset_id: new.changeset_id,
        created_at: now,
        resolved_at: None,
        resolved_by: None,
        resolved_by_user: None,
        resolved_via: None,
        reason: None,
        edited_arguments: None,
        edited_preview: None,
        revertible: new.revertible,
    }
}

/// A chat session just inserted with `id` at `now`: no summary yet.
pub(crate) fn chat_session(id: String, new: NewChatSession, now: Timestamp) -> ChatSession {
    ChatSession {
        id,
        title: new.title,
        workspace: new.workspace,
        created_by: new.created_by,
        created_at: now,
        updated_at: now,
        summary: None,
        summarised_through: 0,
    }
}

/// An audit row just appended as `id` at `at` (`actor`: the entry's, or the operator).
pub(crate) fn audit(id: i64, entry: NewAudit, at: Timestamp, actor: Actor) -> AuditEntry {
    AuditEntry {
        id,
        at,
        actor,
        action: entry.action,
        task_id: entry.task_id,
        approval_id: entry.approval_id,
        tool: entry.tool,
        target: entry.target,
        arguments_hash: entry.arguments_hash,
        detail: entry.detail,
        user: entry.user,
        via: entry.via,
    }
}

/// New ids for approvals stored together as changeset `changeset` at `now`, each
/// approval marked as part of it.
pub(crate) fn in_changeset(
    news: Vec<NewApproval>,
    changeset: &str,
    now: Timestamp,
) -> crate::error::Result<Vec<(ApprovalId, NewApproval)>> {
    news.into_iter()
        .map(|new| {
            let id = ApprovalId(crate::ids::new_id("a_", now)?);
            let new = NewApproval {
                changeset_id: Some(changeset.to_owned()),
                ..new
            };
            Ok((id, new))
        })
        .collect()
}

/// Fills `id` into `approval_required` events that do not name their approval yet.
pub(crate) fn with_approval_id(events: Vec<Event>, id: &ApprovalId) -> Vec<Event> {
    with_approval_ids(events, &[], |_| Some(id))
}

/// Fills each `approval_required` event that does not name its approval yet with the
/// approval `approval_for` gives for its call id, and `changeset` (if any).
pub(crate) fn with_approval_ids<'a>(
    mut events: Vec<Event>,
    changeset: &[&str],
    approval_for: impl Fn(&str) -> Option<&'a ApprovalId>,
) -> Vec<Event> {
    for event in &mut events {
        if let EventKind::ApprovalRequired {
            approval_id: approval_id @ None,
            changeset_id,
            call_id,
            ..
        } = &mut event.kind
            && let Some(id) = approval_for(call_id)
        {
            *approval_id = Some(id.to_string());
            if let Some(changeset) = changeset.first() {
                *changeset_id = Some((*changeset).to_owned());
            }
        }
    }
    events
}
