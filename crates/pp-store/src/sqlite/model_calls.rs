//! Model calls: one row per call with the usage its provider reported and the cost
//! estimated when it was recorded (`migrations/sqlite/0007_usage.sql`).

use pp_types::{Cost, TaskId, TaskUsage, Timestamp, Usage};
use rusqlite::{Connection, params};

use super::SqliteStore as Store;
use super::rows;
use crate::Result;

/// One model call to record.
#[derive(Debug, Clone, PartialEq)]
pub struct NewModelCall {
    /// The loop step that made it.
    pub step: u32,
    /// The model's display name (`openai-compatible:gpt-4o-mini`).
    pub model: String,
    /// What the provider reported; `None` counts the call with zero tokens.
    pub usage: Option<Usage>,
    /// The estimate from the price table, when the model has a price.
    pub cost: Option<Cost>,
}

/// One recorded model call.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelCallRow {
    /// The loop step that made it.
    pub step: u32,
    /// The model's display name.
    pub model: String,
    /// What the provider reported (`None`: nothing).
    pub usage: Option<Usage>,
    /// The estimated cost, if the model had a price.
    pub cost: Option<Cost>,
    /// When it was recorded.
    pub at: Timestamp,
}

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
            rows::int(usage.prompt_tokens),
            rows::int(usage.completion_tokens),
            rows::int(usage.cached_tokens),
            rows::int(usage.reasoning_tokens),
            cost,
            currency,
            at.as_millis(),
        ])?;
    }
    Ok(())
}

/// Decodes the last column of [`rows::TASK_COLUMNS`], the task's model calls summed
/// into one JSON array:
/// `[calls, prompt, completion, cached, reasoning, priced calls, cost, min currency,
/// max currency]`. A cost is given only when every call had a price in one currency.
pub(crate) fn task_usage(text: Option<&str>) -> TaskUsage {
    let Some(values) =
        text.and_then(|text| serde_json::from_str::<Vec<serde_json::Value>>(text).ok())
    else {
        return TaskUsage::default();
    };
    let count = |index: usize| {
        values
            .get(index)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
    };
    let text = |index: usize| values.get(index).and_then(serde_json::Value::as_str);
    let (calls, prompt, completion) = (count(0), count(1), count(2));
    let cost = match (text(7), text(8)) {
        (Some(low), Some(high)) if calls > 0 && count(5) == calls && low == high => values
            .get(6)
            .and_then(serde_json::Value::as_f64)
            .map(|amount| Cost {
                amount,
                currency: low.to_owned(),
            }),
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
