//! Tasks: creation, claiming and compare-and-set state changes.

use std::time::Duration;

use deadpool_postgres::GenericClient;
use pp_types::{NewAudit, StoredEvent, TaskId, TaskRecord, TaskState, Timestamp};

use super::rows::{self, TASK_COLUMNS};
use super::{PgStore, audit, events, execute, query, query_opt};
use crate::error::{Error, Result};
use crate::ids;
use crate::mapping::{encode_opt, inserted, int, limit as row_limit, name_of};
use crate::types::{NewTask, Recovered, TaskChange};

impl PgStore {
    /// Creates a `queued` task, with its `task_created` audit row in the same transaction.
    pub(crate) async fn create_task(&self, new: NewTask) -> Result<TaskRecord> {
        let now = self.now();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let task = insert(&transaction, new, now).await?;
        transaction.commit().await?;
        Ok(task)
    }

    /// Creates a task already claimed by this process (`running`), in one transaction.
    pub(crate) async fn create_running_task(&self, new: NewTask) -> Result<TaskRecord> {
        let now = self.now();
        let change = TaskChange::to(TaskState::Running);
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let task = insert(&transaction, new, now).await?;
        let task = change_state(&transaction, &task.id, &[TaskState::Queued], &change, now).await?;
        transaction.commit().await?;
        Ok(task)
    }

    /// One task; [`Error::NotFound`] if there is none with this id.
    pub(crate) async fn task(&self, id: &TaskId) -> Result<TaskRecord> {
        load(&self.client().await?, id).await
    }

