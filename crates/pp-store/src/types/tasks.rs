//! Tasks: what to create, how to change one, and how to find some.

use pp_types::{Actor, AuditAction, Event, EventKind, NewAudit, TaskId, TaskState};
use serde_json::Value;

/// A task to create; it starts `queued`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTask {
    /// The person's prompt.
    pub prompt: String,
    /// The workspace's configured name.
    pub workspace: String,
    /// The workspace root the task runs in.
    pub workspace_path: String,
    /// Who created it (recorded in the `task_created` audit row too).
    pub created_by: Actor,
    /// Which schedule, channel or MCP client, by name (`None` for a person).
    pub origin: Option<String>,
    /// The scripted model's turns, for scripted tasks.
    pub script: Option<Value>,
}

/// What recovery ([`crate::Store::interrupt_stale`]) did with the `running` tasks whose
/// process stopped, each list oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Marked `interrupted`: a retry continues them.
    pub interrupted: Vec<TaskId>,
    /// Ended `cancelled`: their cancel had been requested ([`crate::Store::request_cancel`])
    /// before their process stopped.
    pub cancelled: Vec<TaskId>,
}

impl Recovered {
    /// The `task_cancelled` event of a task recovery ended `cancelled`.
    pub(crate) fn cancelled_event() -> Event {
        Event {
            step: 0,
            kind: EventKind::TaskCancelled {
                message: crate::CANCELLED_AFTER_STOP.to_owned(),
            },
        }
    }

    /// The `task_cancelled` audit row of a task recovery ended `cancelled`, naming the
    /// team user who asked (`None`: the operator).
    pub(crate) fn cancelled_audit(id: &TaskId, user: Option<String>) -> NewAudit {
        NewAudit {
            actor: Some(Actor::Operator),
            task_id: Some(id.clone()),
            user,
            detail: Some(crate::CANCELLED_AFTER_STOP.to_owned()),
            ..NewAudit::new(AuditAction::TaskCancelled)
        }
    }
}

/// A state change and what goes with it, applied in the same transaction as the
/// compare-and-set.
///
/// `None` fields leave the column unchanged (a task keeps its `error` when it is
/// retried, for example); build one with [`TaskChange::to`] and struct-update syntax.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskChange {
    /// The new state. A terminal state sets `finished_at`; any other clears it.
    pub to: TaskState,
    /// The final answer.
    pub final_text: Option<String>,
    /// Machine-readable failure reason (`policy_violation`, …).
    pub failure_reason: Option<pp_types::FailureReason>,
    /// Human-readable detail of a failure.
    pub error: Option<String>,
    /// Running time to add to `running_ms`.
    pub add_running_ms: u64,
    /// The new script position.
    pub script_position: Option<u64>,
    /// Events appended in the same transaction, in order.
    pub events: Vec<Event>,
}

impl TaskChange {
    /// A change to `state` with nothing else.
    pub fn to(state: TaskState) -> Self {
        Self {
            to: state,
            final_text: None,
            failure_reason: None,
            error: None,
            add_running_ms: 0,
            script_position: None,
            events: Vec::new(),
        }
    }
}

/// Which tasks [`crate::Store::search_tasks`] returns, newest first: all conditions must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFilter {
    /// Only prompts containing this text (case-insensitive for ASCII letters; `%` and
    /// `_` are matched literally).
    pub query: Option<String>,
    /// Only tasks in this state.
    pub state: Option<TaskState>,
    /// Only tasks in the workspace with this configured name.
    pub workspace: Option<String>,
    /// Only tasks started by this actor (the operator, a schedule, a webhook, an MCP
    /// client).
    pub created_by: Option<Actor>,
    /// Only tasks created before this one (paging: pass the last id of the previous
    /// page). An id no longer stored pages from where it would sort: ids begin with
    /// their creation time.
    pub before: Option<TaskId>,
    /// At most this many.
    pub limit: usize,
}

impl Default for TaskFilter {
    /// Every task, 50 at a time.
    fn default() -> Self {
        Self {
            query: None,
            state: None,
            workspace: None,
            created_by: None,
            before: None,
            limit: 50,
        }
    }
}
