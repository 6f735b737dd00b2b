//! Turning rows into records and values into columns.
//!
//! Rows are first read into plain `Raw*` structs (strings and integers: this cannot fail
//! short of SQLite itself failing) and then decoded, so a row that does not decode
//! becomes [`Error::Corrupt`] naming the table, column and row, never a panic.

use pp_types::{
    ApprovalId, ApprovalRecord, AuditEntry, Event, StoredEvent, TaskId, TaskRecord, Timestamp,
};
use rusqlite::Row;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Error, Result};

/// One snake-case enum column of `table`'s row `id`, decoded as [`Decoder`] does (for
/// row types outside this module).
pub(crate) fn decode_name<T: DeserializeOwned>(
    table: &'static str,
    column: &'static str,
    id: &str,
    text: String,
) -> Result<T> {
    Decoder { table, id }.name(column, text)
}

/// One JSON column of `table`'s row `id`, decoded as [`Decoder`] does (for row types
/// outside this module).
pub(crate) fn decode_json<T: DeserializeOwned>(
    table: &'static str,
    column: &'static str,
    id: &str,
    text: &str,
) -> Result<T> {
    Decoder { table, id }.json(column, text)
}

/// Decodes the columns of one row, naming it in errors.
struct Decoder<'a> {
    table: &'static str,
    id: &'a str,
}

impl Decoder<'_> {
    fn corrupt(&self, column: &'static str, source: serde_json::Error) -> Error {
        Error::Corrupt {
            table: self.table,
            column,
            id: self.id.to_owned(),
            source,
        }
    }

    /// A JSON column.
    fn json<T: DeserializeOwned>(&self, column: &'static str, text: &str) -> Result<T> {
        serde_json::from_str(text).map_err(|source| self.corrupt(column, source))
    }

    /// A nullable JSON column.
    fn json_opt<T: DeserializeOwned>(
        &self,
        column: &'static str,
        text: Option<&str>,
    ) -> Result<Option<T>> {
        text.map(|text| self.json(column, text)).transpose()
    }

    /// A snake-case enum column (`running`, `operator`, `high`, …), decoded with the same
    /// serde names the wire uses.
    fn name<T: DeserializeOwned>(&self, column: &'static str, text: String) -> Result<T> {
        serde_json::from_value(Value::String(text)).map_err(|source| self.corrupt(column, source))
    }

    /// A nullable snake-case enum column.
    fn name_opt<T: DeserializeOwned>(
        &self,
        column: &'static str,
        text: Option<String>,
    ) -> Result<Option<T>> {
        text.map(|text| self.name(column, text)).transpose()
    }

    /// A non-negative integer column (the schema's CHECKs keep it so).
    fn count(&self, column: &'static str, value: i64) -> Result<u64> {
        serde_json::from_value(Value::from(value)).map_err(|source| self.corrupt(column, source))
    }
}

/// JSON text for a column.
pub(crate) fn encode<T: Serialize + ?Sized>(what: &'static str, value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|source| Error::Encode { what, source })
}

/// A nullable JSON column.
pub(crate) fn encode_opt<T: Serialize>(
    what: &'static str,
    value: Option<&T>,
) -> Result<Option<String>> {
    value.map(|value| encode(what, value)).transpose()
}

/// The snake-case name of an enum, as its serde form (`"high"` → `high`).
pub(crate) fn name_of<T: Serialize>(what: &'static str, value: &T) -> Result<String> {
    match serde_json::to_value(value).map_err(|source| Error::Encode { what, source })? {
        Value::String(name) => Ok(name),
        other => Ok(other.to_string()),
    }
}

