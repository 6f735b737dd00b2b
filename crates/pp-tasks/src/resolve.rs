//! Resolving an approval: exactly once, with a fresh gate, then resuming from the
//! stored checkpoint.

use pp_agent::{Resolution, ToolContext};
use pp_store::Resolve;
use pp_types::{
    Actor, ApprovalId, ApprovalRecord, ApprovalState, AuditAction, Event, EventKind, NewAudit,
    TaskRecord, TaskState, Via,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::access::{Action, Caller};
use crate::checks::{Moment, Refusal, assess, target_of};
use crate::error::{Error, Result};
use crate::remote;
use crate::runner::Start;
use crate::segment::arguments_hash;
use crate::service::TaskService;

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
    /// The precheck fingerprint of the target as the person saw it (of the edited
    /// call's target, with `edited_arguments`): an approve against a target no longer
    /// in that state is refused with [`Error::ChangedSinceSeen`] and records nothing; on
    /// a match the call is approved against that state, even if it changed since the
    /// request. `None`: the target must be as it was when the approval was requested.
    pub seen_fingerprint: Option<String>,
    /// Who decided.
    pub actor: Actor,
    /// Where the person decided (`None` only for expiry): recorded on the approval and
    /// its audit row. A link or a chat app (`link`, `telegram`) may approve only what
    /// [`TaskService::remote_refusal`] allows, and never with edited arguments.
    pub via: Option<Via>,
    /// Who decided where there is no team user: the person a remote decision came from
    /// (`telegram:123456 (@name)`), recorded as the approval's and the audit row's user
    /// when no [`Caller`] names one.
    pub remote_user: Option<String>,
    /// Wait for the resumed run to finish or pause again before returning.
    pub wait: bool,
}

impl TaskService {
    /// Resolves a pending approval.
    ///
    /// The decision and its audit row are recorded in one compare-and-set transaction; a
    /// second resolve of the same approval gets [`Error::AlreadyResolved`] and never runs
    /// anything. An approval whose task was cancelled first gets [`Error::InvalidState`]
    /// (the cancel won). Before anything is recorded, an approval passes the
    /// pre-execution checks (`checks::assess`, the same ones repeated right
    /// before the call runs): edited arguments are validated against the tool's schema
    /// and a freshly built gate ([`Error::InvalidArguments`] leaves the approval pending);
    /// if the target changed since the person was shown it, the approval ends `stale`,
    /// the call does not run and the model is told to look again. Then the task resumes
    /// from the stored checkpoint (no second trip through the queue); with `wait` the
    /// call returns once it finishes or pauses again.
    pub async fn resolve(&self, id: &ApprovalId, request: ResolveRequest) -> Result<TaskRecord> {
        self.resolve_checked(id, request, None).await
    }

    /// Like [`TaskService::resolve`], for `caller`: whether they may decide on the
    /// approval's task is checked first ([`TaskService::authorize`] with
    /// [`Action::Resolve`], their role and grants as they are now), and the team user who
    /// decided is recorded on the approval (`resolved_by_user`) and its audit row
    /// (`user`). The task is read once, for the check and the decision alike.
    pub async fn resolve_for(
        &self,
        id: &ApprovalId,
        request: ResolveRequest,
        caller: &Caller,
    ) -> Result<TaskRecord> {
        self.resolve_checked(id, request, Some(caller)).await
    }

    /// Waits for one of the decisions' turns
    /// ([`DECISIONS_IN_FLIGHT`](crate::shared::DECISIONS_IN_FLIGHT)), then decides. The
    /// decision's own state (records, segment, verdict: about 15 KB) is boxed only once
    /// the turn has come, so a thousand resolves waiting their turn hold a few hundred
    /// bytes each, not the whole decision.
    async fn resolve_checked(
        &self,
        id: &ApprovalId,
        request: ResolveRequest,
        caller: Option<&Caller>,
    ) -> Result<TaskRecord> {
        let permit = self.inner.shared.decisions.acquire().await.ok();
        Box::pin(self.decide(id, request, caller, permit)).await
    }

