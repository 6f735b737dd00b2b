//! The change log: one row per file an approved call changed, and one per operator
//! revert (see the SQLite backend's `changes` for the two-step revert).

use std::collections::HashSet;

use deadpool_postgres::GenericClient;
use pp_types::{ApprovalId, Change, ChangeId, ChangeKind, ChangeRoot, NewAudit, TaskId, Timestamp};
use tokio_postgres::Row;

use super::{PgStore, audit, count, execute, query, query_one, query_opt};
use crate::sqlite::changes::{mode_columns, mode_from_columns};
use crate::sqlite::rows::int;
use crate::{Before, ChangeRow, ChangeState, Error, NewChange, Result, ids};

/// The columns [`decode`] reads, in order.
const CHANGE_COLUMNS: &str = "id, task_id, approval_id, tool, kind, path, bytes, at, \
     before_state, before_sha256, after_fingerprint, after_sha256, reverts, reverted_by, state, \
     root, from_path, before_mode, before_uid, before_gid";

/// `before` as its two columns.
fn before_columns(before: &Before) -> (&'static str, Option<&str>) {
    match before {
        Before::Absent => ("absent", None),
        Before::Kept(sha256) => ("kept", Some(sha256)),
        Before::NotKept => ("not_kept", None),
        Before::Expired => ("expired", None),
        Before::Folder => ("folder", None),
        Before::Unknown => ("none", None),
    }
}

/// Decodes a row selected with [`CHANGE_COLUMNS`] (the same rules as SQLite's).
fn decode(row: &Row) -> Result<ChangeRow> {
    let id: String = row.try_get(0)?;
    let corrupt = |column: &'static str, value: &str| Error::Corrupt {
        table: "changes",
        column,
        id: id.clone(),
        source: serde::de::Error::custom(format!("unknown value `{value}`")),
    };
    let kind: String = row.try_get(4)?;
    let kind = ChangeKind::parse(&kind).ok_or_else(|| corrupt("kind", &kind))?;
    let before_state: String = row.try_get(8)?;
    let before_sha256: Option<String> = row.try_get(9)?;
    let before = match (before_state.as_str(), before_sha256) {
        ("absent", _) => Before::Absent,
        ("kept", Some(sha256)) => Before::Kept(sha256),
        ("not_kept", _) => Before::NotKept,
        ("expired", _) => Before::Expired,
        ("folder", _) => Before::Folder,
        ("none", _) => Before::Unknown,
        (other, _) => return Err(corrupt("before_state", other)),
    };
    let root: String = row.try_get(15)?;
    let root = ChangeRoot::parse(&root).ok_or_else(|| corrupt("root", &root))?;
    let state: String = row.try_get(14)?;
    let state = match state.as_str() {
        "done" => ChangeState::Done,
        "pending" => ChangeState::Pending,
        "abandoned" => ChangeState::Abandoned,
        other => return Err(corrupt("state", other)),
    };
    let path: Option<String> = row.try_get(5)?;
    let from_path: Option<String> = row.try_get(16)?;
    let reverted_by: Option<String> = row.try_get(13)?;
    let revertible = matches!(
        kind,
        ChangeKind::Created
            | ChangeKind::Overwritten
            | ChangeKind::Edited
            | ChangeKind::Moved
            | ChangeKind::Deleted
            | ChangeKind::FolderCreated
    ) && matches!(before, Before::Absent | Before::Kept(_) | Before::Folder)
        && (kind != ChangeKind::Moved || from_path.is_some())
        && reverted_by.is_none()
        && state == ChangeState::Done
        && path.is_some();
    Ok(ChangeRow {
        change: Change {
            task_id: TaskId(row.try_get(1)?),
            approval_id: row.try_get::<_, Option<String>>(2)?.map(ApprovalId),
            tool: row.try_get(3)?,
            kind,
            path,
            from_path,
            root,
            bytes: row
                .try_get::<_, Option<i64>>(6)?
                .and_then(|bytes| u64::try_from(bytes).ok()),
            at: Timestamp::from_millis(row.try_get(7)?),
            revertible,
            reverted_by: reverted_by.map(ChangeId),
            id: ChangeId(id),
        },
        before,
        before_mode: mode_from_columns(row.try_get(17)?, row.try_get(18)?, row.try_get(19)?),
        after_fingerprint: row.try_get(10)?,
        after_sha256: row.try_get(11)?,
        reverts: row.try_get::<_, Option<String>>(12)?.map(ChangeId),
        state,
    })
}

