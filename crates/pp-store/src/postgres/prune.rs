//! Retention: dropping the history of tasks that finished long ago.
//!
//! Events and audit rows are append-only (a trigger refuses UPDATE and DELETE). The one
//! exception is this module: its transaction inserts a row into `prune_guard`, which
//! lets the trigger allow deletes for that transaction only, deletes, and removes the
//! row before committing (see `migrations/postgres/0001_init.sql`).

use std::time::Duration;

use super::{PgStore, count, execute, query};
use crate::error::Result;
use crate::types::PruneReport;

impl PgStore {
    /// Removes, in one transaction, the events and audit rows older than `older_than`
    /// (by the store's clock) of tasks that finished (`completed`, `failed`,
    /// `cancelled`, `timed_out`) before that, and audit rows tied to no task older than
    /// that. Task rows, approvals and sequence numbers stay (a pruned `seq` is never
    /// reused: it comes from a sequence).
    pub(crate) async fn prune(&self, older_than: Duration) -> Result<PruneReport> {
        let cutoff = self.now().saturating_sub(older_than).as_millis();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        execute(&transaction, "INSERT INTO prune_guard (id) VALUES (1)", &[]).await?;
        let finished = query(
            &transaction,
            "SELECT id FROM tasks WHERE finished_at IS NOT NULL AND finished_at <= $1 \
             AND state IN ('completed', 'failed', 'cancelled', 'timed_out') \
             AND (EXISTS (SELECT 1 FROM events WHERE task_id = tasks.id AND at <= $1) \
             OR EXISTS (SELECT 1 FROM audit WHERE task_id = tasks.id AND at <= $1)) \
             ORDER BY ord",
            &[&cutoff],
        )
        .await?;
        let mut report = PruneReport::default();
        for row in &finished {
            let task: String = row.try_get(0)?;
            let removed_events = execute(
                &transaction,
                "DELETE FROM events WHERE task_id = $1 AND at <= $2",
                &[&task, &cutoff],
            )
            .await?;
            let removed_audit = execute(
                &transaction,
                "DELETE FROM audit WHERE task_id = $1 AND at <= $2",
                &[&task, &cutoff],
            )
            .await?;
            report.events += count(removed_events);
            report.audit += count(removed_audit);
            if removed_events + removed_audit > 0 {
                report.tasks += 1;
            }
        }
        report.audit += count(
            execute(
                &transaction,
                "DELETE FROM audit WHERE task_id IS NULL AND at <= $1",
                &[&cutoff],
            )
            .await?,
        );
        execute(&transaction, "DELETE FROM prune_guard", &[]).await?;
        transaction.commit().await?;
        Ok(report)
    }
}
