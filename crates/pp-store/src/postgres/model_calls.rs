//! Model calls: one row per call with the usage its provider reported and the cost
//! estimated when it was recorded.

use deadpool_postgres::GenericClient;
use pp_types::{Cost, TaskId, Timestamp, Usage};

use super::{PgStore, execute, query};
use crate::error::Result;
use crate::mapping::int;
use crate::types::{ModelCallRow, NewModelCall};

impl PgStore {
    /// The task's model calls, oldest first.
    pub(crate) async fn model_calls(&self, task: &TaskId) -> Result<Vec<ModelCallRow>> {
        let found = query(
            &self.client().await?,
            "SELECT step, model, reported, prompt_tokens, completion_tokens, \
             cached_tokens, reasoning_tokens, cost, currency, at \
             FROM model_calls WHERE task_id = $1 ORDER BY id",
            &[&task.as_str()],
        )
        .await?;
        found
            .iter()
            .map(|row| {
                let count = |index: usize| -> Result<u64> {
                    Ok(u64::try_from(row.try_get::<_, i64>(index)?).unwrap_or(0))
                };
                let reported: bool = row.try_get(2)?;
                let usage = Usage {
                    prompt_tokens: count(3)?,
                    completion_tokens: count(4)?,
                    cached_tokens: count(5)?,
                    reasoning_tokens: count(6)?,
                };
                let cost: Option<f64> = row.try_get(7)?;
                let currency: Option<String> = row.try_get(8)?;
                let step: i64 = row.try_get(0)?;
                Ok(ModelCallRow {
                    step: u32::try_from(step).unwrap_or(u32::MAX),
                    model: row.try_get(1)?,
                    usage: reported.then_some(usage),
                    cost: cost
                        .zip(currency)
                        .map(|(amount, currency)| Cost { amount, currency }),
                    at: Timestamp::from_millis(row.try_get(9)?),
                })
            })
            .collect()
    }
}

/// Records `calls` inside the caller's transaction.
pub(crate) async fn insert(
    db: &impl GenericClient,
    task: &TaskId,
    calls: Vec<NewModelCall>,
    at: Timestamp,
) -> Result<()> {
    for call in calls {
        let usage = call.usage.unwrap_or_default();
        let (cost, currency) = call.cost.map(|cost| (cost.amount, cost.currency)).unzip();
        execute(
            db,
            "INSERT INTO model_calls (task_id, step, model, reported, prompt_tokens, \
             completion_tokens, cached_tokens, reasoning_tokens, cost, currency, at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            &[
                &task.as_str(),
                &i64::from(call.step),
                &call.model,
                &call.usage.is_some(),
                &int(usage.prompt_tokens),
                &int(usage.completion_tokens),
                &int(usage.cached_tokens),
                &int(usage.reasoning_tokens),
                &cost,
                &currency,
                &at.as_millis(),
            ],
        )
        .await?;
    }
    Ok(())
}
