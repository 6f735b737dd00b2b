//! Approvals: suspending a task with its checkpoint, and resolving it exactly once.
//!
//! A decision locks the approval's row first (`FOR NO KEY UPDATE`): of two people
//! resolving at once, the second waits for the first to commit, then finds the approval
//! decided and gets [`Error::AlreadyResolved`].

use deadpool_postgres::GenericClient;
use pp_types::{
    ApprovalId, ApprovalRecord, ApprovalState, Event, NewAudit, StoredEvent, TaskId, TaskRecord,
    TaskState, Timestamp,
};

use super::rows::{self, APPROVAL_COLUMNS};
use super::{PgStore, audit, events, execute, query, query_opt, tasks};
use crate::error::{Error, Result};
use crate::ids;
use crate::mapping::{self, encode, encode_opt, inserted, limit as row_limit, name_of};
use crate::types::{Changeset, NewApproval, Resolve, TaskChange};

impl PgStore {
    /// Suspends a running task: the task moves `Running → change.to`, the `news` are
    /// inserted `pending` as one new changeset and `change.events` appended (with the
    /// approval and changeset ids filled into `approval_required` events), in one
    /// transaction.
    pub(crate) async fn suspend(
        &self,
        task: &TaskId,
        news: Vec<NewApproval>,
        mut change: TaskChange,
    ) -> Result<(Vec<ApprovalRecord>, Vec<StoredEvent>)> {
        let now = self.now();
        let changeset = ids::new_id("cs_", now)?;
        let news = inserted::in_changeset(news, &changeset, now)?;
        let new_events = inserted::with_approval_ids(
            std::mem::take(&mut change.events),
            &[changeset.as_str()],
            |call| {
                news.iter()
                    .find(|(_, new)| new.call_id == call)
                    .map(|(id, _)| id)
            },
        );
        let size = i32::try_from(news.len()).unwrap_or(i32::MAX);
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let task_record =
            tasks::change_state(&transaction, task, &[TaskState::Running], &change, now).await?;
        execute(
            &transaction,
            "INSERT INTO changesets (id, task_id, size, pending, created_at) \
             VALUES ($1, $2, $3, $3, $4)",
            &[&changeset, &task.as_str(), &size, &now.as_millis()],
        )
        .await?;
        let mut approvals = Vec::with_capacity(news.len());
        for (id, new) in news {
            approvals.push(insert(&transaction, &id, task, new, now).await?);
        }
        let stored = events::insert(&transaction, task, new_events, task_record.updated_at).await?;
        transaction.commit().await?;
        Ok((approvals, stored))
    }

    /// A changeset with its approvals in the model's order; [`Error::NotFound`] if there
    /// is none with this id.
    pub(crate) async fn changeset(&self, id: &str) -> Result<Changeset> {
        let client = self.client().await?;
        let row = query_opt(
            &client,
            "SELECT task_id, size, pending, created_at FROM changesets WHERE id = $1",
            &[&id],
        )
        .await?
        .ok_or_else(|| Error::not_found("changeset", id))?;
        let task_id: String = row.try_get(0)?;
        let size: i32 = row.try_get(1)?;
        let pending: i32 = row.try_get(2)?;
        let created_at: i64 = row.try_get(3)?;
        let found = query(
            &client,
            &format!(
                "SELECT {APPROVAL_COLUMNS} FROM approvals WHERE changeset_id = $1 ORDER BY ord"
            ),
            &[&id],
        )
        .await?;
        Ok(Changeset {
            id: id.to_owned(),
            task_id: TaskId(task_id),
            size: u32::try_from(size).unwrap_or(0),
            pending: u32::try_from(pending).unwrap_or(0),
            created_at: Timestamp::from_millis(created_at),
            approvals: rows::all(&found, rows::approval)?,
        })
    }

    /// One approval; [`Error::NotFound`] if there is none with this id.
    pub(crate) async fn approval(&self, id: &ApprovalId) -> Result<ApprovalRecord> {
        load(&self.client().await?, id).await
    }

    /// Up to `limit` approvals, newest first, optionally only those in `state`.
    pub(crate) async fn list_approvals(
        &self,
        state: Option<ApprovalState>,
        limit: usize,
    ) -> Result<Vec<ApprovalRecord>> {
        let client = self.client().await?;
        let found = match state {
            Some(state) => {
                query(
                    &client,
                    &format!(
                        "SELECT {APPROVAL_COLUMNS} FROM approvals WHERE state = $1 \
                         ORDER BY ord DESC LIMIT $2"
                    ),
                    &[&state.as_str(), &row_limit(limit)],
                )
                .await?
            }
            None => {
                query(
                    &client,
                    &format!("SELECT {APPROVAL_COLUMNS} FROM approvals ORDER BY ord DESC LIMIT $1"),
                    &[&row_limit(limit)],
                )
                .await?
            }
        };
        rows::all(&found, rows::approval)
    }

