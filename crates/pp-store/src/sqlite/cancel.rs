//! Cancelling a task: the state change, its pending approvals, its events and the audit
//! row in one transaction, refused while an approved call has not produced its outcome.

use rusqlite::{Connection, OptionalExtension, params};

use pp_types::{NewAudit, TaskId, TaskRecord, TaskState};

use super::tasks::{change_state, current_state};
use super::{SqliteStore as Store, audit, events};
use crate::error::{Error, Result};
use crate::types::TaskChange;

impl Store {
    /// Cancels a task in one of `from`, in one transaction: applies `change` (whose `to`
    /// must be `cancelled`), cancels its pending approvals, appends `change.events` and
    /// `audit`. The audit row exists exactly when the cancel happened.
    ///
    /// A `running` task whose approved call has not produced its outcome yet is refused
    /// with [`Error::ApprovedCallPending`]: once a person's approval won, a racing cancel
    /// loses (it never stops the approved call halfway or records a cancel that did not
    /// happen). Other states outside `from` are [`Error::Conflict`].
    pub(crate) fn cancel_task(
        &self,
        id: &TaskId,
        from: &[TaskState],
        change: TaskChange,
        audit: NewAudit,
    ) -> Result<TaskRecord> {
        let now = self.now();
        self.write(|transaction| {
            if current_state(transaction, id)? == TaskState::Running
                && approved_call_pending(transaction, id)?
            {
                return Err(Error::ApprovedCallPending { id: id.to_string() });
            }
            let task = change_state(transaction, id, from, &change, now)?;
            let reason = change.error.clone().unwrap_or_default();
            transaction
                .prepare_cached(
                    "UPDATE approvals SET state = 'cancelled', resolved_at = ?2, reason = ?3 \
                     WHERE task_id = ?1 AND state = 'pending'",
                )?
                .execute(params![id.as_str(), task.updated_at.as_millis(), reason])?;
            // Calls already approved in a changeset still waiting for other decisions
            // never ran: they end cancelled too, saying so.
            transaction
                .prepare_cached(
                    "UPDATE approvals SET state = 'cancelled', reason = ?2 \
                     WHERE task_id = ?1 AND state = 'approved' AND changeset_id IN \
                     (SELECT id FROM changesets WHERE task_id = ?1 AND pending > 0)",
                )?
                .execute(params![id.as_str(), crate::NOT_RUN_CANCELLED])?;
            events::insert(transaction, id, change.events, task.updated_at)?;
            let audit = NewAudit {
                task_id: Some(id.clone()),
                ..audit
            };
            audit::insert(transaction, audit, task.updated_at)?;
            Ok(task)
        })
    }

    /// Whether `task` has an approved call whose outcome (executed, failed or denied) is
    /// not in the audit ledger yet.
    pub(crate) fn approved_call_pending(&self, task: &TaskId) -> Result<bool> {
        self.read(|connection| approved_call_pending(connection, task))
    }
}

fn approved_call_pending(connection: &Connection, task: &TaskId) -> Result<bool> {
    Ok(connection
        .prepare_cached(
            "SELECT 1 FROM approvals a WHERE a.task_id = ?1 AND a.state = 'approved' \
             AND NOT EXISTS (SELECT 1 FROM audit l WHERE l.approval_id = a.id \
             AND l.action IN ('tool_executed', 'tool_failed', 'tool_denied')) LIMIT 1",
        )?
        .query_row([task.as_str()], |_| Ok(()))
        .optional()?
        .is_some())
}
