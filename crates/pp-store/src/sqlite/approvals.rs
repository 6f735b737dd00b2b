//! Approvals: suspending a task with its checkpoint, and resolving it exactly once.

use pp_types::{
    ApprovalId, ApprovalRecord, ApprovalState, Event, NewAudit, StoredEvent, TaskId, TaskRecord,
    TaskState, Timestamp,
};
use rusqlite::{Connection, OptionalExtension, params};

use super::rows::{self, APPROVAL_COLUMNS};
use super::tasks::{self};
use super::{SqliteStore as Store, audit, events};
use crate::error::{Error, Result};
use crate::ids;
use crate::mapping::{self, RawApproval, inserted};
use crate::types::{Changeset, NewApproval, Resolve, TaskChange};

impl Store {
    /// Suspends a running task: in one transaction, the task moves `Running →
    /// change.to` (normally `WaitingApproval`; [`Error::Conflict`] if it is not running)
    /// with `change`'s other fields applied and `change.events` appended as given, and a
    /// `pending` approval is inserted.
    ///
    /// The caller cannot know the approval's id in advance: the store fills it into
    /// every `approval_required` event of `change.events` whose `approval_id` is `None`
    /// (the returned events show it); other events are stored as given.
    pub(crate) fn suspend(
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
        self.write(|transaction| {
            let task_record =
                tasks::change_state(transaction, task, &[TaskState::Running], &change, now)?;
            transaction
                .prepare_cached(
                    "INSERT INTO changesets (id, task_id, size, pending, created_at) \
                     VALUES (?1, ?2, ?3, ?3, ?4)",
                )?
                .execute(params![
                    changeset,
                    task.as_str(),
                    i64::try_from(news.len()).unwrap_or(i64::MAX),
                    now.as_millis()
                ])?;
            let approvals = news
                .iter()
                .map(|(id, new)| insert(transaction, id, task, new.clone(), now))
                .collect::<Result<Vec<_>>>()?;
            let stored = events::insert(transaction, task, new_events, task_record.updated_at)?;
            Ok((approvals, stored))
        })
    }

