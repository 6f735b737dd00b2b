//! Model calls: recorded with their events, summed into the task's usage and cost.

use pp_store::NewModelCall;
use pp_types::{Cost, TaskUsage, Usage};
use pretty_assertions::assert_eq;

use crate::TestDb;

fn call(step: u32, usage: Option<Usage>, cost: Option<(f64, &str)>) -> NewModelCall {
    NewModelCall {
        step,
        model: "openai-compatible:m".into(),
        usage,
        cost: cost.map(|(amount, currency)| Cost {
            amount,
            currency: currency.into(),
        }),
    }
}

fn usage(prompt: u64, completion: u64, cached: u64, reasoning: u64) -> Option<Usage> {
    Some(Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        cached_tokens: cached,
        reasoning_tokens: reasoning,
    })
}

both!(a_task_without_calls_has_zero_usage);
async fn a_task_without_calls_has_zero_usage(db: TestDb) {
    let task = db.create("a").await;
    assert_eq!(task.usage, TaskUsage::default());
    assert_eq!(
        db.store.task(&task.id).await.unwrap().usage,
        TaskUsage::default()
    );
}

both!(calls_add_up_per_task_and_the_cost_needs_every_call_priced);
async fn calls_add_up_per_task_and_the_cost_needs_every_call_priced(db: TestDb) {
    let task = db.create("a").await;
    let other = db.create("b").await;
    db.store
        .append_events_with_calls(
            &task.id,
            &[],
            Vec::new(),
            Vec::new(),
            vec![
                call(0, usage(1000, 200, 600, 50), Some((0.25, "USD"))),
                call(1, None, Some((0.0, "USD"))),
            ],
        )
        .await
        .unwrap();
    db.store
        .append_events_with_calls(
            &other.id,
            &[],
            Vec::new(),
            Vec::new(),
            vec![call(0, usage(7, 3, 0, 0), None)],
        )
        .await
        .unwrap();
    db.store
        .append_events_with_calls(
            &task.id,
            &[],
            Vec::new(),
            Vec::new(),
            vec![call(2, usage(1500, 100, 1000, 0), Some((0.5, "USD")))],
        )
        .await
        .unwrap();
    assert_eq!(
        db.store.task(&task.id).await.unwrap().usage,
        TaskUsage {
            prompt_tokens: 2500,
            completion_tokens: 300,
            cached_tokens: 1600,
            reasoning_tokens: 50,
            total_tokens: 2800,
            model_calls: 3,
            cost: Some(Cost {
                amount: 0.75,
                currency: "USD".into()
            }),
        }
    );
    // One unpriced call: tokens still add up, the cost is unknown.
    let other = db.store.task(&other.id).await.unwrap().usage;
    assert_eq!(
        (other.total_tokens, other.model_calls, other.cost),
        (10, 1, None)
    );
    // Lists carry the same figures.
    let listed = db.store.list_tasks(None, 10).await.unwrap();
    let listed = listed.iter().find(|t| t.id == task.id).unwrap();
    assert_eq!(listed.usage.total_tokens, 2800);

    let calls = db.store.model_calls(&task.id).await.unwrap();
    assert_eq!(
        calls.iter().map(|c| (c.step, c.usage)).collect::<Vec<_>>(),
        vec![
            (0, usage(1000, 200, 600, 50)),
            (1, None),
            (2, usage(1500, 100, 1000, 0))
        ]
    );
}

both!(mixed_currencies_give_no_cost);
async fn mixed_currencies_give_no_cost(db: TestDb) {
    let task = db.create("a").await;
    db.store
        .append_events_with_calls(
            &task.id,
            &[],
            Vec::new(),
            Vec::new(),
            vec![
                call(0, usage(10, 1, 0, 0), Some((0.1, "USD"))),
                call(1, usage(10, 1, 0, 0), Some((0.1, "EUR"))),
            ],
        )
        .await
        .unwrap();
    let usage = db.store.task(&task.id).await.unwrap().usage;
    assert_eq!((usage.model_calls, usage.cost), (2, None));
}