    /// [`TaskService::resolve_checked`] once its turn has come: `permit` is held until
    /// the decision is recorded and its run handed on, not while the run runs.
    async fn decide(
        &self,
        id: &ApprovalId,
        request: ResolveRequest,
        caller: Option<&Caller>,
        permit: Option<tokio::sync::SemaphorePermit<'_>>,
    ) -> Result<TaskRecord> {
        let shared = &self.inner.shared;
        let approval = shared.store.approval(id).await?;
        let task = shared.store.task(&approval.task_id).await?;
        let user = match caller {
            Some(caller) => {
                self.authorize(caller, Action::Resolve(&task)).await?;
                caller.user.clone()
            }
            None => None,
        }
        .or_else(|| request.remote_user.clone());
        // The decision is checked and the task resumed in this process when it has the
        // task's workspace (each host maps names to its own folders). In team mode a
        // process without it records the decision and hands the run to a worker that
        // has it: that worker checks the target (against `seen_fingerprint`, which
        // replaces the stored one) right before the call runs.
        let root = match shared.workspace_root(&task) {
            Ok(root) => Some(root),
            Err(Error::NotFound { .. }) if shared.settings.team.is_some() => None,
            Err(error) => return Err(error),
        };
        let cancel_won = || Error::InvalidState {
            id: task.id.to_string(),
            state: TaskState::Cancelled,
            action: "resolve",
        };
        if approval.state == ApprovalState::Cancelled {
            return Err(cancel_won());
        }
        if approval.state != ApprovalState::Pending {
            return Err(Error::AlreadyResolved {
                id: id.to_string(),
                state: approval.state,
            });
        }
        if remote::is_remote(request.via) && request.decision == Decision::Approve {
            if request.edited_arguments.is_some() {
                return Err(Error::BadRequest(
                    "a link or a chat app approves the call as shown, never edited".into(),
                ));
            }
            if let Some(why) = self.remote_refusal(&approval) {
                return Err(Error::NotRemotelyApprovable(why));
            }
        }
        if request.decision == Decision::Reject && request.edited_arguments.is_some() {
            return Err(Error::BadRequest(
                "edited_arguments can only be sent with decision approve".into(),
            ));
        }

        // The segment built to check an approval runs the resumed call too: one segment
        // per decision, built after the person decided.
        let mut built = None;
        let mut fingerprint = None;
        let mut edited_preview = None;
        let (state, action, reason, target) = match (request.decision, root.as_ref()) {
            (Decision::Reject, _) => (
                ApprovalState::Rejected,
                AuditAction::ApprovalRejected,
                request.reason.clone(),
                approval.target.clone(),
            ),
            (Decision::Approve, None) => {
                if request.edited_arguments.is_some() {
                    return Err(Error::BadRequest(format!(
                        "an edited call is checked where its workspace is: this server does \
                         not have the workspace `{}`; approve it unedited here, or edit it \
                         on a server that has the workspace",
                        task.workspace
                    )));
                }
                fingerprint.clone_from(&request.seen_fingerprint);
                (
                    ApprovalState::Approved,
                    AuditAction::ApprovalApproved,
                    None,
                    approval.target.clone(),
                )
            }
            (Decision::Approve, Some(root)) => {
                let segment = shared.segment(root).await?;
                let context =
                    ToolContext::for_task(task.id.as_str(), None).with_actor(task.created_by);
                let edited = request.edited_arguments.as_ref();
                let moment = Moment::Decision {
                    seen: request.seen_fingerprint.as_deref(),
                };
                let (segment, verdict) =
                    assess(segment, &approval, edited, &context, moment).await?;
                let target = edited
                    .and_then(|edited| target_of(&segment, &approval.tool, edited))
                    .or_else(|| approval.target.clone());
                built = Some(segment);
                match verdict {
                    Err(Refusal::InvalidEdit(message)) => {
                        let event = Event {
                            step: approval.checkpoint.step,
                            kind: EventKind::ApprovalEditRejected {
                                call_id: approval.call_id.clone(),
                                message: message.clone(),
                            },
                        };
                        shared.store.append_events(&task.id, &[event]).await?;
                        return Err(Error::InvalidArguments(message));
                    }
                    Err(Refusal::ChangedSinceSeen(message)) => {
                        return Err(Error::ChangedSinceSeen(message));
                    }
                    Err(Refusal::Stale(message)) => (
                        ApprovalState::Stale,
                        AuditAction::ApprovalStale,
                        Some(message),
                        target,
                    ),
                    Ok(approved_against) => {
                        fingerprint = approved_against;
                        // An edited call is recorded as what runs: its own effect.
                        if let (Some(edited), Some(tool)) =
                            (edited, segment_tool(built.as_ref(), &approval.tool))
                        {
                            edited_preview = tool.preview(&context, edited).await;
                        }
                        (
                            ApprovalState::Approved,
                            AuditAction::ApprovalApproved,
                            None,
                            target,
                        )
                    }
                }
            }
        };
        let executed = request
            .edited_arguments
            .clone()
            .unwrap_or_else(|| approval.arguments.clone());
        let audit = NewAudit {
            actor: Some(request.actor),
            task_id: Some(task.id.clone()),
            approval_id: Some(approval.id.clone()),
            tool: Some(approval.tool.clone()),
            target,
            arguments_hash: (state == ApprovalState::Approved).then(|| arguments_hash(&executed)),
            detail: reason.clone(),
            action,
            user,
            via: request.via,
        };
        let resolve = Resolve {
            state,
            actor: request.actor,
            reason,
            edited_arguments: request.edited_arguments.clone(),
            fingerprint,
            edited_preview,
            audit,
            // Here the run resumes in this process; elsewhere a worker that has the
            // workspace claims it (`retry::start_of` resumes the decided changeset).
            task_to: if root.is_some() {
                TaskState::Running
            } else {
                TaskState::Queued
            },
            events: Vec::new(),
        };
        let resolved = shared.store.resolve(id, resolve).await;
        let (approval, task) = match resolved {
            Ok(resolved) => resolved,
            // A cancel committed between our read and our compare-and-set: it won.
            Err(pp_store::Error::AlreadyResolved {
                state: ApprovalState::Cancelled,
                ..
            }) => return Err(cancel_won()),
            Err(pp_store::Error::Conflict { current, .. }) => {
                return Err(Error::InvalidState {
                    id: task.id.to_string(),
                    state: current,
                    action: "resolve",
                });
            }
            Err(other) => return Err(Error::from_store(other)),
        };
        // Other calls of its changeset still wait for a decision: nothing runs yet. Or
        // the run was handed to the workers that have the workspace.
        if task.state == TaskState::Queued {
            self.inner.wake.notify_one();
        }
        if task.state != TaskState::Running {
            return Ok(task);
        }
        let approvals = match &approval.changeset_id {
            Some(changeset) => shared.store.changeset(changeset).await?.approvals,
            None => vec![approval],
        };
        let decisions = approvals
            .iter()
            .map(|approval| (approval.call_id.clone(), decided(approval)))
            .collect();
        let finished = self.spawn_segment(
            task.clone(),
            Start::Resume {
                approvals,
                decisions,
                segment: built.map(Box::new),
            },
        );
        drop(permit);
        if request.wait {
            return match finished.await {
                Ok(record) => Ok(record),
                Err(_) => Ok(shared.store.task(&task.id).await?),
            };
        }
        Ok(task)
    }
}