    /// A changeset with its approvals in the model's order; [`Error::NotFound`] if there
    /// is none with this id.
    pub(crate) fn changeset(&self, id: &str) -> Result<Changeset> {
        self.read(|connection| {
            let (task_id, size, pending, created_at) = connection
                .prepare_cached(
                    "SELECT task_id, size, pending, created_at FROM changesets WHERE id = ?1",
                )?
                .query_row([id], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, i64>(2)?,
                        row.get::<_, i64>(3)?,
                    ))
                })
                .optional()?
                .ok_or_else(|| Error::not_found("changeset", id))?;
            let raw = connection
                .prepare_cached(&format!(
                    "SELECT {APPROVAL_COLUMNS} FROM approvals WHERE changeset_id = ?1 \
                     ORDER BY rowid"
                ))?
                .query_map([id], rows::raw::<RawApproval>)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(Changeset {
                id: id.to_owned(),
                task_id: TaskId(task_id),
                size: u32::try_from(size).unwrap_or(0),
                pending: u32::try_from(pending).unwrap_or(0),
                created_at: Timestamp::from_millis(created_at),
                approvals: raw
                    .into_iter()
                    .map(RawApproval::decode)
                    .collect::<Result<_>>()?,
            })
        })
    }

    /// One approval; [`Error::NotFound`] if there is none with this id.
    pub(crate) fn approval(&self, id: &ApprovalId) -> Result<ApprovalRecord> {
        self.read(|connection| load(connection, id))
    }

    /// Up to `limit` approvals, newest first, optionally only those in `state`.
    pub(crate) fn list_approvals(
        &self,
        state: Option<ApprovalState>,
        limit: usize,
    ) -> Result<Vec<ApprovalRecord>> {
        self.read(|connection| {
            let raw = match state {
                Some(state) => connection
                    .prepare_cached(&format!(
                        "SELECT {APPROVAL_COLUMNS} FROM approvals WHERE state = ?1 \
                         ORDER BY rowid DESC LIMIT ?2"
                    ))?
                    .query_map(
                        params![state.as_str(), mapping::limit(limit)],
                        rows::raw::<RawApproval>,
                    )?
                    .collect::<rusqlite::Result<Vec<_>>>()?,
                None => connection
                    .prepare_cached(&format!(
                        "SELECT {APPROVAL_COLUMNS} FROM approvals ORDER BY rowid DESC LIMIT ?1"
                    ))?
                    .query_map(params![mapping::limit(limit)], rows::raw::<RawApproval>)?
                    .collect::<rusqlite::Result<Vec<_>>>()?,
            };
            raw.into_iter().map(RawApproval::decode).collect()
        })
    }

    /// The task of every pending approval, one per approval.
    pub(crate) fn pending_approval_tasks(&self) -> Result<Vec<TaskId>> {
        self.read(|connection| {
            let ids = connection
                .prepare_cached("SELECT task_id FROM approvals WHERE state = 'pending'")?
                .query_map([], |row| row.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(ids.into_iter().map(TaskId).collect())
        })
    }

    /// Every approval of `task`, oldest first.
    pub(crate) fn approvals_for_task(&self, task: &TaskId) -> Result<Vec<ApprovalRecord>> {
        self.read(|connection| {
            let raw = connection
                .prepare_cached(&format!(
                    "SELECT {APPROVAL_COLUMNS} FROM approvals WHERE task_id = ?1 ORDER BY rowid"
                ))?
                .query_map([task.as_str()], rows::raw::<RawApproval>)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            raw.into_iter().map(RawApproval::decode).collect()
        })
    }

    /// Records a decision, all or nothing, in one transaction:
    /// - the approval moves `pending → resolve.state` ([`Error::AlreadyResolved`] if it is
    ///   not pending: this is what turns a double click into a 409), with `resolved_at`,
    ///   `resolved_by`, `reason` and `edited_arguments` (and `resolved_by_user`: the
    ///   audit row's `user`);
    /// - the audit row is appended;
    /// - the task moves `WaitingApproval → resolve.task_to` ([`Error::Conflict`] if it is
    ///   not waiting);
    /// - `resolve.events` are appended.
    pub(crate) fn resolve(
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
        let edited = mapping::encode_opt("edited arguments", resolve.edited_arguments.as_ref())?;
        let edited_preview =
            mapping::encode_opt("edited preview", resolve.edited_preview.as_ref())?;
        let now = self.now();
        self.write(|transaction| {
            let (task_id, current) = state_of(transaction, id)?;
            if current != ApprovalState::Pending {
                return Err(Error::AlreadyResolved {
                    id: id.to_string(),
                    state: current,
                });
            }
            transaction
                .prepare_cached(
                    "UPDATE approvals SET state = ?2, resolved_at = ?3, resolved_by = ?4, \
                     reason = ?5, edited_arguments = ?6, resolved_by_user = ?7, \
                     fingerprint = COALESCE(?8, fingerprint), edited_preview = ?9, resolved_via = ?10 \
                     WHERE id = ?1 AND state = 'pending'",
                )?
                .execute(params![
                    id.as_str(),
                    resolve.state.as_str(),
                    now.as_millis(),
                    resolve.actor.as_str(),
                    resolve.reason,
                    edited,
                    resolve.audit.user,
                    resolve.fingerprint,
                    edited_preview,
                    resolve.audit.via.map(|via| via.as_str()),
                ])?;
            let audit_row = NewAudit {
                actor: resolve.audit.actor.or(Some(resolve.actor)),
                task_id: Some(task_id.clone()),
                approval_id: Some(id.clone()),
                ..resolve.audit
            };
            audit::insert(transaction, audit_row, now)?;
            let task = if last_of_changeset(transaction, id)? {
                let change = TaskChange::to(resolve.task_to);
                tasks::change_state(
                    transaction,
                    &task_id,
                    &[TaskState::WaitingApproval],
                    &change,
                    now,
                )?
            } else {
                // Other calls of the changeset still wait: the task keeps waiting.
                let task = tasks::load(transaction, &task_id)?;
                if task.state != TaskState::WaitingApproval {
                    return Err(Error::Conflict {
                        id: task_id.to_string(),
                        current: task.state,
                        expected: vec![TaskState::WaitingApproval],
                    });
                }
                task
            };
            events::insert(transaction, &task_id, resolve.events, now)?;
            Ok((load(transaction, id)?, task))
        })
    }

    /// Turns an `approved` approval into `stale` (its target changed between the decision
    /// and the moment the call was about to run), with the reason and an audit row, in
    /// one transaction. Any other state is [`Error::AlreadyResolved`].
    pub(crate) fn mark_stale(
        &self,
        id: &ApprovalId,
        reason: &str,
        audit: NewAudit,
    ) -> Result<ApprovalRecord> {
        let now = self.now();
        self.write(|transaction| {
            let (task_id, current) = state_of(transaction, id)?;
            if current != ApprovalState::Approved {
                return Err(Error::AlreadyResolved {
                    id: id.to_string(),
                    state: current,
                });
            }
            transaction
                .prepare_cached(
                    "UPDATE approvals SET state = 'stale', reason = ?2 \
                     WHERE id = ?1 AND state = 'approved'",
                )?
                .execute(params![id.as_str(), reason])?;
            let audit_row = NewAudit {
                task_id: Some(task_id),
                approval_id: Some(id.clone()),
                ..audit
            };
            audit::insert(transaction, audit_row, now)?;
            load(transaction, id)
        })
    }

    /// The retry path: in one transaction, moves the task from one of `from` (normally
    /// `Interrupted`) to `WaitingApproval`, inserts a new `pending` approval (typically
    /// carrying an older approval's checkpoint) and appends `events`, filling the new
    /// approval's id into `approval_required` events as [`crate::Store::suspend`] does.
    pub(crate) fn reopen_approval(
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
        self.write(|transaction| {
            let task_record = tasks::change_state(transaction, task, from, &change, now)?;
            let approval = insert(transaction, &id, task, new, now)?;
            events::insert(transaction, task, events, task_record.updated_at)?;
            Ok(approval)
        })
    }
}

