//! Waiting for a person's decision on a client's call, and for its outcome, which may
//! come from another process (`pocketpilot approvals approve`, the console's `serve`).

use pp_types::{
    ApprovalId, ApprovalRecord, ApprovalState, StoredEvent, TaskId, TaskRecord, TaskState,
};

use super::link::outcome_of;
use super::{CallReply, ClientSettings, Waiting};
use crate::service::TaskService;

/// Waits for the decision on the approval of `call_id` in `task`, then for the call's
/// outcome as the store records it, up to the wait limit; after it, answers `pending
/// approval <id>` (not an error: nothing is lost, the approval stays open).
pub(super) async fn decision(
    service: &TaskService,
    task: &TaskId,
    call_id: &str,
    settings: &ClientSettings,
    waiting: &(dyn Fn(&Waiting) + Send + Sync),
) -> CallReply {
    let store = &service.inner.store;
    let approval = store.approvals_for_task(task).await.map(|approvals| {
        approvals
            .into_iter()
            .find(|approval| approval.call_id == call_id)
    });
    let approval = match approval {
        Ok(Some(approval)) => approval,
        Ok(None) => {
            return CallReply::error(format!(
                "task {task} waits for an approval that is not stored"
            ));
        }
        Err(error) => return CallReply::error(format!("cannot read the approval: {error}")),
    };
    let started = tokio::time::Instant::now();
    let mut next_progress = started;
    loop {
        let waited = started.elapsed();
        let read = read_decided(store, &approval.id, task).await;
        let (current, events, record) = match read {
            Ok(read) => read,
            Err(error) => return CallReply::error(format!("cannot read the approval: {error}")),
        };
        if let Some(record) = record {
            let outcome = outcome_of(events.iter().map(|stored| &stored.event), call_id);
            if let Some((text, is_error)) = outcome {
                return CallReply { text, is_error };
            }
            if let Some(reply) = without_outcome(&current, record.state) {
                return reply;
            }
            if waited >= settings.wait_limit {
                return CallReply {
                    text: format!(
                        "approval {} was {}; the call's outcome is not recorded yet (task {} \
                         is {})",
                        current.id,
                        current.state.as_str(),
                        record.id,
                        record.state.as_str()
                    ),
                    is_error: false,
                };
            }
        } else {
            if waited >= settings.wait_limit {
                return pending(&current);
            }
            if tokio::time::Instant::now() >= next_progress {
                waiting(&Waiting {
                    approval: current.id.clone(),
                    waited,
                    limit: settings.wait_limit,
                });
                next_progress += settings.progress_every;
            }
        }
        tokio::time::sleep(settings.poll).await;
    }
}

/// The approval now and, once it is decided, the task's events and the task. The
/// events only once decided: a wait of minutes reads one row per poll. The task is read
/// before its events: a task seen past `running` has its call's outcome stored already,
/// so a run ending between the reads is never taken for one that recorded nothing.
async fn read_decided(
    store: &pp_store::Store,
    approval: &ApprovalId,
    task: &TaskId,
) -> pp_store::Result<(ApprovalRecord, Vec<StoredEvent>, Option<TaskRecord>)> {
    let approval = store.approval(approval).await?;
    if approval.state == ApprovalState::Pending {
        return Ok((approval, Vec::new(), None));
    }
    let record = store.task(task).await?;
    let events = store.task_events(task, 0).await?;
    Ok((approval, events, Some(record)))
}

/// What to answer when the approval is decided and no outcome of the call is recorded:
/// `None` while the resumed run may still record it.
fn without_outcome(approval: &ApprovalRecord, task: TaskState) -> Option<CallReply> {
    let reason = approval
        .reason
        .as_deref()
        .map(|reason| format!(": {reason}"))
        .unwrap_or_default();
    match approval.state {
        ApprovalState::Cancelled => Some(CallReply::error(format!(
            "approval {} was cancelled with its task",
            approval.id
        ))),
        // The run that resumes it records the outcome; until its task has left `running`
        // (or never got there) keep watching.
        _ if matches!(task, TaskState::Running | TaskState::WaitingApproval) => None,
        ApprovalState::Rejected => Some(CallReply::error(format!(
            "rejected by the operator{reason}"
        ))),
        ApprovalState::Stale => Some(CallReply::error(format!(
            "not run: the target changed after the approval was asked{reason}"
        ))),
        _ => Some(CallReply::error(format!(
            "approval {} was {} but the call's outcome was not recorded (task {})",
            approval.id,
            approval.state.as_str(),
            task.as_str()
        ))),
    }
}

/// The answer after the wait limit.
fn pending(approval: &ApprovalRecord) -> CallReply {
    CallReply {
        text: format!(
            "pending approval {id}: `{tool}` waits for a person's decision (`pocketpilot \
             approvals approve {id}` or the console); the approval stays open and the call \
             runs once when it is approved",
            id = approval.id,
            tool = approval.tool,
        ),
        is_error: false,
    }
}
