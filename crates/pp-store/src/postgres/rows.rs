//! Turning PostgreSQL rows into records, with the same decoding (and the same
//! [`Error::Corrupt`] for a row that does not decode) as the SQLite backend's rows.
//!
//! Columns are read with `try_get`, so a type mismatch is an error, never a panic.

use pp_types::{
    ApprovalId, ApprovalRecord, AuditEntry, Cost, StoredEvent, TaskId, TaskRecord, TaskUsage,
    Timestamp,
};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_postgres::Row;

use crate::sqlite::rows::decode_name;
use crate::{Error, Result};

/// The corrupt-row error for `table`'s `column` of row `id`.
pub(crate) fn corrupt(
    table: &'static str,
    column: &'static str,
    id: &str,
    source: serde_json::Error,
) -> Error {
    Error::Corrupt {
        table,
        column,
        id: id.to_owned(),
        source,
    }
}

/// A JSON column.
pub(crate) fn json<T: DeserializeOwned>(
    table: &'static str,
    column: &'static str,
    id: &str,
    text: &str,
) -> Result<T> {
    serde_json::from_str(text).map_err(|source| corrupt(table, column, id, source))
}

/// A nullable JSON column.
fn json_opt<T: DeserializeOwned>(
    table: &'static str,
    column: &'static str,
    id: &str,
    text: Option<&str>,
) -> Result<Option<T>> {
    text.map(|text| json(table, column, id, text)).transpose()
}

/// A nullable snake-case enum column.
fn name_opt<T: DeserializeOwned>(
    table: &'static str,
    column: &'static str,
    id: &str,
    text: Option<String>,
) -> Result<Option<T>> {
    text.map(|text| decode_name(table, column, id, text))
        .transpose()
}

/// A non-negative integer column (the schema's CHECKs keep it so).
fn count(table: &'static str, column: &'static str, id: &str, value: i64) -> Result<u64> {
    serde_json::from_value(Value::from(value)).map_err(|source| corrupt(table, column, id, source))
}

/// The columns [`task`] reads, in order (`tasks` must be in the `FROM`).
pub(crate) const TASK_COLUMNS: &str = "tasks.id, tasks.prompt, tasks.workspace, \
     tasks.workspace_path, tasks.state, tasks.created_by, tasks.script, \
     tasks.script_position, tasks.running_ms, tasks.final_text, tasks.failure_reason, \
     tasks.error, tasks.created_at, tasks.updated_at, tasks.finished_at, tasks.origin, \
     (SELECT string_agg(kind, ',') FROM changes \
      WHERE changes.task_id = tasks.id AND changes.state = 'done'), \
     (SELECT json_build_array(COUNT(*), \
      COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0), \
      COALESCE(SUM(cached_tokens), 0), COALESCE(SUM(reasoning_tokens), 0), COUNT(cost), \
      COALESCE(SUM(cost), 0), MIN(currency), MAX(currency))::TEXT \
      FROM model_calls WHERE model_calls.task_id = tasks.id), \
     tasks.created_by_user";

/// How many columns [`TASK_COLUMNS`] has (a query selecting more reads them after).
pub(crate) const TASK_COLUMN_COUNT: usize = 19;

/// Decodes a row selected with [`TASK_COLUMNS`].
pub(crate) fn task(row: &Row) -> Result<TaskRecord> {
    const T: &str = "tasks";
    let id: String = row.try_get(0)?;
    let script: Option<String> = row.try_get(6)?;
    let change_kinds: Option<String> = row.try_get(16)?;
    let usage: Option<String> = row.try_get(17)?;
    Ok(TaskRecord {
        prompt: row.try_get(1)?,
        workspace: row.try_get(2)?,
        workspace_path: row.try_get(3)?,
        state: decode_name(T, "state", &id, row.try_get(4)?)?,
        created_by: decode_name(T, "created_by", &id, row.try_get(5)?)?,
        script: json_opt(T, "script", &id, script.as_deref())?,
        script_position: count(T, "script_position", &id, row.try_get(7)?)?,
        running_ms: count(T, "running_ms", &id, row.try_get(8)?)?,
        final_text: row.try_get(9)?,
        failure_reason: name_opt(T, "failure_reason", &id, row.try_get(10)?)?,
        error: row.try_get(11)?,
        created_at: Timestamp::from_millis(row.try_get(12)?),
        updated_at: Timestamp::from_millis(row.try_get(13)?),
        finished_at: row
            .try_get::<_, Option<i64>>(14)?
            .map(Timestamp::from_millis),
        origin: row.try_get(15)?,
        changes: change_counts(change_kinds.as_deref()),
        usage: task_usage(usage.as_deref()),
        created_by_user: row.try_get(18)?,
        id: TaskId(id),
    })
}

/// Counts the comma-separated change kinds (an unknown kind, which the schema's CHECK
/// rules out, is not counted).
fn change_counts(kinds: Option<&str>) -> pp_types::ChangeCounts {
    let mut counts = pp_types::ChangeCounts::default();
    for kind in kinds.unwrap_or_default().split(',') {
        if let Some(kind) = pp_types::ChangeKind::parse(kind) {
            counts.add(kind);
        }
    }
    counts
}