/// Inserts a pending approval inside the caller's transaction.
fn insert(
    connection: &Connection,
    id: &ApprovalId,
    task: &TaskId,
    new: NewApproval,
    now: Timestamp,
) -> Result<ApprovalRecord> {
    let label = new
        .label
        .as_ref()
        .map(|label| mapping::name_of("label", label))
        .transpose()?;
    connection
        .prepare_cached(
            "INSERT INTO approvals (id, task_id, state, tool, capability, risk, label, \
             target, arguments, fingerprint, checkpoint, created_at, revertible, call_id, \
             changeset_id) \
             VALUES (?1, ?2, 'pending', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        )?
        .execute(params![
            id.as_str(),
            task.as_str(),
            new.tool,
            new.capability,
            mapping::name_of("risk", &new.risk)?,
            label,
            new.target,
            mapping::encode("approval arguments", &new.arguments)?,
            new.fingerprint,
            mapping::encode("checkpoint", &new.checkpoint)?,
            now.as_millis(),
            new.revertible,
            new.call_id,
            new.changeset_id,
        ])?;
    Ok(inserted::approval(id, task, new, now))
}

/// Counts a decision on approval `id` against its changeset (a compare-and-set on the
/// changeset's pending count, inside the caller's transaction): whether it was the last
/// one waiting. An approval stored before changesets is alone, so always the last.
fn last_of_changeset(connection: &Connection, id: &ApprovalId) -> Result<bool> {
    let changeset: Option<String> = connection
        .prepare_cached("SELECT changeset_id FROM approvals WHERE id = ?1")?
        .query_row([id.as_str()], |row| row.get(0))?;
    let Some(changeset) = changeset else {
        return Ok(true);
    };
    let remaining: Option<i64> = connection
        .prepare_cached(
            "UPDATE changesets SET pending = pending - 1 WHERE id = ?1 AND pending > 0 \
             RETURNING pending",
        )?
        .query_row([changeset.as_str()], |row| row.get(0))
        .optional()?;
    Ok(remaining.is_none_or(|remaining| remaining == 0))
}

/// Reads one approval.
fn load(connection: &Connection, id: &ApprovalId) -> Result<ApprovalRecord> {
    connection
        .prepare_cached(&format!(
            "SELECT {APPROVAL_COLUMNS} FROM approvals WHERE id = ?1"
        ))?
        .query_row([id.as_str()], rows::raw::<RawApproval>)
        .optional()?
        .ok_or_else(|| Error::not_found("approval", id))?
        .decode()
}

/// An approval's task and state.
fn state_of(connection: &Connection, id: &ApprovalId) -> Result<(TaskId, ApprovalState)> {
    let (task, state): (String, String) = connection
        .prepare_cached("SELECT task_id, state FROM approvals WHERE id = ?1")?
        .query_row([id.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?
        .ok_or_else(|| Error::not_found("approval", id))?;
    let state = mapping::approval_state(id, &state)?;
    Ok((TaskId(task), state))
}
