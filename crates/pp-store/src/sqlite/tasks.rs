//! Tasks: creation, claiming and compare-and-set state changes.

use std::time::Duration;

use pp_types::{NewAudit, StoredEvent, TaskId, TaskRecord, TaskState, Timestamp};

use rusqlite::{Connection, OptionalExtension, params};

use super::rows::{self, TASK_COLUMNS};
use super::{SqliteStore as Store, audit, events};
use crate::error::{Error, Result};
use crate::ids;
use crate::mapping::{self, RawTask, inserted};
use crate::types::{NewTask, Recovered, TaskChange};

impl Store {
    /// Creates a `queued` task, with its `task_created` audit row in the same transaction.
    pub(crate) fn create_task(&self, new: NewTask) -> Result<TaskRecord> {
        let now = self.now();
        self.write(|transaction| insert(transaction, new, now))
    }

    /// Creates a task already claimed by this process (`running`), in one transaction, so
    /// no other process's workers can claim it first (`pocketpilot mcp serve` runs its
    /// client's tasks itself).
    pub(crate) fn create_running_task(&self, new: NewTask) -> Result<TaskRecord> {
        let now = self.now();
        let change = TaskChange::to(TaskState::Running);
        self.write(|transaction| {
            let task = insert(transaction, new, now)?;
            change_state(transaction, &task.id, &[TaskState::Queued], &change, now)
        })
    }

    /// One task; [`Error::NotFound`] if there is none with this id.
    pub(crate) fn task(&self, id: &TaskId) -> Result<TaskRecord> {
        self.read(|connection| load(connection, id))
    }

