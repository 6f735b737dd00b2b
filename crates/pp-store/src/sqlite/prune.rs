//! Retention: dropping the history of tasks that finished long ago.
//!
//! Events and audit rows are append-only (triggers refuse UPDATE and DELETE). The one
//! exception is this module: its transaction inserts a row into `prune_guard`, which
//! switches the delete triggers off for that transaction only, deletes, and removes the
//! row before committing (see `migrations/sqlite/0003_prune_guard.sql`).

use std::time::Duration;

use rusqlite::params;

use super::SqliteStore as Store;
use crate::error::Result;
use crate::types::PruneReport;

impl Store {
    /// Removes, in one transaction, the events and audit rows older than `older_than`
    /// (by the store's clock) of tasks that finished (`completed`, `failed`,
    /// `cancelled`, `timed_out`) before that, and audit rows tied to no task (console
    /// logins) older than that.
    ///
    /// The rows of tasks that are `queued`, `running`, `waiting_approval` or
    /// `interrupted` are never removed, however old; nor are the task rows, approvals
    /// or sequence numbers (a pruned `seq` is never reused).
    pub(crate) fn prune(&self, older_than: Duration) -> Result<PruneReport> {
        let cutoff = self.now().saturating_sub(older_than).as_millis();
        self.write(|transaction| {
            transaction.execute("INSERT INTO prune_guard (id) VALUES (1)", [])?;
            let finished = transaction
                .prepare(
                    "SELECT id FROM tasks WHERE finished_at IS NOT NULL AND finished_at <= ?1 \
                     AND state IN ('completed', 'failed', 'cancelled', 'timed_out') \
                     AND (EXISTS (SELECT 1 FROM events WHERE task_id = tasks.id AND at <= ?1) \
                     OR EXISTS (SELECT 1 FROM audit WHERE task_id = tasks.id AND at <= ?1)) \
                     ORDER BY rowid",
                )?
                .query_map([cutoff], |row| row.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut report = PruneReport::default();
            let mut events =
                transaction.prepare("DELETE FROM events WHERE task_id = ?1 AND at <= ?2")?;
            let mut audit =
                transaction.prepare("DELETE FROM audit WHERE task_id = ?1 AND at <= ?2")?;
            for task in &finished {
                let removed_events = events.execute(params![task, cutoff])?;
                let removed_audit = audit.execute(params![task, cutoff])?;
                report.events += removed_events;
                report.audit += removed_audit;
                if removed_events + removed_audit > 0 {
                    report.tasks += 1;
                }
            }
            report.audit += transaction.execute(
                "DELETE FROM audit WHERE task_id IS NULL AND at <= ?1",
                [cutoff],
            )?;
            transaction.execute("DELETE FROM prune_guard", [])?;
            Ok(report)
        })
    }
}