/// What the agent is told of a decided approval's call: approve (with the edited
/// arguments and who edited them), reject or stale, as stored.
pub(crate) fn decided(approval: &ApprovalRecord) -> Resolution {
    match approval.state {
        ApprovalState::Approved => Resolution::Approve {
            edited_arguments: approval.edited_arguments.clone(),
            edited_by: approval.edited_arguments.as_ref().map(|_| {
                approval.resolved_by_user.clone().unwrap_or_else(|| {
                    approval
                        .resolved_by
                        .map_or("operator", |actor| actor.as_str())
                        .to_owned()
                })
            }),
        },
        ApprovalState::Stale => Resolution::Stale {
            message: approval.reason.clone().unwrap_or_default(),
        },
        ApprovalState::Rejected => Resolution::Reject {
            reason: approval.reason.clone(),
        },
        // Not reached (the changeset's last decision is what resumes it); never runs.
        ApprovalState::Pending | ApprovalState::Cancelled => Resolution::Reject {
            reason: Some("the call was not decided".to_owned()),
        },
    }
}

/// The tool `name` of the segment built for a decision, if one was built and has it.
fn segment_tool<'a>(
    segment: Option<&'a crate::segment::Segment>,
    name: &str,
) -> Option<&'a std::sync::Arc<dyn pp_agent::Tool>> {
    segment?.registry.get(name)
}