    /// The tasks with these ids, in one query, in no particular order; unknown ids are
    /// absent.
    pub(crate) async fn tasks_by_ids(&self, ids: &[TaskId]) -> Result<Vec<TaskRecord>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = ids.iter().map(TaskId::as_str).collect();
        let found = query(
            &self.client().await?,
            &format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ANY($1)"),
            &[&ids],
        )
        .await?;
        rows::all(&found, rows::task)
    }

    /// Up to `limit` tasks, newest first, optionally only those in `state`.
    pub(crate) async fn list_tasks(
        &self,
        state: Option<TaskState>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>> {
        let client = self.client().await?;
        let found = match state {
            Some(state) => {
                query(
                    &client,
                    &format!(
                        "SELECT {TASK_COLUMNS} FROM tasks WHERE state = $1 \
                         ORDER BY ord DESC LIMIT $2"
                    ),
                    &[&state.as_str(), &row_limit(limit)],
                )
                .await?
            }
            None => {
                query(
                    &client,
                    &format!("SELECT {TASK_COLUMNS} FROM tasks ORDER BY ord DESC LIMIT $1"),
                    &[&row_limit(limit)],
                )
                .await?
            }
        };
        rows::all(&found, rows::task)
    }

    /// Moves the oldest `queued` task to `running` and returns it; `None` if none is
    /// queued. Rows another worker is claiming are skipped (`SKIP LOCKED`): concurrent
    /// claimers never get the same task and never wait for each other.
    pub(crate) async fn claim_queued(&self) -> Result<Option<TaskRecord>> {
        let now = self.now();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let oldest = query_opt(
            &transaction,
            "SELECT id FROM tasks WHERE state = 'queued' ORDER BY ord LIMIT 1 \
             FOR NO KEY UPDATE SKIP LOCKED",
            &[],
        )
        .await?;
        let Some(row) = oldest else {
            return Ok(None);
        };
        let id = TaskId(row.try_get(0)?);
        // Locked and queued: the compare-and-set's check is already done.
        let task =
            apply_change(&transaction, &id, &TaskChange::to(TaskState::Running), now).await?;
        transaction.commit().await?;
        Ok(Some(task))
    }

    /// Moves one task from one of `from` to `running` ([`Error::Conflict`] otherwise).
    pub(crate) async fn claim(&self, id: &TaskId, from: &[TaskState]) -> Result<TaskRecord> {
        let change = TaskChange::to(TaskState::Running);
        let now = self.now();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let task = change_state(&transaction, id, from, &change, now).await?;
        transaction.commit().await?;
        Ok(task)
    }

    /// Applies `change` if the task is in one of `from` ([`Error::Conflict`] with its
    /// current state otherwise), appending `change.events` in the same transaction.
    pub(crate) async fn transition(
        &self,
        id: &TaskId,
        from: &[TaskState],
        mut change: TaskChange,
    ) -> Result<(TaskRecord, Vec<StoredEvent>)> {
        let new_events = std::mem::take(&mut change.events);
        let now = self.now();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let task = change_state(&transaction, id, from, &change, now).await?;
        let stored = events::insert(&transaction, id, new_events, task.updated_at).await?;
        transaction.commit().await?;
        Ok((task, stored))
    }

    /// Marks every `running` task `interrupted` with `message` as its error. Appends no
    /// events. Returns the tasks' ids, oldest first.
    pub(crate) async fn interrupt_running(&self, message: &str) -> Result<Vec<TaskId>> {
        let now = self.now().as_millis();
        let client = self.client().await?;
        let changed = query(
            &client,
            "UPDATE tasks SET state = 'interrupted', error = $1, updated_at = $2, \
             finished_at = NULL WHERE id IN (SELECT id FROM tasks WHERE state = 'running' \
             ORDER BY ord FOR NO KEY UPDATE) RETURNING ord, id",
            &[&message, &now],
        )
        .await?;
        ids_by_ord(&changed)
    }

    /// Records that the process running `id` is alive (a no-op unless it is `running`
    /// and no cancel was requested on it: [`crate::Store::request_cancel`]).
    pub(crate) async fn heartbeat(&self, id: &TaskId) -> Result<()> {
        let now = self.now().as_millis();
        execute(
            &self.client().await?,
            "UPDATE tasks SET heartbeat_at = $2 WHERE id = $1 AND state = 'running' \
             AND cancel_requested_at IS NULL",
            &[&id.as_str(), &now],
        )
        .await?;
        Ok(())
    }

    /// Marks `interrupted` (with `message`) every `running` task whose runner has not
    /// sent a heartbeat for `older_than`; one whose cancel was requested
    /// ([`crate::Store::request_cancel`]) ends `cancelled`, with its event and audit row,
    /// in the same transaction. One statement changes the states: a heartbeat committed
    /// meanwhile is seen (the row is re-checked after its lock), so a live task is never
    /// taken; rows are locked oldest first, so two workers starting together cannot
    /// deadlock.
    pub(crate) async fn interrupt_stale(
        &self,
        message: &str,
        older_than: Duration,
    ) -> Result<Recovered> {
        let now = self.now();
        let limit = now.saturating_sub(older_than).as_millis();
        let millis = now.as_millis();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let changed = query(
            &transaction,
            "WITH stale AS (SELECT id, cancel_requested_at IS NOT NULL AS cancel, \
             cancel_requested_by FROM tasks WHERE state = 'running' \
             AND (heartbeat_at IS NULL OR heartbeat_at <= $1) ORDER BY ord FOR NO KEY UPDATE) \
             UPDATE tasks SET \
             state = CASE WHEN stale.cancel THEN 'cancelled' ELSE 'interrupted' END, \
             error = CASE WHEN stale.cancel THEN $4::TEXT ELSE $2::TEXT END, updated_at = $3::BIGINT, \
             finished_at = CASE WHEN stale.cancel THEN $3::BIGINT ELSE NULL END, \
             heartbeat_at = NULL, cancel_requested_at = NULL, cancel_requested_by = NULL \
             FROM stale WHERE tasks.id = stale.id \
             RETURNING tasks.ord, tasks.id, stale.cancel, stale.cancel_requested_by",
            &[&limit, &message, &millis, &crate::CANCELLED_AFTER_STOP],
        )
        .await?;
        let mut rows = changed
            .iter()
            .map(|row| {
                Ok((
                    row.try_get::<_, i64>(0)?,
                    TaskId(row.try_get::<_, String>(1)?),
                    row.try_get::<_, bool>(2)?,
                    row.try_get::<_, Option<String>>(3)?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        rows.sort_unstable_by_key(|row| row.0);
        let mut recovered = Recovered::default();
        for (_, id, cancel, by) in rows {
            if cancel {
                events::insert(&transaction, &id, vec![Recovered::cancelled_event()], now).await?;
                audit::insert(&transaction, Recovered::cancelled_audit(&id, by), now).await?;
                recovered.cancelled.push(id);
            } else {
                recovered.interrupted.push(id);
            }
        }
        transaction.commit().await?;
        Ok(recovered)
    }

    /// Records a cancel request on the `running` task `id` and clears its heartbeat
    /// (see [`crate::Store::request_cancel`]); `false` unless it is running.
    pub(crate) async fn request_cancel(&self, id: &TaskId, user: Option<&str>) -> Result<bool> {
        let now = self.now().as_millis();
        let changed = execute(
            &self.client().await?,
            "UPDATE tasks SET cancel_requested_at = $2, cancel_requested_by = $3, \
             heartbeat_at = NULL WHERE id = $1 AND state = 'running'",
            &[&id.as_str(), &now, &user],
        )
        .await?;
        Ok(changed == 1)
    }
}

/// `(ord, id)` rows as ids, oldest first.
fn ids_by_ord(found: &[tokio_postgres::Row]) -> Result<Vec<TaskId>> {
    let mut pairs = found
        .iter()
        .map(|row| Ok((row.try_get::<_, i64>(0)?, row.try_get::<_, String>(1)?)))
        .collect::<Result<Vec<_>>>()?;
    pairs.sort_unstable();
    Ok(pairs.into_iter().map(|(_, id)| TaskId(id)).collect())
}

/// Inserts a `queued` task and its `task_created` audit row (inside the caller's
/// transaction).
pub(crate) async fn insert(
    db: &impl GenericClient,
    new: NewTask,
    now: Timestamp,
) -> Result<TaskRecord> {
    insert_as(db, new, None, now).await
}

/// Like [`insert`], recording the team user who created it (`users.rs`) on the task and
/// its audit row.
pub(crate) async fn insert_as(
    db: &impl GenericClient,
    new: NewTask,
    user: Option<&str>,
    now: Timestamp,
) -> Result<TaskRecord> {
    let id = TaskId(ids::new_id("t_", now)?);
    let script = encode_opt("task script", new.script.as_ref())?;
    let created_by = name_of("actor", &new.created_by)?;
    execute(
        db,
        "INSERT INTO tasks (id, prompt, workspace, workspace_path, state, \
         created_by, script, created_at, updated_at, origin, created_by_user) \
         VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7, $7, $8, $9)",
        &[
            &id.as_str(),
            &new.prompt,
            &new.workspace,
            &new.workspace_path,
            &created_by,
            &script,
            &now.as_millis(),
            &new.origin,
            &user,
        ],
    )
    .await?;
    audit::insert(
        db,
        NewAudit {
            actor: Some(new.created_by),
            task_id: Some(id.clone()),
            user: user.map(str::to_owned),
            ..NewAudit::new(pp_types::AuditAction::TaskCreated)
        },
        now,
    )
    .await?;
    Ok(inserted::task(id, new, user, now))
}

/// Reads one task.
pub(crate) async fn load(db: &impl GenericClient, id: &TaskId) -> Result<TaskRecord> {
    let row = query_opt(
        db,
        &format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = $1"),
        &[&id.as_str()],
    )
    .await?
    .ok_or_else(|| Error::not_found("task", id))?;
    rows::task(&row)
}

/// The compare-and-set at the heart of every task change, inside the caller's
/// transaction: the row is locked first (`FOR NO KEY UPDATE`, which still lets other
/// transactions insert events and changes referring to it), so the state checked here
/// cannot change before the update. Ignores `change.events` (the caller appends them).
pub(crate) async fn change_state(
    db: &impl GenericClient,
    id: &TaskId,
    from: &[TaskState],
    change: &TaskChange,
    now: Timestamp,
) -> Result<TaskRecord> {
    let current = locked_state(db, id).await?;
    if !from.contains(&current) {
        return Err(Error::Conflict {
            id: id.to_string(),
            current,
            expected: from.to_vec(),
        });
    }
    apply_change(db, id, change, now).await
}

/// The update half of [`change_state`], for a caller that already holds the row's lock
/// and knows its state may change (a claim that selected it `FOR UPDATE SKIP LOCKED`).
/// Returns the task as it is now, in the same statement.
pub(crate) async fn apply_change(
    db: &impl GenericClient,
    id: &TaskId,
    change: &TaskChange,
    now: Timestamp,
) -> Result<TaskRecord> {
    let now = now.as_millis();
    let finished_at = change.to.is_terminal().then_some(now);
    let row = query_opt(
        db,
        &format!(
            "UPDATE tasks SET state = $2, final_text = COALESCE($3, final_text), \
             failure_reason = COALESCE($4, failure_reason), error = COALESCE($5, error), \
             running_ms = running_ms + $6, script_position = COALESCE($7, script_position), \
             updated_at = $8, finished_at = $9, \
             heartbeat_at = CASE WHEN $2 = 'running' THEN $8::BIGINT ELSE NULL END, \
             cancel_requested_at = NULL, cancel_requested_by = NULL \
             WHERE id = $1 RETURNING {TASK_COLUMNS}"
        ),
        &[
            &id.as_str(),
            &change.to.as_str(),
            &change.final_text,
            &change.failure_reason.map(pp_types::FailureReason::as_str),
            &change.error,
            &int(change.add_running_ms),
            &change.script_position.map(int),
            &now,
            &finished_at,
        ],
    )
    .await?
    .ok_or_else(|| Error::not_found("task", id))?;
    rows::task(&row)
}

/// Locks the task's row for the rest of the transaction and returns its state
/// ([`Error::NotFound`] if there is no such task).
pub(crate) async fn locked_state(db: &impl GenericClient, id: &TaskId) -> Result<TaskState> {
    let row = query_opt(
        db,
        "SELECT state FROM tasks WHERE id = $1 FOR NO KEY UPDATE",
        &[&id.as_str()],
    )
    .await?
    .ok_or_else(|| Error::not_found("task", id))?;
    let current: String = row.try_get(0)?;
    TaskState::parse(&current).ok_or_else(|| Error::Corrupt {
        table: "tasks",
        column: "state",
        id: id.to_string(),
        source: serde::de::Error::custom(format!("unknown task state `{current}`")),
    })
}
