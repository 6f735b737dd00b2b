//! What an approval is stored with, and a decision on it ([`crate::Store::suspend`],
//! [`crate::Store::resolve`]).

use pp_types::{
    Actor, ApprovalRecord, ApprovalState, Checkpoint, Event, NewAudit, Risk, TaskId, TaskState,
    Timestamp, WriteLabel,
};
use serde_json::Value;

/// An approval request to store (it starts `pending`).
#[derive(Debug, Clone, PartialEq)]
pub struct NewApproval {
    /// The tool's name.
    pub tool: String,
    /// The tool's capability.
    pub capability: String,
    /// The tool's risk.
    pub risk: Risk,
    /// Create or overwrite, when the tool described its effect.
    pub label: Option<WriteLabel>,
    /// The target path as the model wrote it.
    pub target: Option<String>,
    /// The arguments the person is shown.
    pub arguments: Value,
    /// What the person is shown of the target (the jail's fingerprint: `absent`, or metadata plus a content hash).
    pub fingerprint: Option<String>,
    /// Everything needed to continue the task (the whole changeset's).
    pub checkpoint: Checkpoint,
    /// The id of the checkpoint's pending call this approval decides.
    pub call_id: String,
    /// The changeset it joins: set by [`crate::Store::suspend`] (which makes one for the
    /// approvals it inserts together); `None` elsewhere.
    pub changeset_id: Option<String>,
    /// Whether what the call would replace can be kept for a revert; `None` for tools
    /// without a file effect.
    pub revertible: Option<bool>,
}

/// The approval-needing calls of one model turn, decided together
/// ([`crate::Store::changeset`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Changeset {
    /// The id (`cs_…`).
    pub id: String,
    /// The suspended task.
    pub task_id: TaskId,
    /// How many approvals it has.
    pub size: u32,
    /// How many of them still wait for a decision.
    pub pending: u32,
    /// When it was stored.
    pub created_at: Timestamp,
    /// Its approvals, in the model's order.
    pub approvals: Vec<ApprovalRecord>,
}

/// A person's decision on a pending approval, applied by [`crate::Store::resolve`].
#[derive(Debug, Clone, PartialEq)]
pub struct Resolve {
    /// `Approved`, `Rejected` or `Stale` (`Pending` is refused).
    pub state: ApprovalState,
    /// Who decided.
    pub actor: Actor,
    /// The operator's reason (rejections) or why it went stale.
    pub reason: Option<String>,
    /// The edited arguments it was approved with.
    pub edited_arguments: Option<Value>,
    /// An approval with edited arguments: the edited call's effect, described at the
    /// decision (what the card and the outcome show as what ran).
    pub edited_preview: Option<pp_types::EffectPreview>,
    /// The target fingerprint the call is approved against, replacing the stored one
    /// (the one the person saw, or an edited call's target as it was at the decision);
    /// `None` keeps it. The check right before the call runs compares with it.
    pub fingerprint: Option<String>,
    /// The audit row; the store fills in `approval_id` and `task_id`, and `actor` when
    /// it is `None` (with [`Resolve::actor`]).
    pub audit: NewAudit,
    /// Where the task goes (usually `Running`); it must be `WaitingApproval` now.
    pub task_to: TaskState,
    /// Events appended in the same transaction.
    pub events: Vec<Event>,
}
