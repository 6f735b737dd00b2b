//! Started calls, as the SQLite backend's `started`: what an approved call's targets held
//! right before it ran, recorded with its `tool_started` audit row; a retry marks those
//! with no recorded result `cut`, and the approval that asks such a call again names it.

use deadpool_postgres::GenericClient;
use pp_types::{ApprovalId, NewAudit, TaskId, Timestamp};
use tokio_postgres::Row;

use super::{PgStore, audit, count, execute, query_opt};
use crate::error::{Error, Result};
use crate::types::{NewStartedCall, StartedCall, files_column, files_of};

/// The columns [`decode`] reads, in order.
const COLUMNS: &str = "approval_id, task_id, tool, target, started_at, files, cut, asked_again_by";

impl PgStore {
    /// Records that an approved call is about to run: `started` and its `audit` row (its
    /// `tool_started`), in one transaction.
    pub(crate) async fn call_started(
        &self,
        started: NewStartedCall,
        audit: NewAudit,
    ) -> Result<()> {
        let now = self.now();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        execute(
            &transaction,
            "INSERT INTO started_calls (approval_id, task_id, tool, target, started_at, files) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (approval_id) DO UPDATE \
             SET started_at = excluded.started_at, files = excluded.files, cut = FALSE",
            &[
                &started.approval_id.as_str(),
                &started.task_id.as_str(),
                &started.tool,
                &started.target,
                &now.as_millis(),
                &files_column(&started.files),
            ],
        )
        .await?;
        audit::insert(&transaction, audit, now).await?;
        transaction.commit().await?;
        Ok(())
    }

    /// Marks the started calls of `task` with no result in the ledger `cut`; returns how
    /// many.
    pub(crate) async fn mark_cut_calls(&self, task: &TaskId) -> Result<usize> {
        let marked = execute(
            &self.client().await?,
            "UPDATE started_calls SET cut = TRUE WHERE task_id = $1 AND NOT cut \
             AND asked_again_by IS NULL AND NOT EXISTS (SELECT 1 FROM audit \
             WHERE audit.approval_id = started_calls.approval_id \
             AND audit.action IN ('tool_executed', 'tool_failed', 'tool_denied'))",
            &[&task.as_str()],
        )
        .await?;
        Ok(count(marked))
    }

    /// Names `approval` as the one asking again the oldest cut call of `task` with the
    /// same `tool` and `target` that no approval asks again yet; returns that call.
    pub(crate) async fn ask_cut_call_again(
        &self,
        approval: &ApprovalId,
        task: &TaskId,
        tool: &str,
        target: Option<&str>,
    ) -> Result<Option<StartedCall>> {
        const FIND: &str = "SELECT approval_id FROM started_calls WHERE task_id = $1 \
             AND tool = $2 AND target IS NOT DISTINCT FROM $3 AND cut \
             AND asked_again_by IS NULL ORDER BY ord LIMIT 1";
        let mut client = self.client().await?;
        // Read first: nearly every approval asks nothing cut, and needs no transaction.
        if query_opt(&client, FIND, &[&task.as_str(), &tool, &target])
            .await?
            .is_none()
        {
            return Ok(None);
        }
        let transaction = client.transaction().await?;
        let found = query_opt(
            &transaction,
            &format!("{FIND} FOR UPDATE"),
            &[&task.as_str(), &tool, &target],
        )
        .await?;
        let Some(found) = found else {
            return Ok(None);
        };
        let found: String = found.try_get(0)?;
        let row = query_opt(
            &transaction,
            &format!(
                "UPDATE started_calls SET asked_again_by = $2 WHERE approval_id = $1 \
                 RETURNING {COLUMNS}"
            ),
            &[&found, &approval.as_str()],
        )
        .await?;
        let call = row.as_ref().map(decode).transpose()?;
        transaction.commit().await?;
        Ok(call)
    }

    /// The cut call `approval` asks again, if it is one.
    pub(crate) async fn cut_call_asked_by(
        &self,
        approval: &ApprovalId,
    ) -> Result<Option<StartedCall>> {
        select(&self.client().await?, approval).await
    }
}

async fn select(db: &impl GenericClient, approval: &ApprovalId) -> Result<Option<StartedCall>> {
    let row = query_opt(
        db,
        &format!("SELECT {COLUMNS} FROM started_calls WHERE asked_again_by = $1"),
        &[&approval.as_str()],
    )
    .await?;
    row.as_ref().map(decode).transpose()
}

fn decode(row: &Row) -> Result<StartedCall> {
    let approval_id: String = row.try_get(0)?;
    let files: String = row.try_get(5)?;
    let files = files_of(&files).ok_or_else(|| Error::Corrupt {
        table: "started_calls",
        column: "files",
        id: approval_id.clone(),
        source: serde::de::Error::custom("files that do not decode"),
    })?;
    Ok(StartedCall {
        approval_id: ApprovalId(approval_id),
        task_id: TaskId(row.try_get(1)?),
        tool: row.try_get(2)?,
        target: row.try_get(3)?,
        started_at: Timestamp::from_millis(row.try_get(4)?),
        files,
        cut: row.try_get(6)?,
        asked_again_by: row.try_get::<_, Option<String>>(7)?.map(ApprovalId),
    })
}