    /// The tasks with these ids, in one query (the ids travel as one JSON array, so
    /// there is no limit on their number), in no particular order; unknown ids are
    /// absent.
    pub(crate) fn tasks_by_ids(&self, ids: &[TaskId]) -> Result<Vec<TaskRecord>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = mapping::encode("task ids", ids)?;
        self.read(|connection| {
            connection
                .prepare_cached(&format!(
                    "SELECT {TASK_COLUMNS} FROM tasks \
                     WHERE id IN (SELECT value FROM json_each(?1))"
                ))?
                .query_map([ids], rows::raw::<RawTask>)?
                .collect::<rusqlite::Result<Vec<_>>>()?
                .into_iter()
                .map(RawTask::decode)
                .collect()
        })
    }

    /// Up to `limit` tasks, newest first, optionally only those in `state`.
    pub(crate) fn list_tasks(
        &self,
        state: Option<TaskState>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>> {
        self.read(|connection| {
            let state = state.map(TaskState::as_str);
            let raw = match state {
                Some(state) => connection
                    .prepare_cached(&format!(
                        "SELECT {TASK_COLUMNS} FROM tasks WHERE state = ?1 \
                         ORDER BY rowid DESC LIMIT ?2"
                    ))?
                    .query_map(params![state, mapping::limit(limit)], rows::raw::<RawTask>)?
                    .collect::<rusqlite::Result<Vec<_>>>()?,
                None => connection
                    .prepare_cached(&format!(
                        "SELECT {TASK_COLUMNS} FROM tasks ORDER BY rowid DESC LIMIT ?1"
                    ))?
                    .query_map(params![mapping::limit(limit)], rows::raw::<RawTask>)?
                    .collect::<rusqlite::Result<Vec<_>>>()?,
            };
            raw.into_iter().map(RawTask::decode).collect()
        })
    }

    /// Moves the oldest `queued` task to `running` and returns it; `None` if none is
    /// queued. Two processes calling this at once never get the same task.
    pub(crate) fn claim_queued(&self) -> Result<Option<TaskRecord>> {
        let now = self.now();
        self.write(|transaction| {
            let oldest: Option<String> = transaction
                .prepare_cached(
                    "SELECT id FROM tasks WHERE state = 'queued' ORDER BY rowid LIMIT 1",
                )?
                .query_row([], |row| row.get(0))
                .optional()?;
            let Some(id) = oldest else {
                return Ok(None);
            };
            let change = TaskChange::to(TaskState::Running);
            change_state(transaction, &TaskId(id), &[TaskState::Queued], &change, now).map(Some)
        })
    }

    /// Moves one task from one of `from` to `running` ([`Error::Conflict`] otherwise).
    pub(crate) fn claim(&self, id: &TaskId, from: &[TaskState]) -> Result<TaskRecord> {
        let change = TaskChange::to(TaskState::Running);
        let now = self.now();
        self.write(|transaction| change_state(transaction, id, from, &change, now))
    }

    /// Applies `change` if the task is in one of `from` ([`Error::Conflict`] with its
    /// current state otherwise), appending `change.events` in the same transaction.
    pub(crate) fn transition(
        &self,
        id: &TaskId,
        from: &[TaskState],
        mut change: TaskChange,
    ) -> Result<(TaskRecord, Vec<StoredEvent>)> {
        let new_events = std::mem::take(&mut change.events);
        let now = self.now();
        self.write(|transaction| {
            let task = change_state(transaction, id, from, &change, now)?;
            let stored = events::insert(transaction, id, new_events, task.updated_at)?;
            Ok((task, stored))
        })
    }

    /// Marks every `running` task `interrupted` with `message` as its error (call at
    /// start-up: a task found running was cut off by a crash). Appends no events.
    /// Returns the tasks' ids, oldest first.
    pub(crate) fn interrupt_running(&self, message: &str) -> Result<Vec<TaskId>> {
        let now = self.now();
        self.write(|transaction| {
            let ids = transaction
                .prepare_cached("SELECT id FROM tasks WHERE state = 'running' ORDER BY rowid")?
                .query_map([], |row| row.get(0).map(TaskId))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            transaction
                .prepare_cached(
                    "UPDATE tasks SET state = 'interrupted', error = ?1, updated_at = ?2, \
                     finished_at = NULL WHERE state = 'running'",
                )?
                .execute(params![message, now.as_millis()])?;
            Ok(ids)
        })
    }

    /// Records that the process running `id` is alive (a no-op unless it is `running`
    /// and no cancel was requested on it: [`Store::request_cancel`]).
    pub(crate) fn heartbeat(&self, id: &TaskId) -> Result<()> {
        let now = self.now().as_millis();
        self.write(|transaction| {
            transaction
                .prepare_cached(
                    "UPDATE tasks SET heartbeat_at = ?2 WHERE id = ?1 AND state = 'running' \
                     AND cancel_requested_at IS NULL",
                )?
                .execute(params![id.as_str(), now])?;
            Ok(())
        })
    }

    /// Marks `interrupted` (with `message`) every `running` task whose runner has not
    /// sent a heartbeat for `older_than`: its process stopped; one whose cancel was
    /// requested ([`Store::request_cancel`]) ends `cancelled`, with its event and audit
    /// row. Tasks that a live process is running are left alone.
    pub(crate) fn interrupt_stale(&self, message: &str, older_than: Duration) -> Result<Recovered> {
        let now = self.now();
        let limit = now.saturating_sub(older_than).as_millis();
        self.write(|transaction| {
            let stale = transaction
                .prepare_cached(
                    "SELECT id, cancel_requested_at IS NOT NULL, cancel_requested_by \
                     FROM tasks WHERE state = 'running' \
                     AND (heartbeat_at IS NULL OR heartbeat_at <= ?1) ORDER BY rowid",
                )?
                .query_map([limit], |row| {
                    Ok((
                        TaskId(row.get(0)?),
                        row.get::<_, bool>(1)?,
                        row.get::<_, Option<String>>(2)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut recovered = Recovered::default();
            for (id, cancel_requested, by) in stale {
                if cancel_requested {
                    transaction
                        .prepare_cached(
                            "UPDATE tasks SET state = 'cancelled', error = ?2, updated_at = ?3, \
                             finished_at = ?3, heartbeat_at = NULL, cancel_requested_at = NULL, \
                             cancel_requested_by = NULL WHERE id = ?1",
                        )?
                        .execute(params![
                            id.as_str(),
                            crate::CANCELLED_AFTER_STOP,
                            now.as_millis()
                        ])?;
                    events::insert(transaction, &id, vec![Recovered::cancelled_event()], now)?;
                    audit::insert(transaction, Recovered::cancelled_audit(&id, by), now)?;
                    recovered.cancelled.push(id);
                } else {
                    transaction
                        .prepare_cached(
                            "UPDATE tasks SET state = 'interrupted', error = ?2, updated_at = ?3, \
                             finished_at = NULL, heartbeat_at = NULL WHERE id = ?1",
                        )?
                        .execute(params![id.as_str(), message, now.as_millis()])?;
                    recovered.interrupted.push(id);
                }
            }
            Ok(recovered)
        })
    }

    /// Records a cancel request on the `running` task `id` and clears its heartbeat
    /// (see [`crate::Store::request_cancel`]); `false` unless it is running.
    pub(crate) fn request_cancel(&self, id: &TaskId, user: Option<&str>) -> Result<bool> {
        let now = self.now().as_millis();
        self.write(|transaction| {
            Ok(transaction
                .prepare_cached(
                    "UPDATE tasks SET cancel_requested_at = ?2, cancel_requested_by = ?3, \
                     heartbeat_at = NULL WHERE id = ?1 AND state = 'running'",
                )?
                .execute(params![id.as_str(), now, user])?
                == 1)
        })
    }
}

/// Inserts a `queued` task and its `task_created` audit row (inside the caller's
/// transaction).
pub(crate) fn insert(connection: &Connection, new: NewTask, now: Timestamp) -> Result<TaskRecord> {
    insert_as(connection, new, None, now)
}

/// Like [`insert`], recording the team user who created it (`users.rs`) on the task and
/// its audit row.
pub(crate) fn insert_as(
    connection: &Connection,
    new: NewTask,
    user: Option<&str>,
    now: Timestamp,
) -> Result<TaskRecord> {
    let id = TaskId(ids::new_id("t_", now)?);
    let script = mapping::encode_opt("task script", new.script.as_ref())?;
    let created_by = mapping::name_of("actor", &new.created_by)?;
    connection
        .prepare_cached(
            "INSERT INTO tasks (id, prompt, workspace, workspace_path, state, \
             created_by, script, created_at, updated_at, origin, created_by_user) \
             VALUES (?1, ?2, ?3, ?4, 'queued', ?5, ?6, ?7, ?7, ?8, ?9)",
        )?
        .execute(params![
            id.as_str(),
            new.prompt,
            new.workspace,
            new.workspace_path,
            created_by,
            script,
            now.as_millis(),
            new.origin,
            user,
        ])?;
    audit::insert(
        connection,
        NewAudit {
            actor: Some(new.created_by),
            task_id: Some(id.clone()),
            user: user.map(str::to_owned),
            ..NewAudit::new(pp_types::AuditAction::TaskCreated)
        },
        now,
    )?;
    Ok(inserted::task(id, new, user, now))
}

/// Reads one task.
pub(crate) fn load(connection: &Connection, id: &TaskId) -> Result<TaskRecord> {
    connection
        .prepare_cached(&format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?1"))?
        .query_row([id.as_str()], rows::raw::<RawTask>)
        .optional()?
        .ok_or_else(|| Error::not_found("task", id))?
        .decode()
}

/// The compare-and-set at the heart of every task change. Must run inside a
/// `BEGIN IMMEDIATE` transaction: the state read here cannot change before the update.
/// Ignores `change.events` (the caller appends them). `now` stamps the change.
pub(crate) fn change_state(
    connection: &Connection,
    id: &TaskId,
    from: &[TaskState],
    change: &TaskChange,
    now: Timestamp,
) -> Result<TaskRecord> {
    let current = current_state(connection, id)?;
    if !from.contains(&current) {
        return Err(Error::Conflict {
            id: id.to_string(),
            current,
            expected: from.to_vec(),
        });
    }
    let now = now.as_millis();
    let finished_at = change.to.is_terminal().then_some(now);
    connection
        .prepare_cached(
            "UPDATE tasks SET state = ?2, final_text = COALESCE(?3, final_text), \
             failure_reason = COALESCE(?4, failure_reason), error = COALESCE(?5, error), \
             running_ms = running_ms + ?6, script_position = COALESCE(?7, script_position), \
             updated_at = ?8, finished_at = ?9, \
             heartbeat_at = CASE WHEN ?2 = 'running' THEN ?8 ELSE NULL END, \
             cancel_requested_at = NULL, cancel_requested_by = NULL WHERE id = ?1",
        )?
        .execute(params![
            id.as_str(),
            change.to.as_str(),
            change.final_text,
            change.failure_reason.map(pp_types::FailureReason::as_str),
            change.error,
            mapping::int(change.add_running_ms),
            change.script_position.map(mapping::int),
            now,
            finished_at,
        ])?;
    load(connection, id)
}

/// The state a task is in now ([`Error::NotFound`] if there is no such task).
pub(crate) fn current_state(connection: &Connection, id: &TaskId) -> Result<TaskState> {
    let current: String = connection
        .prepare_cached("SELECT state FROM tasks WHERE id = ?1")?
        .query_row([id.as_str()], |row| row.get(0))
        .optional()?
        .ok_or_else(|| Error::not_found("task", id))?;
    TaskState::parse(&current).ok_or_else(|| Error::Corrupt {
        table: "tasks",
        column: "state",
        id: id.to_string(),
        source: serde::de::Error::custom(format!("unknown task state `{current}`")),
    })
}
