//! Started calls: what an approved call's targets held right before it ran, recorded
//! with its `tool_started` audit row; a retry marks those with no recorded result `cut`,
//! and the approval that asks such a call again names it.

use pp_types::{ApprovalId, NewAudit, TaskId, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

use super::{SqliteStore as Store, audit};
use crate::error::{Error, Result};
use crate::types::{NewStartedCall, StartedCall, files_column, files_of};

/// The ledger actions that record a call's result.
const RESULT: &str = "('tool_executed', 'tool_failed', 'tool_denied')";

impl Store {
    /// Records that an approved call is about to run: `started` and its `audit` row (its
    /// `tool_started`), in one transaction.
    pub(crate) fn call_started(&self, started: NewStartedCall, audit: NewAudit) -> Result<()> {
        let now = self.now();
        let NewStartedCall {
            approval_id,
            task_id,
            tool,
            target,
            files,
        } = started;
        self.write(|transaction| {
            transaction
                .prepare_cached(
                    "INSERT INTO started_calls (approval_id, task_id, tool, target, started_at, \
                     files) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (approval_id) DO UPDATE \
                     SET started_at = excluded.started_at, files = excluded.files, cut = 0",
                )?
                .execute(params![
                    approval_id.as_str(),
                    task_id.as_str(),
                    tool,
                    target,
                    now.as_millis(),
                    files_column(&files),
                ])?;
            audit::insert(transaction, audit, now)?;
            Ok(())
        })
    }

    /// Marks the started calls of `task` with no result in the ledger `cut` (a retry:
    /// nothing of the task runs now); returns how many.
    pub(crate) fn mark_cut_calls(&self, task: &TaskId) -> Result<usize> {
        self.write(|transaction| {
            Ok(transaction
                .prepare_cached(&format!(
                    "UPDATE started_calls SET cut = 1 WHERE task_id = ?1 AND cut = 0 \
                     AND asked_again_by IS NULL AND NOT EXISTS (SELECT 1 FROM audit \
                     WHERE audit.approval_id = started_calls.approval_id \
                     AND audit.action IN {RESULT})"
                ))?
                .execute([task.as_str()])?)
        })
    }

    /// Names `approval` as the one asking again the oldest cut call of `task` with the
    /// same `tool` and `target` that no approval asks again yet; returns that call.
    pub(crate) fn ask_cut_call_again(
        &self,
        approval: &ApprovalId,
        task: &TaskId,
        tool: &str,
        target: Option<&str>,
    ) -> Result<Option<StartedCall>> {
        // Read first: nearly every approval asks nothing cut, and needs no write lock.
        let find = |connection: &Connection| -> Result<Option<String>> {
            Ok(connection
                .prepare_cached(
                    "SELECT approval_id FROM started_calls WHERE task_id = ?1 AND tool = ?2 \
                     AND target IS ?3 AND cut = 1 AND asked_again_by IS NULL \
                     ORDER BY started_at, rowid LIMIT 1",
                )?
                .query_row(params![task.as_str(), tool, target], |row| row.get(0))
                .optional()?)
        };
        if self.read(find)?.is_none() {
            return Ok(None);
        }
        self.write(|transaction| {
            let Some(found) = find(transaction)? else {
                return Ok(None);
            };
            transaction
                .prepare_cached(
                    "UPDATE started_calls SET asked_again_by = ?2 WHERE approval_id = ?1",
                )?
                .execute(params![found, approval.as_str()])?;
            select(transaction, "approval_id", &found)
        })
    }

    /// The cut call `approval` asks again, if it is one.
    pub(crate) fn cut_call_asked_by(&self, approval: &ApprovalId) -> Result<Option<StartedCall>> {
        self.read(|connection| select(connection, "asked_again_by", approval.as_str()))
    }
}

fn select(connection: &Connection, column: &str, value: &str) -> Result<Option<StartedCall>> {
    let row = connection
        .prepare_cached(&format!(
            "SELECT approval_id, task_id, tool, target, started_at, files, cut, asked_again_by \
             FROM started_calls WHERE {column} = ?1"
        ))?
        .query_row([value], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, Option<String>>(3)?,
                row.get::<_, i64>(4)?,
                row.get::<_, String>(5)?,
                row.get::<_, i64>(6)?,
                row.get::<_, Option<String>>(7)?,
            ))
        })
        .optional()?;
    let Some((approval_id, task_id, tool, target, started_at, files, cut, asked_again_by)) = row
    else {
        return Ok(None);
    };
    let files = files_of(&files).ok_or_else(|| Error::Corrupt {
        table: "started_calls",
        column: "files",
        id: approval_id.clone(),
        source: serde::de::Error::custom("files that do not decode"),
    })?;
    Ok(Some(StartedCall {
        approval_id: ApprovalId(approval_id),
        task_id: TaskId(task_id),
        tool,
        target,
        started_at: Timestamp::from_millis(started_at),
        files,
        cut: cut != 0,
        asked_again_by: asked_again_by.map(ApprovalId),
    }))
}
