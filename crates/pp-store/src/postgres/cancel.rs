//! Cancelling a task: the state change, its pending approvals, its events and the audit
//! row in one transaction, refused while an approved call has not produced its outcome.

use deadpool_postgres::GenericClient;
use pp_types::{NewAudit, TaskId, TaskRecord, TaskState};

use super::tasks::{change_state, locked_state};
use super::{PgStore, audit, events, execute, query_opt};
use crate::error::{Error, Result};
use crate::types::TaskChange;

impl PgStore {
    /// Cancels a task in one of `from`, in one transaction: applies `change`, cancels its
    /// pending approvals (and a waiting changeset's approved ones), appends
    /// `change.events` and `audit`.
    /// [`Error::ApprovedCallPending`] while a running task's approved call has no
    /// outcome yet; other states outside `from` are [`Error::Conflict`].
    pub(crate) async fn cancel_task(
        &self,
        id: &TaskId,
        from: &[TaskState],
        change: TaskChange,
        audit: NewAudit,
    ) -> Result<TaskRecord> {
        let now = self.now();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        if locked_state(&transaction, id).await? == TaskState::Running
            && approved_call_pending(&transaction, id).await?
        {
            return Err(Error::ApprovedCallPending { id: id.to_string() });
        }
        let task = change_state(&transaction, id, from, &change, now).await?;
        let reason = change.error.clone().unwrap_or_default();
        execute(
            &transaction,
            "UPDATE approvals SET state = 'cancelled', resolved_at = $2, reason = $3 \
             WHERE task_id = $1 AND state = 'pending'",
            &[&id.as_str(), &task.updated_at.as_millis(), &reason],
        )
        .await?;
        // Calls already approved in a changeset still waiting for other decisions never
        // ran: they end cancelled too, saying so.
        execute(
            &transaction,
            "UPDATE approvals SET state = 'cancelled', reason = $2 \
             WHERE task_id = $1 AND state = 'approved' AND changeset_id IN \
             (SELECT id FROM changesets WHERE task_id = $1 AND pending > 0)",
            &[&id.as_str(), &crate::NOT_RUN_CANCELLED],
        )
        .await?;
        events::insert(&transaction, id, change.events, task.updated_at).await?;
        let audit = NewAudit {
            task_id: Some(id.clone()),
            ..audit
        };
        audit::insert(&transaction, audit, task.updated_at).await?;
        transaction.commit().await?;
        Ok(task)
    }

    /// Whether `task` has an approved call whose outcome (executed, failed or denied) is
    /// not in the audit ledger yet.
    pub(crate) async fn approved_call_pending(&self, task: &TaskId) -> Result<bool> {
        approved_call_pending(&self.client().await?, task).await
    }
}

async fn approved_call_pending(db: &impl GenericClient, task: &TaskId) -> Result<bool> {
    Ok(query_opt(
        db,
        "SELECT 1 FROM approvals a WHERE a.task_id = $1 AND a.state = 'approved' \
         AND NOT EXISTS (SELECT 1 FROM audit l WHERE l.approval_id = a.id \
         AND l.action IN ('tool_executed', 'tool_failed', 'tool_denied')) LIMIT 1",
        &[&task.as_str()],
    )
    .await?
    .is_some())
}
