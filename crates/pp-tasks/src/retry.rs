//! Retry continues: an interrupted task picks up from the checkpoint of the newest
//! changeset whose approved calls all have a recorded result, each answered with that
//! result; only the steps after it run again (reads repeat, writes ask). A person is
//! never asked twice for a change that already ran.

use pp_agent::Resolution;
use pp_store::Store;
use pp_types::{ApprovalRecord, ApprovalState, EventKind, Message, StoredEvent, TaskRecord};

use crate::resolve::decided;
use crate::runner::Start;

/// Where a retry continues: a changeset's approvals (their checkpoint is the one to
/// resume from) and the answer of each of its calls.
#[derive(Debug)]
pub(crate) struct Continuation {
    /// The changeset's approvals, in the model's order.
    pub(crate) approvals: Vec<ApprovalRecord>,
    /// `(call_id, resolution)` for each: the recorded result of an approved call, the
    /// rejection or staleness as decided.
    pub(crate) decisions: Vec<(String, Resolution)>,
}

impl Continuation {
    /// How many model responses the checkpoint holds (each model call answers one
    /// assistant message): where a scripted model goes on.
    pub(crate) fn model_calls(&self) -> u64 {
        self.approvals.first().map_or(0, |approval| {
            approval
                .checkpoint
                .messages
                .iter()
                .filter(|message| matches!(message, Message::Assistant { .. }))
                .count() as u64
        })
    }

    /// The tools whose recorded results the retry reuses, for the timeline.
    pub(crate) fn describe(&self) -> String {
        let names: Vec<String> = self
            .approvals
            .iter()
            .filter(|approval| approval.state == ApprovalState::Approved)
            .map(|approval| format!("`{}`", approval.tool))
            .collect();
        if names.is_empty() {
            "continuing from the last decided step; the steps after it run again".to_owned()
        } else {
            format!(
                "continuing after {} (its result is recorded, nothing is asked or run \
                 again); the steps after it run again",
                names.join(", ")
            )
        }
    }
}

/// The continuation of task `approvals` (all of a task's, oldest first) given its
/// `events`: the newest changeset that is wholly decided and whose approved calls all
/// have their result in the event log after they were asked for; `None` when there is
/// none (the task starts again from the prompt).
pub(crate) fn continuation(
    approvals: &[ApprovalRecord],
    events: &[StoredEvent],
) -> Option<Continuation> {
    let mut groups: Vec<Vec<&ApprovalRecord>> = Vec::new();
    for approval in approvals {
        let same = groups.last_mut().filter(|group| {
            group.first().is_some_and(|first| {
                first.changeset_id.is_some() && first.changeset_id == approval.changeset_id
            })
        });
        match same {
            Some(group) => group.push(approval),
            None => groups.push(vec![approval]),
        }
    }
    groups
        .iter()
        .rev()
        .find_map(|group| answered(group, events))
}

/// Every call of `group` answered from what was decided and recorded, or `None`.
fn answered(group: &[&ApprovalRecord], events: &[StoredEvent]) -> Option<Continuation> {
    let mut decisions = Vec::with_capacity(group.len());
    for approval in group {
        let resolution = match approval.state {
            ApprovalState::Approved => recorded(approval, events)?,
            ApprovalState::Rejected | ApprovalState::Stale => decided(approval),
            ApprovalState::Pending | ApprovalState::Cancelled => return None,
        };
        decisions.push((approval.call_id.clone(), resolution));
    }
    Some(Continuation {
        approvals: group.iter().map(|approval| (*approval).clone()).collect(),
        decisions,
    })
}