    /// The task of every pending approval, one per approval.
    pub(crate) async fn pending_approval_tasks(&self) -> Result<Vec<TaskId>> {
        let found = query(
            &self.client().await?,
            "SELECT task_id FROM approvals WHERE state = 'pending'",
            &[],
        )
        .await?;
        found
            .iter()
            .map(|row| Ok(TaskId(row.try_get::<_, String>(0)?)))
            .collect()
    }

    /// Every approval of `task`, oldest first.
    pub(crate) async fn approvals_for_task(&self, task: &TaskId) -> Result<Vec<ApprovalRecord>> {
        let found = query(
            &self.client().await?,
            &format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE task_id = $1 ORDER BY ord"),
            &[&task.as_str()],
        )
        .await?;
        rows::all(&found, rows::approval)
    }

    /// Records a decision, all or nothing, in one transaction: the approval moves
    /// `pending → resolve.state` ([`Error::AlreadyResolved`] if it is not pending), the
    /// audit row is appended, the changeset's pending count goes down and the last
    /// decision moves the task `WaitingApproval → resolve.task_to` ([`Error::Conflict`]
    /// if it is not waiting) and `resolve.events` are appended.
    pub(crate) async fn resolve(
        &self,
        id: &ApprovalId,
        resolve: Resolve,
    ) -> Result<(ApprovalRecord, TaskRecord)> {
        if resolve.state == ApprovalState::Pending {
            return Err(Error::InvalidResolution {
                id: id.to_string(),
                state: resolve.state,
            });
        }
        let edited = encode_opt("edited arguments", resolve.edited_arguments.as_ref())?;
        let edited_preview = encode_opt("edited preview", resolve.edited_preview.as_ref())?;
        let now = self.now();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        // Rows are locked task first, then approval, as a cancel does: no deadlock.
        if let Some(row) = query_opt(
            &transaction,
            "SELECT task_id FROM approvals WHERE id = $1",
            &[&id.as_str()],
        )
        .await?
        {
            tasks::locked_state(&transaction, &TaskId(row.try_get(0)?)).await?;
        }
        let (task_id, current) = locked_state(&transaction, id).await?;
        if current != ApprovalState::Pending {
            return Err(Error::AlreadyResolved {
                id: id.to_string(),
                state: current,
            });
        }
        execute(
            &transaction,
            "UPDATE approvals SET state = $2, resolved_at = $3, resolved_by = $4, \
             reason = $5, edited_arguments = $6, resolved_by_user = $7, \
             fingerprint = COALESCE($8, fingerprint), edited_preview = $9, resolved_via = $10 \
             WHERE id = $1 AND state = 'pending'",
            &[
                &id.as_str(),
                &resolve.state.as_str(),
                &now.as_millis(),
                &resolve.actor.as_str(),
                &resolve.reason,
                &edited,
                &resolve.audit.user,
                &resolve.fingerprint,
                &edited_preview,
                &resolve.audit.via.map(|via| via.as_str()),
            ],
        )
        .await?;
        let audit_row = NewAudit {
            actor: resolve.audit.actor.or(Some(resolve.actor)),
            task_id: Some(task_id.clone()),
            approval_id: Some(id.clone()),
            ..resolve.audit
        };
        audit::insert(&transaction, audit_row, now).await?;
        let task = if last_of_changeset(&transaction, id).await? {
            let change = TaskChange::to(resolve.task_to);
            tasks::change_state(
                &transaction,
                &task_id,
                &[TaskState::WaitingApproval],
                &change,
                now,
            )
            .await?
        } else {
            // Other calls of the changeset still wait: the task keeps waiting.
            let task = tasks::load(&transaction, &task_id).await?;
            if task.state != TaskState::WaitingApproval {
                return Err(Error::Conflict {
                    id: task_id.to_string(),
                    current: task.state,
                    expected: vec![TaskState::WaitingApproval],
                });
            }
            task
        };
        events::insert(&transaction, &task_id, resolve.events, now).await?;
        let approval = load(&transaction, id).await?;
        transaction.commit().await?;
        Ok((approval, task))
    }

