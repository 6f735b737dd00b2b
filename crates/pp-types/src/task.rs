//! Persisted records: tasks, approvals, stored events and the audit ledger.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{AuditAction, Checkpoint, Event, FailureReason, Risk, Timestamp, WriteLabel};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self(value.to_owned())
            }
        }
    };
}

id_type!(
    /// A task's id (`t_…`).
    TaskId
);
id_type!(
    /// An approval's id (`a_…`).
    ApprovalId
);
id_type!(
    /// A change's id (`c_…`): one entry of the change log (`crate::Change`).
    ChangeId
);

crate::wire_enum! {
    /// Where a task is in its life.
    ///
    /// `queued → running → (waiting_approval → running)* → completed | failed | cancelled |
    /// timed_out`; a task found `running` after a crash becomes `interrupted`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum TaskState {
        /// Waiting for a worker.
        Queued => "queued",
        /// A worker is running the loop.
        Running => "running",
        /// Suspended until a person resolves its pending approval.
        WaitingApproval => "waiting_approval",
        /// The model gave its final answer.
        Completed => "completed",
        /// Ended without an answer (see `failure_reason`).
        Failed => "failed",
        /// Stopped by the operator.
        Cancelled => "cancelled",
        /// Used up its running time.
        TimedOut => "timed_out",
        /// Found `running` after a crash; never re-run blindly, the operator may retry.
        Interrupted => "interrupted",
    }
}

impl TaskState {
    /// Whether the task has ended (interrupted tasks may still be retried).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Cancelled | Self::TimedOut
        )
    }
}

crate::wire_enum! {
    /// Who acted: the audit ledger keeps the agent's road and the operator's road apart.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Actor {
        /// The model, through the gate.
        Agent => "agent",
        /// The person at the console or the CLI.
        Operator => "operator",
        /// A schedule.
        Scheduler => "scheduler",
        /// A webhook.
        Webhook => "webhook",
        /// An MCP client talking to `pocketpilot mcp serve`.
        McpClient => "mcp_client",
    }
}

crate::wire_enum! {
    /// Where a person decided an approval: the audit ledger and the decided card say
    /// which way a "yes" or a "no" came in.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Via {
        /// The web console (a login cookie).
        Console => "console",
        /// The HTTP API (a bearer token) or an MCP client.
        Api => "api",
        /// The terminal: `run`, `chat`, `approvals`.
        Cli => "cli",
        /// A single-use approval link (`/d/{token}`).
        Link => "link",
        /// A button in a Telegram chat.
        Telegram => "telegram",
    }
}

/// A task as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The id.
    pub id: TaskId,
    /// The person's prompt.
    pub prompt: String,
    /// The workspace's configured name.
    pub workspace: String,
    /// The workspace root the task runs in.
    pub workspace_path: String,
    /// Current state.
    pub state: TaskState,
    /// Who created it.
    pub created_by: Actor,
    /// Which one started it, when `created_by` is not a person: the schedule's name, the
    /// webhook channel's name, the MCP client's name and version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The team user who created it (team mode; `None` in single-user mode and for
    /// tasks started by schedules, webhooks or MCP clients). The member rule ("see only
    /// your own tasks") reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by_user: Option<String>,
    /// The scripted model's turns, for scripted tasks (so any process can resume them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<Value>,
    /// Script turns already used.
    #[serde(default)]
    pub script_position: u64,
    /// Running time used so far, in milliseconds (waiting for a person does not count).
    pub running_ms: u64,
    /// The final answer, once completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_text: Option<String>,
    /// Why it failed (`policy_violation`, `max_steps`, `model_error`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<FailureReason>,
    /// Human-readable detail of a failure, cancellation or interruption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When its row last changed.
    pub updated_at: Timestamp,
    /// When it reached a terminal state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Timestamp>,
    /// How many changes on disk the change log records for it, by kind.
    #[serde(default)]
    pub changes: crate::ChangeCounts,
    /// Tokens its model calls used, and their estimated cost.
    #[serde(default)]
    pub usage: crate::TaskUsage,
}

crate::wire_enum! {
    /// Where an approval is in its life.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum ApprovalState {
        /// Waiting for a person.
        Pending => "pending",
        /// Approved; the call ran (or was refused by the fresh gate).
        Approved => "approved",
        /// Rejected; the model was told.
        Rejected => "rejected",
        /// The target changed since the person was shown it; the call did not run.
        Stale => "stale",
        /// Its task ended (cancelled, timed out) before anyone decided.
        Cancelled => "cancelled",
    }
}

