//! Finding tasks: a prompt substring, a state, a workspace, who started them, and paging
//! backwards.

use tokio_postgres::types::ToSql;

use super::rows::{self, TASK_COLUMNS};
use super::{PgStore, query};
use crate::error::Result;
use crate::mapping::limit as row_limit;
use crate::types::TaskFilter;

/// ASCII upper-case letters and their lower-case forms, for `translate`: prompts match
/// case-insensitively for ASCII letters only, as SQLite's `LIKE` does.
const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";

/// `text` as a `LIKE … ESCAPE '\'` pattern matching it anywhere (ASCII lower-cased),
/// with `%`, `_` and the escape character itself taken literally.
fn contains_pattern(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for character in text.chars() {
        if matches!(character, '\\' | '%' | '_') {
            pattern.push('\\');
        }
        pattern.push(character.to_ascii_lowercase());
    }
    pattern.push('%');
    pattern
}

impl PgStore {
    /// The tasks matching `filter`, newest first (in the order they were stored).
    pub(crate) async fn search_tasks(
        &self,
        filter: &TaskFilter,
    ) -> Result<Vec<pp_types::TaskRecord>> {
        let pattern = filter.query.as_deref().map(contains_pattern);
        let state = filter.state.map(pp_types::TaskState::as_str);
        let actor = filter.created_by.map(pp_types::Actor::as_str);
        let before = filter.before.as_ref().map(|id| id.as_str());
        let limit = row_limit(filter.limit);
        let mut conditions = Vec::new();
        let mut values: Vec<&(dyn ToSql + Sync)> = Vec::new();
        if let Some(pattern) = &pattern {
            values.push(pattern);
            conditions.push(format!(
                "translate(tasks.prompt, '{UPPER}', '{LOWER}') LIKE ${} ESCAPE '\\'",
                values.len()
            ));
        }
        if let Some(state) = &state {
            values.push(state);
            conditions.push(format!("tasks.state = ${}", values.len()));
        }
        if let Some(workspace) = &filter.workspace {
            values.push(workspace);
            conditions.push(format!("tasks.workspace = ${}", values.len()));
        }
        if let Some(actor) = &actor {
            values.push(actor);
            conditions.push(format!("tasks.created_by = ${}", values.len()));
        }
        if let Some(before) = &before {
            // The list is ordered by `ord`; a stored `before` is found by its id, a
            // pruned one by the first stored id that sorts after it.
            values.push(before);
            let at = values.len();
            conditions.push(format!(
                "tasks.ord < COALESCE((SELECT ord FROM tasks WHERE id = ${at}), \
                 (SELECT MIN(ord) FROM tasks WHERE id > ${at}), \
                 (SELECT MAX(ord) + 1 FROM tasks))"
            ));
        }
        let filter_sql = if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conditions.join(" AND "))
        };
        values.push(&limit);
        let sql = format!(
            "SELECT {TASK_COLUMNS} FROM tasks {filter_sql} ORDER BY tasks.ord DESC LIMIT ${}",
            values.len()
        );
        let found = query(&self.client().await?, &sql, &values).await?;
        rows::all(&found, rows::task)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_are_escaped_and_ascii_lowered() {
        assert_eq!(contains_pattern("50%_Off"), "%50\\%\\_off%");
        assert_eq!(contains_pattern("a\\b"), "%a\\\\b%");
        assert_eq!(contains_pattern("É"), "%É%");
    }
}