/// `usize` limits as SQLite integers.
pub(crate) fn limit(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// `u64` counters as SQLite integers.
pub(crate) fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The columns [`RawTask::from_row`] reads, in order.
pub(crate) const TASK_COLUMNS: &str = "id, prompt, workspace, workspace_path, state, \
     created_by, script, script_position, running_ms, final_text, failure_reason, error, \
     created_at, updated_at, finished_at, origin, \
     (SELECT group_concat(kind) FROM changes \
      WHERE changes.task_id = tasks.id AND changes.state = 'done'), \
     (SELECT json_array(COUNT(*), \
      COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0), \
      COALESCE(SUM(cached_tokens), 0), COALESCE(SUM(reasoning_tokens), 0), COUNT(cost), \
      TOTAL(cost), MIN(currency), MAX(currency)) \
      FROM model_calls WHERE model_calls.task_id = tasks.id), \
     created_by_user";

/// How many columns [`TASK_COLUMNS`] has (a query selecting more reads them after).
pub(crate) const TASK_COLUMN_COUNT: usize = 19;

/// A `tasks` row before decoding.
pub(crate) struct RawTask {
    id: String,
    prompt: String,
    workspace: String,
    workspace_path: String,
    state: String,
    created_by: String,
    script: Option<String>,
    script_position: i64,
    running_ms: i64,
    final_text: Option<String>,
    failure_reason: Option<String>,
    error: Option<String>,
    created_at: i64,
    updated_at: i64,
    finished_at: Option<i64>,
    origin: Option<String>,
    /// The kinds of the task's changes, comma-separated (`NULL`: none).
    change_kinds: Option<String>,
    /// The task's model calls summed up (see `model_calls::task_usage`).
    usage: Option<String>,
    created_by_user: Option<String>,
}

impl RawTask {
    /// Reads a row selected with [`TASK_COLUMNS`].
    pub(crate) fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            prompt: row.get(1)?,
            workspace: row.get(2)?,
            workspace_path: row.get(3)?,
            state: row.get(4)?,
            created_by: row.get(5)?,
            script: row.get(6)?,
            script_position: row.get(7)?,
            running_ms: row.get(8)?,
            final_text: row.get(9)?,
            failure_reason: row.get(10)?,
            error: row.get(11)?,
            created_at: row.get(12)?,
            updated_at: row.get(13)?,
            finished_at: row.get(14)?,
            origin: row.get(15)?,
            change_kinds: row.get(16)?,
            usage: row.get(17)?,
            created_by_user: row.get(18)?,
        })
    }

    /// Decodes the row.
    pub(crate) fn decode(self) -> Result<TaskRecord> {
        let decoder = Decoder {
            table: "tasks",
            id: &self.id,
        };
        let state = decoder.name("state", self.state)?;
        let created_by = decoder.name("created_by", self.created_by)?;
        let script = decoder.json_opt("script", self.script.as_deref())?;
        let script_position = decoder.count("script_position", self.script_position)?;
        let running_ms = decoder.count("running_ms", self.running_ms)?;
        let failure_reason = decoder.name_opt("failure_reason", self.failure_reason)?;
        Ok(TaskRecord {
            id: TaskId(self.id),
            prompt: self.prompt,
            workspace: self.workspace,
            workspace_path: self.workspace_path,
            state,
            created_by,
            origin: self.origin,
            created_by_user: self.created_by_user,
            script,
            script_position,
            running_ms,
            final_text: self.final_text,
            failure_reason,
            error: self.error,
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
            finished_at: self.finished_at.map(Timestamp::from_millis),
            changes: change_counts(self.change_kinds.as_deref()),
            usage: super::model_calls::task_usage(self.usage.as_deref()),
        })
    }
}

/// Counts the comma-separated change kinds of [`TASK_COLUMNS`]' last column (an
/// unknown kind, which the schema's CHECK rules out, is not counted).
fn change_counts(kinds: Option<&str>) -> pp_types::ChangeCounts {
    let mut counts = pp_types::ChangeCounts::default();
    for kind in kinds.unwrap_or_default().split(',') {
        if let Some(kind) = pp_types::ChangeKind::parse(kind) {
            counts.add(kind);
        }
    }
    counts
}

/// The columns [`RawApproval::from_row`] reads, in order.
pub(crate) const APPROVAL_COLUMNS: &str = "id, task_id, state, tool, capability, risk, \
     label, target, arguments, fingerprint, checkpoint, created_at, resolved_at, \
     resolved_by, reason, edited_arguments, revertible, resolved_by_user";

/// An `approvals` row before decoding.
pub(crate) struct RawApproval {
    id: String,
    task_id: String,
    state: String,
    tool: String,
    capability: String,
    risk: String,
    label: Option<String>,
    target: Option<String>,
    arguments: String,
    fingerprint: Option<String>,
    checkpoint: String,
    created_at: i64,
    resolved_at: Option<i64>,
    resolved_by: Option<String>,
    reason: Option<String>,
    edited_arguments: Option<String>,
    revertible: Option<bool>,
    resolved_by_user: Option<String>,
}

