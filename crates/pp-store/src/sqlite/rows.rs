//! Reading SQLite rows: the column lists of the records both backends share (in the
//! order [`crate::mapping`] reads them) and [`Cursor`], which reads a row in order.

use rusqlite::Row;

use crate::mapping::{Columns, FromColumns};

/// Reads a row of a query selecting a `Raw*` struct's column list (for `query_map`).
pub(crate) fn raw<T: FromColumns>(row: &Row<'_>) -> rusqlite::Result<T> {
    T::read(&mut Cursor { row, next: 0 })
}

/// A row read column by column.
struct Cursor<'a, 'b> {
    row: &'a Row<'b>,
    next: usize,
}

impl Cursor<'_, '_> {
    fn get<T: rusqlite::types::FromSql>(&mut self) -> rusqlite::Result<T> {
        let value = self.row.get(self.next)?;
        self.next += 1;
        Ok(value)
    }
}

impl Columns for Cursor<'_, '_> {
    type Error = rusqlite::Error;

    fn text(&mut self) -> rusqlite::Result<String> {
        self.get()
    }

    fn text_opt(&mut self) -> rusqlite::Result<Option<String>> {
        self.get()
    }

    fn int(&mut self) -> rusqlite::Result<i64> {
        self.get()
    }

    fn int_opt(&mut self) -> rusqlite::Result<Option<i64>> {
        self.get()
    }

    fn flag(&mut self) -> rusqlite::Result<bool> {
        self.get()
    }

    fn flag_opt(&mut self) -> rusqlite::Result<Option<bool>> {
        self.get()
    }
}

/// The columns [`crate::mapping::RawTask`] reads, in order.
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

/// The columns [`crate::mapping::RawApproval`] reads, in order.
pub(crate) const APPROVAL_COLUMNS: &str = "id, task_id, state, tool, capability, risk, \
     label, target, arguments, fingerprint, checkpoint, created_at, resolved_at, \
     resolved_by, reason, edited_arguments, revertible, resolved_by_user, edited_preview, \
     call_id, changeset_id, resolved_via";

/// The columns [`crate::mapping::RawEvent`] reads, in order.
pub(crate) const EVENT_COLUMNS: &str = "seq, task_id, at, payload";

/// The columns [`crate::mapping::RawAudit`] reads, in order.
pub(crate) const AUDIT_COLUMNS: &str = "id, at, actor, action, task_id, approval_id, tool, target, arguments_hash, detail, \
     user_name, via";