impl PgStore {
    /// Records one change (state `done`).
    pub(crate) async fn insert_change(&self, new: NewChange) -> Result<ChangeRow> {
        let now = self.now();
        insert(&self.client().await?, new, "done", now).await
    }

    /// One change, whatever its state; [`Error::NotFound`] if there is none.
    pub(crate) async fn change(&self, id: &ChangeId) -> Result<ChangeRow> {
        load(&self.client().await?, id).await
    }

    /// The task's changes, oldest first (abandoned revert intents left out).
    pub(crate) async fn task_changes(&self, task: &TaskId) -> Result<Vec<ChangeRow>> {
        self.select(
            "task_id = $1 AND state <> 'abandoned' ORDER BY ord",
            task.as_str(),
        )
        .await
    }

    /// The changes an approval's call made, oldest first.
    pub(crate) async fn approval_changes(&self, approval: &ApprovalId) -> Result<Vec<ChangeRow>> {
        self.select(
            "approval_id = $1 AND state = 'done' ORDER BY ord",
            approval.as_str(),
        )
        .await
    }

    /// The ledger's actions (and details) about an approved call, oldest first.
    pub(crate) async fn approval_ledger(
        &self,
        approval: &ApprovalId,
    ) -> Result<Vec<(pp_types::AuditAction, Option<String>)>> {
        let found = query(
            &self.client().await?,
            "SELECT action, detail FROM audit WHERE approval_id = $1 ORDER BY id",
            &[&approval.as_str()],
        )
        .await?;
        let mut ledger = Vec::with_capacity(found.len());
        for row in &found {
            let action: String = row.try_get(0)?;
            let detail: Option<String> = row.try_get(1)?;
            if let Some(action) = pp_types::AuditAction::parse(&action) {
                ledger.push((action, detail));
            }
        }
        Ok(ledger)
    }

    /// Revert intents a crash may have left (`pending`), of one task or (`None`) of all.
    pub(crate) async fn pending_reverts(&self, task: Option<&TaskId>) -> Result<Vec<ChangeRow>> {
        match task {
            Some(task) => {
                self.select(
                    "state = 'pending' AND task_id = $1 ORDER BY ord",
                    task.as_str(),
                )
                .await
            }
            None => {
                self.select("state = 'pending' AND $1::TEXT = $1::TEXT ORDER BY ord", "")
                    .await
            }
        }
    }

    async fn select(&self, condition: &str, value: &str) -> Result<Vec<ChangeRow>> {
        let found = query(
            &self.client().await?,
            &format!("SELECT {CHANGE_COLUMNS} FROM changes WHERE {condition}"),
            &[&value],
        )
        .await?;
        found.iter().map(decode).collect()
    }

    /// Records a revert's intent before its file write: a `pending` change undoing `of`,
    /// in one transaction that locks `of` and checks it is still revertible with no
    /// other revert under way. `None` when it is not.
    pub(crate) async fn begin_revert(
        &self,
        of: &ChangeId,
        new: NewChange,
    ) -> Result<Option<ChangeRow>> {
        let now = self.now();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        query_opt(
            &transaction,
            "SELECT 1 FROM changes WHERE id = $1 FOR NO KEY UPDATE",
            &[&of.as_str()],
        )
        .await?;
        let target = load(&transaction, of).await?;
        let busy: bool = query_one(
            &transaction,
            "SELECT EXISTS (SELECT 1 FROM changes WHERE reverts = $1 AND state = 'pending')",
            &[&of.as_str()],
        )
        .await?
        .try_get(0)?;
        if !target.change.revertible || busy {
            return Ok(None);
        }
        let row = insert(&transaction, new, "pending", now).await?;
        execute(
            &transaction,
            "UPDATE changes SET reverts = $2 WHERE id = $1",
            &[&row.change.id.as_str(), &of.as_str()],
        )
        .await?;
        let row = load(&transaction, &row.change.id).await?;
        transaction.commit().await?;
        Ok(Some(row))
    }

