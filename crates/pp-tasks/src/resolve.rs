//! Resolving an approval: exactly once, with a fresh gate, then resuming from the
//! stored checkpoint.

use pp_agent::{Resolution, check_edit};
use pp_store::Resolve;
use pp_types::{
    Actor, ApprovalId, ApprovalState, Event, EventKind, NewAudit, TaskRecord, TaskState,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::runner::Start;
use crate::segment::{Segment, arguments_hash};
use crate::{Error, Result, TaskService};

/// The person's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run the call (possibly with edited arguments).
    Approve,
    /// Do not run it.
    Reject,
}

/// A resolution request.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolveRequest {
    /// Approve or reject.
    pub decision: Decision,
    /// Arguments replacing the call's arguments entirely (approve only).
    pub edited_arguments: Option<Value>,
    /// Why (reject).
    pub reason: Option<String>,
    /// Who decided.
    pub actor: Actor,
    /// Wait for the resumed run to finish or pause again before returning.
    pub wait: bool,
}

impl TaskService {
    /// Resolves a pending approval.
    ///
    /// The decision and its audit row are recorded in one compare-and-set transaction; a
    /// second resolve of the same approval gets [`Error::AlreadyResolved`] and never runs
    /// anything. Edited arguments are validated against the tool's schema and checked by
    /// a freshly built gate first ([`Error::InvalidArguments`] leaves the approval
    /// pending). If the target changed since the person was shown it, the approval ends
    /// `stale`, the call does not run and the model is told to look again. Then the task
    /// resumes from the stored checkpoint (no second trip through the queue); with
    /// `wait` the call returns once it finishes or pauses again.
    pub async fn resolve(&self, id: &ApprovalId, request: ResolveRequest) -> Result<TaskRecord> {
        let store = &self.inner.store;
        let approval = store.approval(id).map_err(Error::from_store)?;
        if approval.state != ApprovalState::Pending {
            return Err(Error::AlreadyResolved {
                id: id.to_string(),
                state: approval.state,
            });
        }
        if request.decision == Decision::Reject && request.edited_arguments.is_some() {
            return Err(Error::BadRequest(
                "edited_arguments can only be sent with decision approve".into(),
            ));
        }
        let task = store.task(&approval.task_id).map_err(Error::from_store)?;
        let segment = Segment::build(
            std::path::Path::new(&task.workspace_path),
            &self.inner.extra_tools,
        )?;

        if let Some(edited) = &request.edited_arguments {
            let tool = segment.registry.get(&approval.tool).ok_or_else(|| {
                Error::InvalidArguments(format!("tool `{}` is not available", approval.tool))
            })?;
            if let Err(message) = check_edit(tool.as_ref(), &segment.gate, edited) {
                store.append_events(
                    &task.id,
                    &[Event {
                        step: approval.checkpoint.step,
                        kind: EventKind::ApprovalEditRejected {
                            call_id: approval.checkpoint.pending.call.id.clone(),
                            message: message.clone(),
                        },
                    }],
                )?;
                return Err(Error::InvalidArguments(message));
            }
        }

        let executed = request
            .edited_arguments
            .clone()
            .unwrap_or_else(|| approval.arguments.clone());
        let (state, resolution, action, reason) = match request.decision {
            Decision::Reject => (
                ApprovalState::Rejected,
                Resolution::Reject {
                    reason: request.reason.clone(),
                },
                "approval_rejected",
                request.reason.clone(),
            ),
            Decision::Approve => {
                match stale_reason(segment.jail(), &approval, request.edited_arguments.as_ref()) {
                    Some(message) => (
                        ApprovalState::Stale,
                        Resolution::Stale {
                            message: message.clone(),
                        },
                        "approval_stale",
                        Some(message),
                    ),
                    None => (
                        ApprovalState::Approved,
                        Resolution::Approve {
                            edited_arguments: request.edited_arguments.clone(),
                        },
                        "approval_approved",
                        None,
                    ),
                }
            }
        };
        let audit = NewAudit {
            actor: Some(request.actor),
            action: action.to_owned(),
            task_id: Some(task.id.clone()),
            approval_id: Some(approval.id.clone()),
            tool: Some(approval.tool.clone()),
            target: executed
                .get("path")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| approval.target.clone()),
            arguments_hash: (state == ApprovalState::Approved).then(|| arguments_hash(&executed)),
            detail: reason.clone(),
        };
        let (approval, task) = store
            .resolve(
                id,
                Resolve {
                    state,
                    actor: request.actor,
                    reason,
                    edited_arguments: request.edited_arguments.clone(),
                    audit,
                    task_to: TaskState::Running,
                    events: Vec::new(),
                },
            )
            .map_err(Error::from_store)?;
        drop(segment);
        let finished = self.spawn_segment(
            task.clone(),
            Start::Resume {
                approval: Box::new(approval),
                resolution,
            },
        );
        if request.wait {
            return finished.await.or_else(|_| Ok(store.task(&task.id)?));
        }
        Ok(task)
    }
}

/// Why an approval is stale: its target changed after the person was shown it.
///
/// Edited arguments that point at another file skip the check (the person chose that
/// call themselves); edits that keep the target are checked like unedited approvals.
/// Called when the decision is recorded and again right before the call runs.
pub(crate) fn stale_reason(
    jail: &pp_gate::Jail,
    approval: &pp_types::ApprovalRecord,
    edited: Option<&Value>,
) -> Option<String> {
    let (Some(target), Some(shown)) = (&approval.target, &approval.fingerprint) else {
        return None;
    };
    if let Some(edited) = edited {
        let edited_target = edited.get("path").and_then(Value::as_str)?;
        let same = match (jail.check(edited_target), jail.check(target)) {
            (Ok(edited), Ok(original)) => edited == original,
            _ => false,
        };
        if !same {
            return None;
        }
    }
    let now = jail.fingerprint(target).ok();
    (now.as_deref() != Some(shown.as_str())).then(|| {
        format!(
            "not run: `{target}` changed after the approval was requested, so the person \
             approved a version they never saw; read it again and ask again if still needed"
        )
    })
}