    /// Turns an `approved` approval into `stale`, with the reason and an audit row, in
    /// one transaction. Any other state is [`Error::AlreadyResolved`].
    pub(crate) async fn mark_stale(
        &self,
        id: &ApprovalId,
        reason: &str,
        audit: NewAudit,
    ) -> Result<ApprovalRecord> {
        let now = self.now();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let (task_id, current) = locked_state(&transaction, id).await?;
        if current != ApprovalState::Approved {
            return Err(Error::AlreadyResolved {
                id: id.to_string(),
                state: current,
            });
        }
        execute(
            &transaction,
            "UPDATE approvals SET state = 'stale', reason = $2 \
             WHERE id = $1 AND state = 'approved'",
            &[&id.as_str(), &reason],
        )
        .await?;
        let audit_row = NewAudit {
            task_id: Some(task_id),
            approval_id: Some(id.clone()),
            ..audit
        };
        audit::insert(&transaction, audit_row, now).await?;
        let approval = load(&transaction, id).await?;
        transaction.commit().await?;
        Ok(approval)
    }

    /// The retry path: moves the task from one of `from` to `WaitingApproval`, inserts a
    /// new `pending` approval and appends `events` (with its id filled in), in one
    /// transaction.
    pub(crate) async fn reopen_approval(
        &self,
        task: &TaskId,
        from: &[TaskState],
        new: NewApproval,
        events: Vec<Event>,
    ) -> Result<ApprovalRecord> {
        let now = self.now();
        let id = ApprovalId(ids::new_id("a_", now)?);
        let events = inserted::with_approval_id(events, &id);
        let change = TaskChange::to(TaskState::WaitingApproval);
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let task_record = tasks::change_state(&transaction, task, from, &change, now).await?;
        let approval = insert(&transaction, &id, task, new, now).await?;
        events::insert(&transaction, task, events, task_record.updated_at).await?;
        transaction.commit().await?;
        Ok(approval)
    }
}

/// Inserts a pending approval inside the caller's transaction.
async fn insert(
    db: &impl GenericClient,
    id: &ApprovalId,
    task: &TaskId,
    new: NewApproval,
    now: Timestamp,
) -> Result<ApprovalRecord> {
    let label = new
        .label
        .as_ref()
        .map(|label| name_of("label", label))
        .transpose()?;
    execute(
        db,
        "INSERT INTO approvals (id, task_id, state, tool, capability, risk, label, \
         target, arguments, fingerprint, checkpoint, created_at, revertible, call_id, \
         changeset_id) \
         VALUES ($1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        &[
            &id.as_str(),
            &task.as_str(),
            &new.tool,
            &new.capability,
            &name_of("risk", &new.risk)?,
            &label,
            &new.target,
            &encode("approval arguments", &new.arguments)?,
            &new.fingerprint,
            &encode("checkpoint", &new.checkpoint)?,
            &now.as_millis(),
            &new.revertible,
            &new.call_id,
            &new.changeset_id,
        ],
    )
    .await?;
    Ok(inserted::approval(id, task, new, now))
}

/// Counts a decision on approval `id` against its changeset (a compare-and-set on the
/// changeset's pending count, under its row's lock, inside the caller's transaction):
/// whether it was the last one waiting. An approval stored before changesets is alone.
async fn last_of_changeset(db: &impl GenericClient, id: &ApprovalId) -> Result<bool> {
    let row = query_opt(
        db,
        "SELECT changeset_id FROM approvals WHERE id = $1",
        &[&id.as_str()],
    )
    .await?;
    let Some(changeset) = row
        .map(|row| row.try_get::<_, Option<String>>(0))
        .transpose()?
        .flatten()
    else {
        return Ok(true);
    };
    let remaining = query_opt(
        db,
        "UPDATE changesets SET pending = pending - 1 WHERE id = $1 AND pending > 0 \
         RETURNING pending",
        &[&changeset],
    )
    .await?
    .map(|row| row.try_get::<_, i32>(0))
    .transpose()?;
    Ok(remaining.is_none_or(|remaining| remaining == 0))
}

/// Reads one approval.
async fn load(db: &impl GenericClient, id: &ApprovalId) -> Result<ApprovalRecord> {
    let row = query_opt(
        db,
        &format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE id = $1"),
        &[&id.as_str()],
    )
    .await?
    .ok_or_else(|| Error::not_found("approval", id))?;
    rows::approval(&row)
}

/// Locks an approval's row for the rest of the transaction; returns its task and state.
async fn locked_state(db: &impl GenericClient, id: &ApprovalId) -> Result<(TaskId, ApprovalState)> {
    let row = query_opt(
        db,
        "SELECT task_id, state FROM approvals WHERE id = $1 FOR NO KEY UPDATE",
        &[&id.as_str()],
    )
    .await?
    .ok_or_else(|| Error::not_found("approval", id))?;
    let task: String = row.try_get(0)?;
    let state: String = row.try_get(1)?;
    let state = mapping::approval_state(id, &state)?;
    Ok((TaskId(task), state))
}
