//! The audit ledger: append-only rows of side effects and decisions.

use deadpool_postgres::GenericClient;
use pp_types::{Actor, AuditEntry, NewAudit, Timestamp};
use tokio_postgres::types::ToSql;

use super::rows::{self, AUDIT_COLUMNS};
use super::{PgStore, query, query_one};
use crate::error::Result;
use crate::mapping::{inserted, limit as row_limit};
use crate::types::AuditFilter;

impl PgStore {
    /// Appends one row (`actor: None` means the operator).
    pub(crate) async fn append_audit(&self, entry: NewAudit) -> Result<AuditEntry> {
        let now = self.now();
        insert(&self.client().await?, entry, now).await
    }

    /// The rows matching `filter`, newest first.
    pub(crate) async fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>> {
        let actor = filter.actor.map(Actor::as_str);
        let task = filter.task_id.as_ref().map(|id| id.as_str());
        let excluded: Vec<&str> = filter
            .exclude
            .iter()
            .map(|action| action.as_str())
            .collect();
        let limit = row_limit(filter.limit);
        let mut conditions = Vec::new();
        let mut values: Vec<&(dyn ToSql + Sync)> = Vec::new();
        if let Some(actor) = &actor {
            values.push(actor);
            conditions.push(format!("actor = ${}", values.len()));
        }
        if let Some(task) = &task {
            values.push(task);
            conditions.push(format!("task_id = ${}", values.len()));
        }
        if let Some(action) = &filter.action {
            values.push(action);
            conditions.push(format!("action = ${}", values.len()));
        }
        if !excluded.is_empty() {
            values.push(&excluded);
            conditions.push(format!("action <> ALL(${})", values.len()));
        }
        if let Some(before) = &filter.before_id {
            values.push(before);
            conditions.push(format!("id < ${}", values.len()));
        }
        let filter_sql = if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conditions.join(" AND "))
        };
        values.push(&limit);
        let sql = format!(
            "SELECT {AUDIT_COLUMNS} FROM audit {filter_sql} ORDER BY id DESC LIMIT ${}",
            values.len()
        );
        let found = query(&self.client().await?, &sql, &values).await?;
        rows::all(&found, rows::audit)
    }
}

/// Appends one row inside the caller's transaction.
pub(crate) async fn insert(
    db: &impl GenericClient,
    entry: NewAudit,
    at: Timestamp,
) -> Result<AuditEntry> {
    let actor = entry.actor.unwrap_or(Actor::Operator);
    let row = query_one(
        db,
        "INSERT INTO audit (at, actor, action, task_id, approval_id, tool, target, \
         arguments_hash, detail, user_name, via) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id",
        &[
            &at.as_millis(),
            &actor.as_str(),
            &entry.action.as_str(),
            &entry.task_id.as_ref().map(|id| id.as_str()),
            &entry.approval_id.as_ref().map(|id| id.as_str()),
            &entry.tool,
            &entry.target,
            &entry.arguments_hash,
            &entry.detail,
            &entry.user,
            &entry.via.map(|via| via.as_str()),
        ],
    )
    .await?;
    Ok(inserted::audit(row.try_get(0)?, entry, at, actor))
}
