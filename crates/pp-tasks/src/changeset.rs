//! Changesets: the approval-needing calls of one model turn, shown together and decided
//! together — each call still its own approval with its own decision.

use std::collections::HashSet;

use pp_types::{ApprovalId, TaskId, Timestamp};
use serde::Serialize;
use serde_json::Value;

use crate::access::{Action, Caller};
use crate::error::{Error, Result};
use crate::resolve::{Decision, ResolveRequest};
use crate::service::TaskService;
use crate::view::ApprovalView;

/// A changeset as a review shows it: every card of the turn, in the model's order.
#[derive(Debug, Clone, Serialize)]
pub struct ChangesetView {
    /// The id (`cs_…`).
    pub id: String,
    /// The suspended task.
    pub task_id: TaskId,
    /// How many calls it has.
    pub size: u32,
    /// How many still wait for a decision.
    pub pending: u32,
    /// When it was requested.
    pub created_at: Timestamp,
    /// Its cards, each pending one pre-checked as `GET /api/approvals/{id}` does.
    pub approvals: Vec<ApprovalView>,
}

/// One decision of a changeset's resolve.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangesetDecision {
    /// The approval decided; must belong to the changeset.
    pub approval_id: ApprovalId,
    /// Approve or reject.
    pub decision: Decision,
    /// Arguments replacing the call's (approve only).
    pub edited_arguments: Option<Value>,
    /// Why (reject).
    pub reason: Option<String>,
    /// The precheck fingerprint the person saw (see [`ResolveRequest::seen_fingerprint`]).
    pub seen_fingerprint: Option<String>,
}

pp_types::wire_enum! {
    /// What became of one decision of a changeset's resolve.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum DecisionStatus {
        /// Recorded (an approve may still end `stale` if its target changed since the
        /// request and no fingerprint was sent, as for single resolves).
        Accepted => "accepted",
        /// The approval was decided before (another tab, a double click).
        AlreadyResolved => "already_resolved",
        /// The target is not in the state the person saw: nothing recorded, still pending.
        ChangedSinceSeen => "changed_since_seen",
        /// The edited arguments fail the tool's schema or the gate (or a reject carried
        /// them): nothing recorded, still pending.
        InvalidArguments => "invalid_arguments",
        /// The task is not waiting any more (cancelled).
        InvalidState => "invalid_state",
    }
}

/// The answer for one decision of a changeset's resolve.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DecisionResult {
    /// The approval the decision named.
    pub approval_id: String,
    /// What became of it.
    pub status: DecisionStatus,
    /// Why, when it was not accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl TaskService {
    /// The changeset `id` with its cards; [`Error::NotFound`] for an unknown id.
    pub async fn changeset_view(&self, id: &str) -> Result<ChangesetView> {
        let changeset = self.inner.store.changeset(id).await?;
        // One read of the task and one segment for every card of the set.
        let task = self.inner.store.task(&changeset.task_id).await.ok();
        let pairs: Vec<_> = changeset
            .approvals
            .into_iter()
            .map(|approval| (approval, task.clone()))
            .collect();
        let prechecks = self.precheck_rows(&pairs, true).await;
        let log = self.changes();
        let mut approvals = Vec::with_capacity(pairs.len());
        for ((approval, task), precheck) in pairs.into_iter().zip(prechecks) {
            let mut view = crate::view::view_of(&log, approval, task).await;
            view.current = precheck.as_ref().map(crate::view::CurrentTarget::of);
            view.precheck = precheck;
            approvals.push(view);
        }
        Ok(ChangesetView {
            id: changeset.id,
            task_id: changeset.task_id,
            size: changeset.size,
            pending: changeset.pending,
            created_at: changeset.created_at,
            approvals,
        })
    }

    /// Decides several calls of the changeset `id` at once, in the order given, each
    /// exactly as a single resolve (`caller`: checked for each, as
    /// [`TaskService::resolve_for`] does). The decision that leaves nothing pending
    /// resumes the task (with `wait`, this returns once that run ends or pauses).
    ///
    /// [`Error::NotFound`] for an unknown changeset; [`Error::Forbidden`] when `caller`
    /// may not decide on its task; [`Error::BadRequest`] (nothing decided) when a decision names an approval outside it, or one approval twice.
    /// Otherwise every decision gets a [`DecisionResult`], also when none was accepted.
    pub async fn resolve_changeset(
        &self,
        id: &str,
        decisions: Vec<ChangesetDecision>,
        actor: pp_types::Actor,
        via: Option<pp_types::Via>,
        caller: Option<&Caller>,
        wait: bool,
    ) -> Result<Vec<DecisionResult>> {
        let changeset = self.inner.store.changeset(id).await?;
        // Whoever may not decide on the task learns nothing more of the changeset.
        if let Some(caller) = caller {
            let task = self.inner.store.task(&changeset.task_id).await?;
            self.authorize(caller, Action::Resolve(&task)).await?;
        }
        let members: HashSet<&str> = changeset.approvals.iter().map(|a| a.id.as_str()).collect();
        let mut named = HashSet::new();
        for decision in &decisions {
            let approval = decision.approval_id.as_str();
            if !members.contains(approval) {
                return Err(Error::BadRequest(format!(
                    "approval `{approval}` is not part of changeset `{id}`"
                )));
            }
            if !named.insert(approval) {
                return Err(Error::BadRequest(format!(
                    "approval `{approval}` is decided twice; send one decision per approval"
                )));
            }
        }
        let mut results = Vec::with_capacity(decisions.len());
        for decision in decisions {
            let request = ResolveRequest {
                decision: decision.decision,
                edited_arguments: decision.edited_arguments,
                reason: decision.reason,
                seen_fingerprint: decision.seen_fingerprint,
                actor,
                via,
                remote_user: None,
                wait,
            };
            let resolved = match caller {
                Some(caller) => {
                    self.resolve_for(&decision.approval_id, request, caller)
                        .await
                }
                None => self.resolve(&decision.approval_id, request).await,
            };
            let (status, message) = match resolved {
                Ok(_) => (DecisionStatus::Accepted, None),
                Err(error) => match status_of(&error) {
                    Some(status) => (status, Some(error.to_string())),
                    None => return Err(error),
                },
            };
            results.push(DecisionResult {
                approval_id: decision.approval_id.to_string(),
                status,
                message,
            });
        }
        Ok(results)
    }
}

/// The status of a decision that was not accepted; `None` for errors that are not about
/// the decision itself (forbidden, the store failing), which end the whole request.
fn status_of(error: &Error) -> Option<DecisionStatus> {
    Some(match error {
        Error::AlreadyResolved { .. } => DecisionStatus::AlreadyResolved,
        Error::ChangedSinceSeen(_) => DecisionStatus::ChangedSinceSeen,
        Error::InvalidArguments(_) | Error::BadRequest(_) => DecisionStatus::InvalidArguments,
        Error::InvalidState { .. } => DecisionStatus::InvalidState,
        _ => return None,
    })
}
