//! The audit ledger: append-only rows of side effects and decisions.

use pp_types::{Actor, AuditEntry, NewAudit, Timestamp};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, params, params_from_iter};

use super::SqliteStore as Store;
use super::rows::{self, AUDIT_COLUMNS};
use crate::error::Result;
use crate::mapping::{self, RawAudit, inserted};
use crate::types::AuditFilter;

impl Store {
    /// Appends one row (`actor: None` means the operator).
    pub(crate) fn append_audit(&self, entry: NewAudit) -> Result<AuditEntry> {
        let now = self.now();
        self.write(|transaction| insert(transaction, entry, now))
    }

    /// The rows matching `filter`, newest first.
    pub(crate) fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>> {
        let mut conditions = Vec::new();
        let mut values = Vec::new();
        if let Some(actor) = filter.actor {
            conditions.push("actor = ?");
            values.push(SqlValue::Text(actor.as_str().to_owned()));
        }
        if let Some(task) = &filter.task_id {
            conditions.push("task_id = ?");
            values.push(SqlValue::Text(task.to_string()));
        }
        if let Some(action) = &filter.action {
            conditions.push("action = ?");
            values.push(SqlValue::Text(action.clone()));
        }
        let excluded = vec!["?"; filter.exclude.len()].join(", ");
        let exclude_sql = format!("action NOT IN ({excluded})");
        if !filter.exclude.is_empty() {
            conditions.push(&exclude_sql);
            for action in &filter.exclude {
                values.push(SqlValue::Text(action.as_str().to_owned()));
            }
        }
        if let Some(before) = filter.before_id {
            conditions.push("id < ?");
            values.push(SqlValue::Integer(before));
        }
        let filter_sql = if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conditions.join(" AND "))
        };
        values.push(SqlValue::Integer(mapping::limit(filter.limit)));
        self.read(|connection| {
            let raw = connection
                .prepare_cached(&format!(
                    "SELECT {AUDIT_COLUMNS} FROM audit {filter_sql} ORDER BY id DESC LIMIT ?"
                ))?
                .query_map(params_from_iter(values), rows::raw::<RawAudit>)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            raw.into_iter().map(RawAudit::decode).collect()
        })
    }
}

/// Appends one row inside the caller's transaction.
pub(crate) fn insert(
    connection: &Connection,
    entry: NewAudit,
    at: Timestamp,
) -> Result<AuditEntry> {
    let actor = entry.actor.unwrap_or(Actor::Operator);
    connection
        .prepare_cached(
            "INSERT INTO audit (at, actor, action, task_id, approval_id, tool, target, \
             arguments_hash, detail, user_name, via) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )?
        .execute(params![
            at.as_millis(),
            actor.as_str(),
            entry.action.as_str(),
            entry.task_id.as_ref().map(|id| id.as_str()),
            entry.approval_id.as_ref().map(|id| id.as_str()),
            entry.tool,
            entry.target,
            entry.arguments_hash,
            entry.detail,
            entry.user,
            entry.via.map(|via| via.as_str()),
        ])?;
    Ok(inserted::audit(
        connection.last_insert_rowid(),
        entry,
        at,
        actor,
    ))
}
