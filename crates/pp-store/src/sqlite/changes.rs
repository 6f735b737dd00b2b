//! The change log: one row per file an approved call changed (or per approved call with
//! effects unknown), and one per operator revert.
//!
//! Rows name snapshot contents by SHA-256; the contents themselves live in the data
//! directory (`pp_tasks`' snapshot store), never in the database. A revert is written in
//! two steps around its file write: [`crate::Store::begin_revert`] records the intent (a
//! `pending` row) before the write, [`crate::Store::finish_revert`] records it done, with its
//! audit row and the reverted change's `reverted_by`, in one transaction. An intent left
//! `pending` by a crash is resolved by the service on the next read
//! ([`crate::Store::finish_revert`] or [`crate::Store::abandon_revert`]).

use std::collections::HashSet;

use pp_types::{ApprovalId, ChangeId, NewAudit, TaskId, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

use super::{SqliteStore as Store, audit, rows};
use crate::error::{Error, Result};
use crate::ids;
use crate::mapping::{self, RawChange, mode_columns};
use crate::types::{ChangeRow, ChangeState, NewChange};

/// The columns of [`RawChange`], in order.
const CHANGE_COLUMNS: &str = "id, task_id, approval_id, tool, kind, path, bytes, at, \
     before_state, before_sha256, after_fingerprint, after_sha256, reverts, reverted_by, state, root, \
     from_path, before_mode, before_uid, before_gid";

impl Store {
    /// Records one change (state `done`).
    pub(crate) fn insert_change(&self, new: NewChange) -> Result<ChangeRow> {
        let now = self.now();
        self.write(|transaction| insert(transaction, new, ChangeState::Done, now))
    }

    /// One change, whatever its state; [`Error::NotFound`] if there is none.
    pub(crate) fn change(&self, id: &ChangeId) -> Result<ChangeRow> {
        self.read(|connection| load(connection, id))
    }

    /// The task's changes, oldest first (abandoned revert intents left out).
    pub(crate) fn task_changes(&self, task: &TaskId) -> Result<Vec<ChangeRow>> {
        self.select(
            "task_id = ?1 AND state != 'abandoned' ORDER BY rowid",
            task.as_str(),
        )
    }

    /// The changes an approval's call made, oldest first.
    pub(crate) fn approval_changes(&self, approval: &ApprovalId) -> Result<Vec<ChangeRow>> {
        self.select(
            "approval_id = ?1 AND state = 'done' ORDER BY rowid",
            approval.as_str(),
        )
    }

    /// The ledger's actions (and details) about an approved call, oldest first: what
    /// an approval card's outcome is derived from.
    pub(crate) fn approval_ledger(
        &self,
        approval: &ApprovalId,
    ) -> Result<Vec<(pp_types::AuditAction, Option<String>)>> {
        self.read(|connection| {
            let rows = connection
                .prepare_cached(
                    "SELECT action, detail FROM audit WHERE approval_id = ?1 ORDER BY id",
                )?
                .query_map([approval.as_str()], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, Option<String>>(1)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows
                .into_iter()
                .filter_map(|(action, detail)| {
                    pp_types::AuditAction::parse(&action).map(|action| (action, detail))
                })
                .collect())
        })
    }

    /// Revert intents a crash may have left (`pending`), of one task or (`None`) of all.
    pub(crate) fn pending_reverts(&self, task: Option<&TaskId>) -> Result<Vec<ChangeRow>> {
        match task {
            Some(task) => self.select(
                "state = 'pending' AND task_id = ?1 ORDER BY rowid",
                task.as_str(),
            ),
            None => self.select("state = 'pending' AND ?1 = ?1 ORDER BY rowid", ""),
        }
    }

    fn select(&self, condition: &str, value: &str) -> Result<Vec<ChangeRow>> {
        self.read(|connection| {
            let raw = connection
                .prepare_cached(&format!(
                    "SELECT {CHANGE_COLUMNS} FROM changes WHERE {condition}"
                ))?
                .query_map([value], rows::raw::<RawChange>)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            raw.into_iter().map(RawChange::decode).collect()
        })
    }

    /// Records a revert's intent before its file write: a `pending` change of kind
    /// `reverted` undoing `of`, in one transaction that checks `of` is still revertible
    /// and has no other revert under way. `None` when it is not (reverted meanwhile).
    pub(crate) fn begin_revert(&self, of: &ChangeId, new: NewChange) -> Result<Option<ChangeRow>> {
        let now = self.now();
        self.write(|transaction| {
            let target = load(transaction, of)?;
            let busy: bool = transaction
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM changes WHERE reverts = ?1 \
                     AND state = 'pending')",
                )?
                .query_row([of.as_str()], |row| row.get(0))?;
            if !target.change.revertible || busy {
                return Ok(None);
            }
            let row = insert(transaction, new, ChangeState::Pending, now)?;
            transaction
                .prepare_cached("UPDATE changes SET reverts = ?2 WHERE id = ?1")?
                .execute(params![row.change.id.as_str(), of.as_str()])?;
            load(transaction, &row.change.id).map(Some)
        })
    }

    /// Records a revert done: the intent becomes `done` with the file's state after the
    /// write, the reverted change gets `reverted_by`, and `audit` is appended (its
    /// `task_id` filled in), all in one transaction.
    pub(crate) fn finish_revert(
        &self,
        revert: &ChangeId,
        after_fingerprint: Option<&str>,
        bytes: Option<u64>,
        audit: NewAudit,
    ) -> Result<ChangeRow> {
        let now = self.now();
        self.write(|transaction| {
            let row = load(transaction, revert)?;
            transaction
                .prepare_cached(
                    "UPDATE changes SET state = 'done', after_fingerprint = ?2, bytes = ?3 \
                     WHERE id = ?1 AND state = 'pending'",
                )?
                .execute(params![
                    revert.as_str(),
                    after_fingerprint,
                    bytes.map(mapping::int)
                ])?;
            if let Some(of) = &row.reverts {
                transaction
                    .prepare_cached(
                        "UPDATE changes SET reverted_by = ?2 WHERE id = ?1 \
                         AND reverted_by IS NULL",
                    )?
                    .execute(params![of.as_str(), revert.as_str()])?;
            }
            let entry = NewAudit {
                task_id: Some(row.change.task_id),
                ..audit
            };
            audit::insert(transaction, entry, now)?;
            load(transaction, revert)
        })
    }

    /// Marks a revert intent whose write never happened `abandoned`.
    pub(crate) fn abandon_revert(&self, revert: &ChangeId) -> Result<()> {
        self.write(|transaction| {
            transaction
                .prepare_cached(
                    "UPDATE changes SET state = 'abandoned' WHERE id = ?1 AND state = 'pending'",
                )?
                .execute([revert.as_str()])?;
            Ok(())
        })
    }

    /// Retention of snapshots: the changes recorded at or before `cutoff` (by the store's
    /// clock, `now - older_than`) lose their kept contents (`expired`: no longer
    /// revertible). Returns how many changes expired and every blob hash still named by
    /// a row, which the snapshot store must keep.
    pub(crate) fn expire_snapshots(
        &self,
        older_than: std::time::Duration,
    ) -> Result<(usize, HashSet<String>)> {
        let cutoff = self.now().saturating_sub(older_than).as_millis();
        self.write(|transaction| {
            let expired = transaction.execute(
                "UPDATE changes SET before_state = 'expired', before_sha256 = NULL \
                 WHERE before_state = 'kept' AND state = 'done' AND at <= ?1",
                [cutoff],
            )?;
            transaction.execute(
                "UPDATE changes SET after_sha256 = NULL \
                 WHERE after_sha256 IS NOT NULL AND state = 'done' AND at <= ?1",
                [cutoff],
            )?;
            let referenced = transaction
                .prepare(
                    "SELECT before_sha256 FROM changes WHERE before_sha256 IS NOT NULL \
                     UNION SELECT after_sha256 FROM changes WHERE after_sha256 IS NOT NULL",
                )?
                .query_map([], |row| row.get::<_, String>(0))?
                .collect::<rusqlite::Result<HashSet<_>>>()?;
            Ok((expired, referenced))
        })
    }
}