/// The result recorded for `approval`'s call: the first result or error of its call id
/// after the approval was asked for.
fn recorded(approval: &ApprovalRecord, events: &[StoredEvent]) -> Option<Resolution> {
    let asked = events.iter().position(|stored| {
        matches!(
            &stored.event.kind,
            EventKind::ApprovalRequired { approval_id: Some(id), .. } if id == approval.id.as_str()
        )
    })?;
    events[asked..]
        .iter()
        .find_map(|stored| match &stored.event.kind {
            EventKind::ToolResult {
                call_id, content, ..
            } if *call_id == approval.call_id => Some(Resolution::Recorded {
                content: content.clone(),
                failed: false,
            }),
            EventKind::ToolError {
                call_id, message, ..
            } if *call_id == approval.call_id => Some(Resolution::Recorded {
                content: message.clone(),
                failed: true,
            }),
            _ => None,
        })
}

/// How a claimed task starts: from a changeset decided on a server without the
/// task's workspace (its decisions stored, not yet carried out here), from the changeset
/// a retry continues from (a queued task with a model position is one — a new task or a
/// retry from the prompt is at 0), or from the prompt.
pub(crate) async fn start_of(store: &Store, task: &TaskRecord) -> Start {
    let Ok(approvals) = store.approvals_for_task(&task.id).await else {
        return Start::Fresh;
    };
    if approvals.is_empty() {
        return Start::Fresh;
    }
    let Ok(events) = store.task_events(&task.id, 0).await else {
        return Start::Fresh;
    };
    let found = decided_elsewhere(&approvals, &events).or_else(|| {
        (task.script_position > 0)
            .then(|| continuation(&approvals, &events))
            .flatten()
    });
    match found {
        Some(continuation) => Start::Resume {
            approvals: continuation.approvals,
            decisions: continuation.decisions,
            segment: None,
        },
        None => Start::Fresh,
    }
}

/// The newest changeset when every call of it is decided and none of the decisions was
/// carried out yet (no `approval_resolved` for its calls, no retry since it was asked):
/// decided on a server that does not have the workspace, for the worker that has it.
pub(crate) fn decided_elsewhere(
    approvals: &[ApprovalRecord],
    events: &[StoredEvent],
) -> Option<Continuation> {
    let newest = approvals.last()?;
    let group: Vec<&ApprovalRecord> = match &newest.changeset_id {
        Some(changeset) => approvals
            .iter()
            .filter(|approval| approval.changeset_id.as_ref() == Some(changeset))
            .collect(),
        None => vec![newest],
    };
    let first = group.first()?;
    let asked = events.iter().position(|stored| {
        matches!(
            &stored.event.kind,
            EventKind::ApprovalRequired { approval_id: Some(id), .. } if id == first.id.as_str()
        )
    })?;
    let calls: Vec<&str> = group
        .iter()
        .map(|approval| approval.call_id.as_str())
        .collect();
    let carried_out = events[asked..]
        .iter()
        .any(|stored| match &stored.event.kind {
            EventKind::ApprovalResolved { call_id, .. } => calls.contains(&call_id.as_str()),
            EventKind::TaskRetried { .. } => true,
            _ => false,
        });
    let mut decisions = Vec::with_capacity(group.len());
    for approval in &group {
        match approval.state {
            ApprovalState::Approved | ApprovalState::Rejected | ApprovalState::Stale => {
                decisions.push((approval.call_id.clone(), decided(approval)));
            }
            ApprovalState::Pending | ApprovalState::Cancelled => return None,
        }
    }
    (!carried_out).then(|| Continuation {
        approvals: group.into_iter().cloned().collect(),
        decisions,
    })
}

/// Links each of the new `approvals` that asks again a call a retry found cut (it
/// started and has no recorded result: it may already have run) to that call, so its
/// card says so ([`pp_store::Store::ask_cut_call_again`]). A failed link leaves the card
/// without the notice; the approval itself stands.
pub(crate) async fn ask_again(store: &Store, approvals: &[ApprovalRecord]) {
    for approval in approvals {
        // The link is a notice on the card: failing to make it leaves the approval as
        // any other, which is still asked (never run blind).
        let _ = store
            .ask_cut_call_again(
                &approval.id,
                &approval.task_id,
                &approval.tool,
                approval.target.as_deref(),
            )
            .await;
    }
}
