//! The change log: one row per file an approved call changed, and one per operator
//! revert (see the SQLite backend's `changes` for the two-step revert).

use std::collections::HashSet;

use deadpool_postgres::GenericClient;
use pp_types::{ApprovalId, ChangeId, NewAudit, TaskId, Timestamp};
use tokio_postgres::Row;

use super::rows;
use super::{PgStore, audit, count, execute, query, query_one, query_opt};
use crate::error::{Error, Result};
use crate::ids;
use crate::mapping::{RawChange, int, mode_columns};
use crate::types::{ChangeRow, ChangeState, NewChange};

/// The columns of [`RawChange`], in order.
const CHANGE_COLUMNS: &str = "id, task_id, approval_id, tool, kind, path, bytes, at, \
     before_state, before_sha256, after_fingerprint, after_sha256, reverts, reverted_by, state, \
     root, from_path, before_mode, before_uid, before_gid";

/// Decodes a row selected with [`CHANGE_COLUMNS`].
fn decode(row: &Row) -> Result<ChangeRow> {
    rows::raw::<RawChange>(row)?.decode()
}

impl PgStore {
    /// Records one change (state `done`).
    pub(crate) async fn insert_change(&self, new: NewChange) -> Result<ChangeRow> {
        let now = self.now();
        insert(&self.client().await?, new, ChangeState::Done, now).await
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
        let row = insert(&transaction, new, ChangeState::Pending, now).await?;
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
    state: ChangeState,
    now: Timestamp,
) -> Result<ChangeRow> {
    let id = ChangeId(ids::new_id("c_", now)?);
    let (before_state, before_sha256) = new.before.column();
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
            &state.as_str(),
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
