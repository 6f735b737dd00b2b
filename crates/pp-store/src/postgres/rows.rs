//! Reading PostgreSQL rows: the column lists of the records both backends share (in
//! the order [`crate::mapping`] reads them), and [`raw`], which reads a row in order
//! (with `try_get`, so a type mismatch is an error, never a panic).

use pp_types::{ApprovalRecord, AuditEntry, StoredEvent, TaskRecord};
use tokio_postgres::Row;
use tokio_postgres::types::FromSql;

use crate::error::Result;
use crate::mapping::{Columns, FromColumns, RawApproval, RawAudit, RawEvent, RawTask};

/// Reads a row of a query selecting a `Raw*` struct's column list.
pub(crate) fn raw<T: FromColumns>(row: &Row) -> Result<T> {
    Ok(T::read(&mut Cursor { row, next: 0 })?)
}

/// A row read column by column.
struct Cursor<'a> {
    row: &'a Row,
    next: usize,
}

impl Cursor<'_> {
    fn get<T: for<'b> FromSql<'b>>(&mut self) -> std::result::Result<T, tokio_postgres::Error> {
        let index = self.next;
        self.next += 1;
        self.row.try_get(index)
    }
}

impl Columns for Cursor<'_> {
    type Error = tokio_postgres::Error;

    fn text(&mut self) -> std::result::Result<String, Self::Error> {
        self.get()
    }

    fn text_opt(&mut self) -> std::result::Result<Option<String>, Self::Error> {
        self.get()
    }

    fn int(&mut self) -> std::result::Result<i64, Self::Error> {
        self.get()
    }

    fn int_opt(&mut self) -> std::result::Result<Option<i64>, Self::Error> {
        self.get()
    }

    fn flag(&mut self) -> std::result::Result<bool, Self::Error> {
        self.get()
    }

    fn flag_opt(&mut self) -> std::result::Result<Option<bool>, Self::Error> {
        self.get()
    }
}

/// The columns [`crate::mapping::RawTask`] reads, in order (`tasks` must be in the `FROM`).
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
    raw::<RawTask>(row)?.decode()
}

/// The columns [`crate::mapping::RawApproval`] reads, in order.
pub(crate) const APPROVAL_COLUMNS: &str = "id, task_id, state, tool, capability, risk, \
     label, target, arguments, fingerprint, checkpoint, created_at, resolved_at, \
     resolved_by, reason, edited_arguments, revertible, resolved_by_user, edited_preview, \
     call_id, changeset_id, resolved_via";

/// Decodes a row selected with [`APPROVAL_COLUMNS`].
pub(crate) fn approval(row: &Row) -> Result<ApprovalRecord> {
    raw::<RawApproval>(row)?.decode()
}

/// The columns [`crate::mapping::RawEvent`] reads, in order.
pub(crate) const EVENT_COLUMNS: &str = "seq, task_id, at, payload";

/// Decodes a row selected with [`EVENT_COLUMNS`].
pub(crate) fn event(row: &Row) -> Result<StoredEvent> {
    raw::<RawEvent>(row)?.decode()
}

/// The columns [`crate::mapping::RawAudit`] reads, in order.
pub(crate) const AUDIT_COLUMNS: &str = "id, at, actor, action, task_id, approval_id, tool, \
     target, arguments_hash, detail, user_name, via";

/// Decodes a row selected with [`AUDIT_COLUMNS`].
pub(crate) fn audit(row: &Row) -> Result<AuditEntry> {
    raw::<RawAudit>(row)?.decode()
}

/// Decodes every row with `decode`.
pub(crate) fn all<T>(rows: &[Row], decode: impl Fn(&Row) -> Result<T>) -> Result<Vec<T>> {
    rows.iter().map(decode).collect()
}
