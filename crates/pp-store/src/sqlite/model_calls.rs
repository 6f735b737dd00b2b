//! Model calls: one row per call with the usage its provider reported and the cost
//! estimated when it was recorded (`migrations/sqlite/0007_usage.sql`).

use pp_types::{Cost, TaskId, Timestamp, Usage};
use rusqlite::{Connection, params};

use super::SqliteStore as Store;
use crate::error::Result;
use crate::mapping;
use crate::types::{ModelCallRow, NewModelCall};

impl Store {
    /// The task's model calls, oldest first.
    pub(crate) fn model_calls(&self, task: &TaskId) -> Result<Vec<ModelCallRow>> {
        self.read(|connection| {
            let rows = connection
                .prepare_cached(
                    "SELECT step, model, reported, prompt_tokens, completion_tokens, \
                     cached_tokens, reasoning_tokens, cost, currency, at \
                     FROM model_calls WHERE task_id = ?1 ORDER BY id",
                )?
                .query_map([task.as_str()], |row| {
                    let count = |index: usize| -> rusqlite::Result<u64> {
                        Ok(u64::try_from(row.get::<_, i64>(index)?).unwrap_or(0))
                    };
                    let reported: i64 = row.get(2)?;
                    let usage = Usage {
                        prompt_tokens: count(3)?,
                        completion_tokens: count(4)?,
                        cached_tokens: count(5)?,
                        reasoning_tokens: count(6)?,
                    };
                    let cost: Option<f64> = row.get(7)?;
                    let currency: Option<String> = row.get(8)?;
                    Ok(ModelCallRow {
                        step: row.get(0)?,
                        model: row.get(1)?,
                        usage: (reported == 1).then_some(usage),
                        cost: cost
                            .zip(currency)
                            .map(|(amount, currency)| Cost { amount, currency }),
                        at: Timestamp::from_millis(row.get(9)?),
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
    }
}

/// Records `calls` inside the caller's transaction.
pub(crate) fn insert(
    connection: &Connection,
    task: &TaskId,
    calls: Vec<NewModelCall>,
    at: Timestamp,
) -> Result<()> {
    if calls.is_empty() {
        return Ok(());
    }
    let mut statement = connection.prepare_cached(
        "INSERT INTO model_calls (task_id, step, model, reported, prompt_tokens, \
         completion_tokens, cached_tokens, reasoning_tokens, cost, currency, at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    for call in calls {
        let usage = call.usage.unwrap_or_default();
        let (cost, currency) = call.cost.map(|cost| (cost.amount, cost.currency)).unzip();
        statement.execute(params![
            task.as_str(),
            call.step,
            call.model,
            call.usage.is_some(),
            mapping::int(usage.prompt_tokens),
            mapping::int(usage.completion_tokens),
            mapping::int(usage.cached_tokens),
            mapping::int(usage.reasoning_tokens),
            cost,
            currency,
            at.as_millis(),
        ])?;
    }
    Ok(())
}
