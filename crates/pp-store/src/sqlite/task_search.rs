//! Finding tasks: a prompt substring, a state, a workspace, who started them, and paging
//! backwards.

use pp_types::TaskRecord;
use rusqlite::params_from_iter;
use rusqlite::types::Value as SqlValue;

use super::SqliteStore as Store;
use super::rows::{self, TASK_COLUMNS};
use crate::error::Result;
use crate::mapping::{self, RawTask};
use crate::types::TaskFilter;

/// `text` as a `LIKE … ESCAPE '\'` pattern matching it anywhere, with the wildcards
/// `%` and `_` (and the escape character itself) taken literally.
fn contains_pattern(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for character in text.chars() {
        if matches!(character, '\\' | '%' | '_') {
            pattern.push('\\');
        }
        pattern.push(character);
    }
    pattern.push('%');
    pattern
}

impl Store {
    /// The tasks matching `filter`, newest first (in the order they were stored).
    pub(crate) fn search_tasks(&self, filter: &TaskFilter) -> Result<Vec<TaskRecord>> {
        let mut conditions = Vec::new();
        let mut values = Vec::new();
        if let Some(query) = &filter.query {
            conditions.push("prompt LIKE ? ESCAPE '\\'");
            values.push(SqlValue::Text(contains_pattern(query)));
        }
        if let Some(state) = filter.state {
            conditions.push("state = ?");
            values.push(SqlValue::Text(state.as_str().to_owned()));
        }
        if let Some(workspace) = &filter.workspace {
            conditions.push("workspace = ?");
            values.push(SqlValue::Text(workspace.clone()));
        }
        if let Some(actor) = filter.created_by {
            conditions.push("created_by = ?");
            values.push(SqlValue::Text(actor.as_str().to_owned()));
        }
        if let Some(before) = &filter.before {
            // The list is ordered by rowid; a stored `before` is found by its id, a
            // pruned one by the first stored id that sorts after it.
            conditions.push(
                "rowid < COALESCE((SELECT rowid FROM tasks WHERE id = ?), \
                 (SELECT MIN(rowid) FROM tasks WHERE id > ?), \
                 (SELECT MAX(rowid) + 1 FROM tasks))",
            );
            values.push(SqlValue::Text(before.to_string()));
            values.push(SqlValue::Text(before.to_string()));
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
                    "SELECT {TASK_COLUMNS} FROM tasks {filter_sql} ORDER BY rowid DESC LIMIT ?"
                ))?
                .query_map(params_from_iter(values), rows::raw::<RawTask>)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            raw.into_iter().map(RawTask::decode).collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_are_escaped() {
        assert_eq!(contains_pattern("50%_off"), "%50\\%\\_off%");
        assert_eq!(contains_pattern("a\\b"), "%a\\\\b%");
        assert_eq!(contains_pattern(""), "%%");
    }
}