impl RawApproval {
    /// Reads a row selected with [`APPROVAL_COLUMNS`].
    pub(crate) fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            task_id: row.get(1)?,
            state: row.get(2)?,
            tool: row.get(3)?,
            capability: row.get(4)?,
            risk: row.get(5)?,
            label: row.get(6)?,
            target: row.get(7)?,
            arguments: row.get(8)?,
            fingerprint: row.get(9)?,
            checkpoint: row.get(10)?,
            created_at: row.get(11)?,
            resolved_at: row.get(12)?,
            resolved_by: row.get(13)?,
            reason: row.get(14)?,
            edited_arguments: row.get(15)?,
            revertible: row.get(16)?,
            resolved_by_user: row.get(17)?,
        })
    }

    /// Decodes the row.
    pub(crate) fn decode(self) -> Result<ApprovalRecord> {
        let decoder = Decoder {
            table: "approvals",
            id: &self.id,
        };
        let state = decoder.name("state", self.state)?;
        let risk = decoder.name("risk", self.risk)?;
        let label = decoder.name_opt("label", self.label)?;
        let arguments = decoder.json("arguments", &self.arguments)?;
        let checkpoint = decoder.json("checkpoint", &self.checkpoint)?;
        let resolved_by = decoder.name_opt("resolved_by", self.resolved_by)?;
        let edited_arguments =
            decoder.json_opt("edited_arguments", self.edited_arguments.as_deref())?;
        Ok(ApprovalRecord {
            id: ApprovalId(self.id),
            task_id: TaskId(self.task_id),
            state,
            tool: self.tool,
            capability: self.capability,
            risk,
            label,
            target: self.target,
            arguments,
            fingerprint: self.fingerprint,
            checkpoint,
            created_at: Timestamp::from_millis(self.created_at),
            resolved_at: self.resolved_at.map(Timestamp::from_millis),
            resolved_by,
            resolved_by_user: self.resolved_by_user,
            reason: self.reason,
            edited_arguments,
            revertible: self.revertible,
        })
    }
}

/// The columns [`RawEvent::from_row`] reads, in order.
pub(crate) const EVENT_COLUMNS: &str = "seq, task_id, at, payload";

/// An `events` row before decoding.
pub(crate) struct RawEvent {
    seq: i64,
    task_id: String,
    at: i64,
    payload: String,
}

impl RawEvent {
    /// Reads a row selected with [`EVENT_COLUMNS`].
    pub(crate) fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            seq: row.get(0)?,
            task_id: row.get(1)?,
            at: row.get(2)?,
            payload: row.get(3)?,
        })
    }

    /// Decodes the row.
    pub(crate) fn decode(self) -> Result<StoredEvent> {
        let id = self.seq.to_string();
        let decoder = Decoder {
            table: "events",
            id: &id,
        };
        let event: Event = decoder.json("payload", &self.payload)?;
        Ok(StoredEvent {
            seq: self.seq,
            task_id: TaskId(self.task_id),
            at: Timestamp::from_millis(self.at),
            event,
        })
    }
}

/// The columns [`RawAudit::from_row`] reads, in order.
pub(crate) const AUDIT_COLUMNS: &str = "id, at, actor, action, task_id, approval_id, tool, target, arguments_hash, detail, \
     user_name";

/// An `audit` row before decoding.
pub(crate) struct RawAudit {
    id: i64,
    at: i64,
    actor: String,
    action: String,
    task_id: Option<String>,
    approval_id: Option<String>,
    tool: Option<String>,
    target: Option<String>,
    arguments_hash: Option<String>,
    detail: Option<String>,
    user: Option<String>,
}

impl RawAudit {
    /// Reads a row selected with [`AUDIT_COLUMNS`].
    pub(crate) fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            at: row.get(1)?,
            actor: row.get(2)?,
            action: row.get(3)?,
            task_id: row.get(4)?,
            approval_id: row.get(5)?,
            tool: row.get(6)?,
            target: row.get(7)?,
            arguments_hash: row.get(8)?,
            detail: row.get(9)?,
            user: row.get(10)?,
        })
    }

    /// Decodes the row.
    pub(crate) fn decode(self) -> Result<AuditEntry> {
        let id = self.id.to_string();
        let decoder = Decoder {
            table: "audit",
            id: &id,
        };
        Ok(AuditEntry {
            id: self.id,
            at: Timestamp::from_millis(self.at),
            actor: decoder.name("actor", self.actor)?,
            action: decoder.name("action", self.action)?,
            task_id: self.task_id.map(TaskId),
            approval_id: self.approval_id.map(ApprovalId),
            tool: self.tool,
            target: self.target,
            arguments_hash: self.arguments_hash,
            detail: self.detail,
            user: self.user,
        })
    }
}
