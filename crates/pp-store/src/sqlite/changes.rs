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

use pp_types::{
    ApprovalId, Change, ChangeId, ChangeKind, ChangeRoot, FileMode, NewAudit, TaskId, Timestamp,
};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::{SqliteStore as Store, audit, rows};
use crate::{Error, Result, ids};

/// What a file held before a change, as the log records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Before {
    /// Nothing: a revert deletes the file.
    Absent,
    /// The content is kept; the SHA-256 (hex) of the blob.
    Kept(String),
    /// Not kept (too large, unreadable, or the blob could not be stored).
    NotKept,
    /// Kept once, pruned by `[revert] retain_days`.
    Expired,
    /// An empty folder (what a delete removed): a revert creates it again.
    Folder,
    /// No snapshot at all (effects unknown).
    Unknown,
}

impl Before {
    fn column(&self) -> (&'static str, Option<&str>) {
        match self {
            Self::Absent => ("absent", None),
            Self::Kept(sha256) => ("kept", Some(sha256)),
            Self::NotKept => ("not_kept", None),
            Self::Expired => ("expired", None),
            Self::Folder => ("folder", None),
            Self::Unknown => ("none", None),
        }
    }
}

/// Where a row is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeState {
    /// Recorded after the effect.
    Done,
    /// A revert's intent: its file write may or may not have happened.
    Pending,
    /// An intent whose write never happened (hidden from lists).
    Abandoned,
}

/// A change to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewChange {
    /// The task.
    pub task_id: TaskId,
    /// The approval that allowed the call (`None` for reverts).
    pub approval_id: Option<ApprovalId>,
    /// The tool (`revert` for reverts).
    pub tool: String,
    /// What it did.
    pub kind: ChangeKind,
    /// The file relative to `root`, links resolved (a move: where it is now).
    pub path: Option<String>,
    /// A move only: where the entry was, relative to `root`, links resolved.
    pub from_path: Option<String>,
    /// What `path` is relative to.
    pub root: ChangeRoot,
    /// Bytes the file holds afterwards.
    pub bytes: Option<u64>,
    /// What the file held before.
    pub before: Before,
    /// The mode and owner of the file before (what a revert that writes it again
    /// gives it); `None` when nothing was there or it was not recorded.
    pub before_mode: Option<FileMode>,
    /// The jail's fingerprint of the file right after the change.
    pub after_fingerprint: Option<String>,
    /// The blob of the content right after the change, when kept.
    pub after_sha256: Option<String>,
}

/// A stored change with what a revert needs besides the wire view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeRow {
    /// The wire view (`revertible` computed from the columns below).
    pub change: Change,
    /// What the file held before.
    pub before: Before,
    /// The mode and owner of the file before; `None` for rows recorded before modes
    /// were kept, and where nothing was there.
    pub before_mode: Option<FileMode>,
    /// The fingerprint right after the change.
    pub after_fingerprint: Option<String>,
    /// The blob of the content right after the change.
    pub after_sha256: Option<String>,
    /// For a revert: the change it undoes.
    pub reverts: Option<ChangeId>,
    /// Done, pending or abandoned.
    pub state: ChangeState,
}

/// The columns [`read_row`] reads, in order.
const CHANGE_COLUMNS: &str = "id, task_id, approval_id, tool, kind, path, bytes, at, \
     before_state, before_sha256, after_fingerprint, after_sha256, reverts, reverted_by, state, root, \
     from_path, before_mode, before_uid, before_gid";

fn read_row(row: &Row<'_>) -> rusqlite::Result<Raw> {
    Ok(Raw {
        id: row.get(0)?,
        task_id: row.get(1)?,
        approval_id: row.get(2)?,
        tool: row.get(3)?,
        kind: row.get(4)?,
        path: row.get(5)?,
        bytes: row.get(6)?,
        at: row.get(7)?,
        before_state: row.get(8)?,
        before_sha256: row.get(9)?,
        after_fingerprint: row.get(10)?,
        after_sha256: row.get(11)?,
        reverts: row.get(12)?,
        reverted_by: row.get(13)?,
        state: row.get(14)?,
        root: row.get(15)?,
        from_path: row.get(16)?,
        before_mode: row.get(17)?,
        before_uid: row.get(18)?,
        before_gid: row.get(19)?,
    })
}