/// Decodes the last column of [`TASK_COLUMNS`]: `[calls, prompt, completion, cached,
/// reasoning, priced calls, cost, min currency, max currency]`. A cost is given only
/// when every call had a price in one currency (as on SQLite).
fn task_usage(text: Option<&str>) -> TaskUsage {
    let Some(values) = text.and_then(|text| serde_json::from_str::<Vec<Value>>(text).ok()) else {
        return TaskUsage::default();
    };
    let count = |index: usize| values.get(index).and_then(Value::as_u64).unwrap_or(0);
    let text = |index: usize| values.get(index).and_then(Value::as_str);
    let (calls, prompt, completion) = (count(0), count(1), count(2));
    let cost = match (text(7), text(8)) {
        (Some(low), Some(high)) if calls > 0 && count(5) == calls && low == high => {
            values.get(6).and_then(Value::as_f64).map(|amount| Cost {
                amount,
                currency: low.to_owned(),
            })
        }
        _ => None,
    };
    TaskUsage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        cached_tokens: count(3),
        reasoning_tokens: count(4),
        total_tokens: prompt.saturating_add(completion),
        model_calls: calls,
        cost,
    }
}

/// The columns [`approval`] reads, in order.
pub(crate) const APPROVAL_COLUMNS: &str = "id, task_id, state, tool, capability, risk, \
     label, target, arguments, fingerprint, checkpoint, created_at, resolved_at, \
     resolved_by, reason, edited_arguments, revertible, resolved_by_user";

/// Decodes a row selected with [`APPROVAL_COLUMNS`].
pub(crate) fn approval(row: &Row) -> Result<ApprovalRecord> {
    const A: &str = "approvals";
    let id: String = row.try_get(0)?;
    let arguments: String = row.try_get(8)?;
    let checkpoint: String = row.try_get(10)?;
    let edited: Option<String> = row.try_get(15)?;
    Ok(ApprovalRecord {
        task_id: TaskId(row.try_get(1)?),
        state: decode_name(A, "state", &id, row.try_get(2)?)?,
        tool: row.try_get(3)?,
        capability: row.try_get(4)?,
        risk: decode_name(A, "risk", &id, row.try_get(5)?)?,
        label: name_opt(A, "label", &id, row.try_get(6)?)?,
        target: row.try_get(7)?,
        arguments: json(A, "arguments", &id, &arguments)?,
        fingerprint: row.try_get(9)?,
        checkpoint: json(A, "checkpoint", &id, &checkpoint)?,
        created_at: Timestamp::from_millis(row.try_get(11)?),
        resolved_at: row
            .try_get::<_, Option<i64>>(12)?
            .map(Timestamp::from_millis),
        resolved_by: name_opt(A, "resolved_by", &id, row.try_get(13)?)?,
        reason: row.try_get(14)?,
        edited_arguments: json_opt(A, "edited_arguments", &id, edited.as_deref())?,
        revertible: row.try_get(16)?,
        resolved_by_user: row.try_get(17)?,
        id: ApprovalId(id),
    })
}

/// The columns [`event`] reads, in order.
pub(crate) const EVENT_COLUMNS: &str = "seq, task_id, at, payload";

/// Decodes a row selected with [`EVENT_COLUMNS`].
pub(crate) fn event(row: &Row) -> Result<StoredEvent> {
    let seq: i64 = row.try_get(0)?;
    let payload: String = row.try_get(3)?;
    Ok(StoredEvent {
        seq,
        task_id: TaskId(row.try_get(1)?),
        at: Timestamp::from_millis(row.try_get(2)?),
        event: json("events", "payload", &seq.to_string(), &payload)?,
    })
}

/// The columns [`audit`] reads, in order.
pub(crate) const AUDIT_COLUMNS: &str = "id, at, actor, action, task_id, approval_id, tool, \
     target, arguments_hash, detail, user_name";

/// Decodes a row selected with [`AUDIT_COLUMNS`].
pub(crate) fn audit(row: &Row) -> Result<AuditEntry> {
    let id: i64 = row.try_get(0)?;
    let shown = id.to_string();
    Ok(AuditEntry {
        id,
        at: Timestamp::from_millis(row.try_get(1)?),
        actor: decode_name("audit", "actor", &shown, row.try_get(2)?)?,
        action: decode_name("audit", "action", &shown, row.try_get(3)?)?,
        task_id: row.try_get::<_, Option<String>>(4)?.map(TaskId),
        approval_id: row.try_get::<_, Option<String>>(5)?.map(ApprovalId),
        tool: row.try_get(6)?,
        target: row.try_get(7)?,
        arguments_hash: row.try_get(8)?,
        detail: row.try_get(9)?,
        user: row.try_get(10)?,
    })
}

/// Decodes every row with `decode`.
pub(crate) fn all<T>(rows: &[Row], decode: impl Fn(&Row) -> Result<T>) -> Result<Vec<T>> {
    rows.iter().map(decode).collect()
}