    /// Records a revert done: the intent becomes `done`, the reverted change gets
    /// `reverted_by`, and `audit` is appended, all in one transaction.
    pub(crate) async fn finish_revert(
        &self,
        revert: &ChangeId,
        after_fingerprint: Option<&str>,
        bytes: Option<u64>,
        audit: NewAudit,
    ) -> Result<ChangeRow> {
        let now = self.now();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let row = load(&transaction, revert).await?;
        execute(
            &transaction,
            "UPDATE changes SET state = 'done', after_fingerprint = $2, bytes = $3 \
             WHERE id = $1 AND state = 'pending'",
            &[&revert.as_str(), &after_fingerprint, &bytes.map(int)],
        )
        .await?;
        if let Some(of) = &row.reverts {
            execute(
                &transaction,
                "UPDATE changes SET reverted_by = $2 WHERE id = $1 AND reverted_by IS NULL",
                &[&of.as_str(), &revert.as_str()],
            )
            .await?;
        }
        let entry = NewAudit {
            task_id: Some(row.change.task_id),
            ..audit
        };
        audit::insert(&transaction, entry, now).await?;
        let done = load(&transaction, revert).await?;
        transaction.commit().await?;
        Ok(done)
    }

    /// Marks a revert intent whose write never happened `abandoned`.
    pub(crate) async fn abandon_revert(&self, revert: &ChangeId) -> Result<()> {
        execute(
            &self.client().await?,
            "UPDATE changes SET state = 'abandoned' WHERE id = $1 AND state = 'pending'",
            &[&revert.as_str()],
        )
        .await?;
        Ok(())
    }

    /// Retention of snapshots: changes recorded at or before `now - older_than` lose
    /// their kept contents. Returns how many expired and every blob hash still named.
    pub(crate) async fn expire_snapshots(
        &self,
        older_than: std::time::Duration,
    ) -> Result<(usize, HashSet<String>)> {
        let cutoff = self.now().saturating_sub(older_than).as_millis();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let expired = execute(
            &transaction,
            "UPDATE changes SET before_state = 'expired', before_sha256 = NULL \
             WHERE before_state = 'kept' AND state = 'done' AND at <= $1",
            &[&cutoff],
        )
        .await?;
        execute(
            &transaction,
            "UPDATE changes SET after_sha256 = NULL \
             WHERE after_sha256 IS NOT NULL AND state = 'done' AND at <= $1",
            &[&cutoff],
        )
        .await?;
        let referenced = query(
            &transaction,
            "SELECT before_sha256 FROM changes WHERE before_sha256 IS NOT NULL \
             UNION SELECT after_sha256 FROM changes WHERE after_sha256 IS NOT NULL",
            &[],
        )
        .await?
        .iter()
        .map(|row| row.try_get::<_, String>(0))
        .collect::<std::result::Result<HashSet<_>, _>>()?;
        transaction.commit().await?;
        Ok((count(expired), referenced))
    }
}

/// Inserts a change inside the caller's transaction.
pub(crate) async fn insert(
    db: &impl GenericClient,
    new: NewChange,
    state: &str,
    now: Timestamp,
) -> Result<ChangeRow> {
    let id = ChangeId(ids::new_id("c_", now)?);
    let (before_state, before_sha256) = before_columns(&new.before);
    let [mode, uid, gid] = mode_columns(new.before_mode.as_ref());
    execute(
        db,
        "INSERT INTO changes (id, task_id, approval_id, tool, kind, path, bytes, at, \
         before_state, before_sha256, after_fingerprint, after_sha256, state, root, \
         from_path, before_mode, before_uid, before_gid) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
         $18)",
        &[
            &id.as_str(),
            &new.task_id.as_str(),
            &new.approval_id.as_ref().map(ApprovalId::as_str),
            &new.tool,
            &new.kind.as_str(),
            &new.path,
            &new.bytes.map(int),
            &now.as_millis(),
            &before_state,
            &before_sha256,
            &new.after_fingerprint,
            &new.after_sha256,
            &state,
            &new.root.as_str(),
            &new.from_path,
            &mode,
            &uid,
            &gid,
        ],
    )
    .await?;
    load(db, &id).await
}

async fn load(db: &impl GenericClient, id: &ChangeId) -> Result<ChangeRow> {
    let row = query_opt(
        db,
        &format!("SELECT {CHANGE_COLUMNS} FROM changes WHERE id = $1"),
        &[&id.as_str()],
    )
    .await?
    .ok_or_else(|| Error::NotFound {
        what: "change",
        id: id.to_string(),
    })?;
    decode(&row)
}