/// Inserts a change inside the caller's transaction.
pub(crate) fn insert(
    connection: &Connection,
    new: NewChange,
    state: ChangeState,
    now: Timestamp,
) -> Result<ChangeRow> {
    let NewChange {
        task_id,
        approval_id,
        tool,
        kind,
        path,
        from_path,
        root,
        bytes,
        before,
        before_mode,
        after_fingerprint,
        after_sha256,
    } = new;
    let id = ChangeId(ids::new_id("c_", now)?);
    let (before_state, before_sha256) = before.column();
    let [mode, uid, gid] = mode_columns(before_mode.as_ref());
    connection
        .prepare_cached(
            "INSERT INTO changes (id, task_id, approval_id, tool, kind, path, bytes, at, \
             before_state, before_sha256, after_fingerprint, after_sha256, state, root, \
             from_path, before_mode, before_uid, before_gid) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
             ?18)",
        )?
        .execute(params![
            id.as_str(),
            task_id.as_str(),
            approval_id.as_ref().map(ApprovalId::as_str),
            tool,
            kind.as_str(),
            path,
            bytes.map(mapping::int),
            now.as_millis(),
            before_state,
            before_sha256,
            after_fingerprint,
            after_sha256,
            state.as_str(),
            root.as_str(),
            from_path,
            mode,
            uid,
            gid,
        ])?;
    load(connection, &id)
}

fn load(connection: &Connection, id: &ChangeId) -> Result<ChangeRow> {
    connection
        .prepare_cached(&format!(
            "SELECT {CHANGE_COLUMNS} FROM changes WHERE id = ?1"
        ))?
        .query_row([id.as_str()], rows::raw::<RawChange>)
        .optional()?
        .ok_or_else(|| Error::NotFound {
            what: "change",
            id: id.to_string(),
        })?
        .decode()
}