/// A `changes` row before decoding.
struct Raw {
    id: String,
    task_id: String,
    approval_id: Option<String>,
    tool: String,
    kind: String,
    path: Option<String>,
    bytes: Option<i64>,
    at: i64,
    before_state: String,
    before_sha256: Option<String>,
    after_fingerprint: Option<String>,
    after_sha256: Option<String>,
    reverts: Option<String>,
    reverted_by: Option<String>,
    state: String,
    root: String,
    from_path: Option<String>,
    before_mode: Option<i64>,
    before_uid: Option<i64>,
    before_gid: Option<i64>,
}

/// A mode and owner from their three columns (`None` without a mode).
pub(crate) fn mode_from_columns(
    mode: Option<i64>,
    uid: Option<i64>,
    gid: Option<i64>,
) -> Option<FileMode> {
    let id = |value: Option<i64>| value.and_then(|value| u32::try_from(value).ok());
    Some(FileMode {
        mode: id(mode)?,
        uid: id(uid),
        gid: id(gid),
    })
}

/// A mode and owner as their three columns.
pub(crate) fn mode_columns(mode: Option<&FileMode>) -> [Option<i64>; 3] {
    match mode {
        Some(mode) => [
            Some(i64::from(mode.mode)),
            mode.uid.map(i64::from),
            mode.gid.map(i64::from),
        ],
        None => [None; 3],
    }
}

impl Raw {
    fn decode(self) -> Result<ChangeRow> {
        let corrupt = |column: &'static str, value: &str| Error::Corrupt {
            table: "changes",
            column,
            id: self.id.clone(),
            source: serde::de::Error::custom(format!("unknown value `{value}`")),
        };
        let kind = ChangeKind::parse(&self.kind).ok_or_else(|| corrupt("kind", &self.kind))?;
        let before = match (self.before_state.as_str(), self.before_sha256.clone()) {
            ("absent", _) => Before::Absent,
            ("kept", Some(sha256)) => Before::Kept(sha256),
            ("not_kept", _) => Before::NotKept,
            ("expired", _) => Before::Expired,
            ("folder", _) => Before::Folder,
            ("none", _) => Before::Unknown,
            (other, _) => return Err(corrupt("before_state", other)),
        };
        let root = ChangeRoot::parse(&self.root).ok_or_else(|| corrupt("root", &self.root))?;
        let state = match self.state.as_str() {
            "done" => ChangeState::Done,
            "pending" => ChangeState::Pending,
            "abandoned" => ChangeState::Abandoned,
            other => return Err(corrupt("state", other)),
        };
        let revertible = matches!(
            kind,
            ChangeKind::Created
                | ChangeKind::Overwritten
                | ChangeKind::Edited
                | ChangeKind::Moved
                | ChangeKind::Deleted
                | ChangeKind::FolderCreated
        ) && matches!(before, Before::Absent | Before::Kept(_) | Before::Folder)
            && (kind != ChangeKind::Moved || self.from_path.is_some())
            && self.reverted_by.is_none()
            && state == ChangeState::Done
            && self.path.is_some();
        Ok(ChangeRow {
            change: Change {
                id: ChangeId(self.id),
                task_id: TaskId(self.task_id),
                approval_id: self.approval_id.map(ApprovalId),
                tool: self.tool,
                kind,
                path: self.path,
                from_path: self.from_path,
                root,
                bytes: self.bytes.and_then(|bytes| u64::try_from(bytes).ok()),
                at: Timestamp::from_millis(self.at),
                revertible,
                reverted_by: self.reverted_by.map(ChangeId),
            },
            before,
            before_mode: mode_from_columns(self.before_mode, self.before_uid, self.before_gid),
            after_fingerprint: self.after_fingerprint,
            after_sha256: self.after_sha256,
            reverts: self.reverts.map(ChangeId),
            state,
        })
    }
}

impl Store {
    /// Records one change (state `done`).
    pub(crate) fn insert_change(&self, new: NewChange) -> Result<ChangeRow> {
        let now = self.now();
        self.write(|transaction| insert(transaction, new, "done", now))
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
                .query_map([value], read_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            raw.into_iter().map(Raw::decode).collect()
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
            let row = insert(transaction, new, "pending", now)?;
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
                    bytes.map(rows::int)
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
    state: &str,
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
            bytes.map(rows::int),
            now.as_millis(),
            before_state,
            before_sha256,
            after_fingerprint,
            after_sha256,
            state,
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
        .query_row([id.as_str()], read_row)
        .optional()?
        .ok_or_else(|| Error::NotFound {
            what: "change",
            id: id.to_string(),
        })?
        .decode()
}
