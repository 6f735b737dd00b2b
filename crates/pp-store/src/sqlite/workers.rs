//! The worker registry (the `workers` table, `migrations/sqlite/0011_workers.sql`): each
//! process that runs tasks registers the workspaces it has and sends heartbeats, so a
//! queued task whose workspace no live worker has can say so, and each worker claims only
//! tasks it can run ([`crate::Store::claim_queued_in`]).

use std::time::Duration;

use pp_types::{TaskId, TaskRecord, TaskState, Timestamp};
use rusqlite::{OptionalExtension, params};

use super::SqliteStore as Store;
use super::tasks::change_state;
use crate::error::{Error, Result};
use crate::ids;
use crate::mapping;
use crate::types::{NewWorker, TaskChange, WorkerRecord};

/// Workers silent for this long are deleted when another registers (their rows only
/// say who was alive; tasks keep their own heartbeats).
const FORGET_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

impl Store {
    /// Registers a worker process and returns its row (id `w_…`), forgetting workers
    /// silent for a day on the way.
    pub(crate) fn register_worker(&self, new: NewWorker) -> Result<WorkerRecord> {
        let now = self.now();
        let id = ids::new_id("w_", now)?;
        let workspaces = mapping::encode("worker workspaces", &new.workspaces)?;
        let forget_before = now.saturating_sub(FORGET_AFTER).as_millis();
        self.write(|transaction| {
            transaction
                .prepare_cached("DELETE FROM workers WHERE heartbeat_at < ?1")?
                .execute([forget_before])?;
            transaction
                .prepare_cached(
                    "INSERT INTO workers (id, host, pid, workspaces, started_at, heartbeat_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                )?
                .execute(params![
                    id,
                    new.host,
                    i64::from(new.pid),
                    workspaces,
                    now.as_millis()
                ])?;
            Ok(())
        })?;
        Ok(WorkerRecord {
            id,
            host: new.host,
            pid: new.pid,
            workspaces: new.workspaces,
            started_at: now,
            heartbeat_at: now,
        })
    }

    /// Records that worker `id` is alive ([`Error::NotFound`] once it was removed or
    /// forgotten: register again).
    pub(crate) fn worker_heartbeat(&self, id: &str) -> Result<()> {
        let now = self.now().as_millis();
        let changed = self.write(|transaction| {
            Ok(transaction
                .prepare_cached("UPDATE workers SET heartbeat_at = ?2 WHERE id = ?1")?
                .execute(params![id, now])?)
        })?;
        if changed == 0 {
            return Err(Error::NotFound {
                what: "worker",
                id: id.to_owned(),
            });
        }
        Ok(())
    }

    /// The workers that sent a heartbeat within `within`, oldest registration first.
    pub(crate) fn live_workers(&self, within: Duration) -> Result<Vec<WorkerRecord>> {
        let since = self.now().saturating_sub(within).as_millis();
        self.read(|connection| {
            let raw = connection
                .prepare_cached(
                    "SELECT id, host, pid, workspaces, started_at, heartbeat_at FROM workers \
                     WHERE heartbeat_at > ?1 ORDER BY started_at, id",
                )?
                .query_map([since], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, i64>(2)?,
                        row.get::<_, String>(3)?,
                        row.get::<_, i64>(4)?,
                        row.get::<_, i64>(5)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            raw.into_iter()
                .map(|(id, host, pid, workspaces, started_at, heartbeat_at)| {
                    let workspaces =
                        mapping::decode_json("workers", "workspaces", &id, &workspaces)?;
                    Ok(WorkerRecord {
                        host,
                        pid: u32::try_from(pid).unwrap_or(0),
                        workspaces,
                        started_at: Timestamp::from_millis(started_at),
                        heartbeat_at: Timestamp::from_millis(heartbeat_at),
                        id,
                    })
                })
                .collect()
        })
    }

    /// Removes worker `id` (a clean shutdown); removing an unknown worker is not an error.
    pub(crate) fn remove_worker(&self, id: &str) -> Result<()> {
        self.write(|transaction| {
            transaction
                .prepare_cached("DELETE FROM workers WHERE id = ?1")?
                .execute([id])?;
            Ok(())
        })
    }

    /// Deletes the workers silent for longer than `silent_for`; how many.
    pub(crate) fn forget_workers(&self, silent_for: Duration) -> Result<u64> {
        let before = self.now().saturating_sub(silent_for).as_millis();
        let deleted = self.write(|transaction| {
            Ok(transaction
                .prepare_cached("DELETE FROM workers WHERE heartbeat_at < ?1")?
                .execute([before])?)
        })?;
        Ok(u64::try_from(deleted).unwrap_or(u64::MAX))
    }

    /// Like [`crate::Store::claim_queued`], but only tasks of `workspaces` (by name): a
    /// worker claims only what it can run. `None` if no such task is queued.
    pub(crate) fn claim_queued_in(&self, workspaces: &[String]) -> Result<Option<TaskRecord>> {
        if workspaces.is_empty() {
            return Ok(None);
        }
        let now = self.now();
        let names = mapping::encode("workspace names", workspaces)?;
        self.write(|transaction| {
            let oldest: Option<String> = transaction
                .prepare_cached(
                    "SELECT id FROM tasks WHERE state = 'queued' \
                     AND workspace IN (SELECT value FROM json_each(?1)) ORDER BY rowid LIMIT 1",
                )?
                .query_row([names], |row| row.get(0))
                .optional()?;
            let Some(id) = oldest else {
                return Ok(None);
            };
            let change = TaskChange::to(TaskState::Running);
            change_state(transaction, &TaskId(id), &[TaskState::Queued], &change, now).map(Some)
        })
    }
}