/// An approval request as stored, with the checkpoint to resume from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRecord {
    /// The id.
    pub id: ApprovalId,
    /// The suspended task.
    pub task_id: TaskId,
    /// Current state.
    pub state: ApprovalState,
    /// The tool's name.
    pub tool: String,
    /// The tool's capability.
    pub capability: String,
    /// The tool's risk, from its spec.
    pub risk: Risk,
    /// Create or overwrite, when the tool described its effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<WriteLabel>,
    /// The target path as the model wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The arguments the person was shown.
    pub arguments: Value,
    /// What the person was shown of the target (the jail's fingerprint: `absent`, or metadata plus a content hash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// Everything needed to continue the task (the whole changeset's: every approval of
    /// a changeset carries the same checkpoint).
    pub checkpoint: Checkpoint,
    /// The id of the call this approval decides, one of the checkpoint's pending calls
    /// (for rows stored before changesets: the checkpoint's `pending` call).
    pub call_id: String,
    /// The changeset this approval belongs to: the approval-needing calls of one model
    /// turn, decided together (`None` on rows stored before changesets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changeset_id: Option<String>,
    /// When it was requested.
    pub created_at: Timestamp,
    /// When it was resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<Timestamp>,
    /// Who resolved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_by: Option<Actor>,
    /// The team user who resolved it (team mode; `None` otherwise), or the person a
    /// remote decision came from (`telegram:…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_by_user: Option<String>,
    /// Where the person decided (`console`, `api`, `cli`, `link`, `telegram`); `None`
    /// for expiry and rows decided before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_via: Option<Via>,
    /// The operator's reason (rejections) or why it went stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The edited arguments it was approved with, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_arguments: Option<Value>,
    /// Approved with edited arguments: the edited call's effect as described at the
    /// decision (target, label, diff) — what ran, not what was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited_preview: Option<crate::EffectPreview>,
    /// Whether what the call would replace can be kept for a revert (decided when the
    /// approval was requested: `false` above `[revert] max_bytes`); `None` for tools
    /// without a file effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revertible: Option<bool>,
}

impl ApprovalRecord {
    /// The pending call this approval decides: the checkpoint's call with
    /// [`ApprovalRecord::call_id`] (its `pending` call if none has that id).
    pub fn call(&self) -> &crate::PendingCall {
        self.checkpoint
            .pending_call(&self.call_id)
            .unwrap_or(&self.checkpoint.pending)
    }
}

/// An event as stored: the global sequence number serves as SSE `Last-Event-ID` for both
/// the per-task and the global stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// Global, strictly increasing sequence number.
    pub seq: i64,
    /// The task it belongs to.
    pub task_id: TaskId,
    /// When it was stored.
    pub at: Timestamp,
    /// The event.
    #[serde(flatten)]
    pub event: Event,
}

/// One row of the audit ledger: a side effect or a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Row id (increasing).
    pub id: i64,
    /// When it happened.
    pub at: Timestamp,
    /// Who acted.
    pub actor: Actor,
    /// What happened.
    pub action: AuditAction,
    /// The task, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<TaskId>,
    /// The approval, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<ApprovalId>,
    /// The tool, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The target path, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// `sha256:…` of the exact arguments executed (canonical JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_hash: Option<String>,
    /// Free-form detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The team user who acted (team mode; `None` otherwise), or the person a remote
    /// decision came from (`telegram:…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Where a person decided: `console`, `api`, `cli`, `link` or `telegram` (decisions
    /// only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
}

/// A new audit row (the store assigns `id` and `at`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAudit {
    /// Who acted (default: operator).
    pub actor: Option<Actor>,
    /// What happened.
    pub action: AuditAction,
    /// The task, if any.
    pub task_id: Option<TaskId>,
    /// The approval, if any.
    pub approval_id: Option<ApprovalId>,
    /// The tool, if any.
    pub tool: Option<String>,
    /// The target path, if any.
    pub target: Option<String>,
    /// Hash of the exact arguments.
    pub arguments_hash: Option<String>,
    /// Free-form detail.
    pub detail: Option<String>,
    /// The team user who acted (team mode), if any.
    pub user: Option<String>,
    /// Where a person decided (decisions only).
    pub via: Option<Via>,
}

impl NewAudit {
    /// A row recording `action`, with every other field empty.
    pub fn new(action: AuditAction) -> Self {
        Self {
            actor: None,
            action,
            task_id: None,
            approval_id: None,
            tool: None,
            target: None,
            arguments_hash: None,
            detail: None,
            user: None,
            via: None,
        }
    }
}
