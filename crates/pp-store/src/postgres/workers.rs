//! The worker registry (the `workers` table, `migrations/postgres/0002_workers.sql`): each
//! process that runs tasks registers the workspaces it has and sends heartbeats, and
//! claims only tasks it can run ([`crate::Store::claim_queued_in`]).

use std::time::Duration;

use pp_types::{TaskId, TaskRecord, TaskState, Timestamp};

use super::tasks::apply_change;
use super::{PgStore, execute, query, query_opt};
use crate::error::{Error, Result};
use crate::ids;
use crate::mapping::{decode_json, encode};
use crate::types::{NewWorker, TaskChange, WorkerRecord};

/// Workers silent for this long are deleted when another registers (as on SQLite).
const FORGET_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

impl PgStore {
    /// Registers a worker process and returns its row (id `w_…`), forgetting workers
    /// silent for a day on the way.
    pub(crate) async fn register_worker(&self, new: NewWorker) -> Result<WorkerRecord> {
        let now = self.now();
        let id = ids::new_id("w_", now)?;
        let workspaces = encode("worker workspaces", &new.workspaces)?;
        let forget_before = now.saturating_sub(FORGET_AFTER).as_millis();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        execute(
            &transaction,
            "DELETE FROM workers WHERE heartbeat_at < $1",
            &[&forget_before],
        )
        .await?;
        execute(
            &transaction,
            "INSERT INTO workers (id, host, pid, workspaces, started_at, heartbeat_at) \
             VALUES ($1, $2, $3, $4, $5, $5)",
            &[
                &id,
                &new.host,
                &i64::from(new.pid),
                &workspaces,
                &now.as_millis(),
            ],
        )
        .await?;
        transaction.commit().await?;
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
    pub(crate) async fn worker_heartbeat(&self, id: &str) -> Result<()> {
        let now = self.now().as_millis();
        let changed = execute(
            &self.client().await?,
            "UPDATE workers SET heartbeat_at = $2 WHERE id = $1",
            &[&id, &now],
        )
        .await?;
        if changed == 0 {
            return Err(Error::NotFound {
                what: "worker",
                id: id.to_owned(),
            });
        }
        Ok(())
    }

    /// The workers that sent a heartbeat within `within`, oldest registration first.
    pub(crate) async fn live_workers(&self, within: Duration) -> Result<Vec<WorkerRecord>> {
        let since = self.now().saturating_sub(within).as_millis();
        let found = query(
            &self.client().await?,
            "SELECT id, host, pid, workspaces, started_at, heartbeat_at FROM workers \
             WHERE heartbeat_at > $1 ORDER BY started_at, id",
            &[&since],
        )
        .await?;
        found
            .iter()
            .map(|row| {
                let id: String = row.try_get(0)?;
                let workspaces: String = row.try_get(3)?;
                let pid: i64 = row.try_get(2)?;
                Ok(WorkerRecord {
                    host: row.try_get(1)?,
                    pid: u32::try_from(pid).unwrap_or(0),
                    workspaces: decode_json("workers", "workspaces", &id, &workspaces)?,
                    started_at: Timestamp::from_millis(row.try_get(4)?),
                    heartbeat_at: Timestamp::from_millis(row.try_get(5)?),
                    id,
                })
            })
            .collect()
    }

    /// Removes worker `id` (a clean shutdown); removing an unknown worker is not an error.
    pub(crate) async fn remove_worker(&self, id: &str) -> Result<()> {
        execute(
            &self.client().await?,
            "DELETE FROM workers WHERE id = $1",
            &[&id],
        )
        .await?;
        Ok(())
    }

    /// Deletes the workers silent for longer than `silent_for`; how many.
    pub(crate) async fn forget_workers(&self, silent_for: Duration) -> Result<u64> {
        let before = self.now().saturating_sub(silent_for).as_millis();
        execute(
            &self.client().await?,
            "DELETE FROM workers WHERE heartbeat_at < $1",
            &[&before],
        )
        .await
    }

    /// Like [`crate::Store::claim_queued`], but only tasks of `workspaces` (by name).
    /// Rows another worker is claiming are skipped (`SKIP LOCKED`). `None` if no such
    /// task is queued.
    pub(crate) async fn claim_queued_in(
        &self,
        workspaces: &[String],
    ) -> Result<Option<TaskRecord>> {
        if workspaces.is_empty() {
            return Ok(None);
        }
        let now = self.now();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let oldest = query_opt(
            &transaction,
            "SELECT id FROM tasks WHERE state = 'queued' AND workspace = ANY($1) \
             ORDER BY ord LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED",
            &[&workspaces],
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
}
