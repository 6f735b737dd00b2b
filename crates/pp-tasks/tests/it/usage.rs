//! Token accounting through the task service: every model call is recorded with its
//! usage (from a scripted model, or the loopback OpenAI-compatible server), summed per
//! task, priced with `[model] prices`, and `[tasks] max_tokens` stops a task before the
//! call that would pass it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use pp_model::{HttpModel, ProviderKind, ProviderSettings};
use pp_tasks::{CreateTask, ModelSource, TaskSettings};
use pp_test_support::mock::MockServer;
use pp_test_support::openai::{self, MockTurn, MockUsage};
use pp_types::{
    Actor, Cost, EventKind, FailureReason, ModelPrice, Prices, TaskId, TaskState, TaskUsage, Usage,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::fixture::{Fixture, LEASE, approve};

fn settings(max_tokens: Option<u64>, prices: Prices) -> TaskSettings {
    TaskSettings {
        poll_interval: Duration::from_millis(20),
        lease: LEASE,
        max_tokens,
        prices,
        ..TaskSettings::default()
    }
}

fn prices(model: &str) -> Prices {
    Prices::new(BTreeMap::from([(
        model.to_owned(),
        ModelPrice {
            prompt: 2.0,
            completion: 10.0,
            cached: Some(0.5),
            currency: "USD".into(),
        },
    )]))
}

/// A scripted turn that reads `a.txt` and reports 1000 prompt / 100 completion tokens.
fn reading() -> Value {
    json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}],
           "usage": {"prompt_tokens": 1000, "completion_tokens": 100}})
}

/// The usage every `assistant_message` event of `task` carries, in order.
async fn call_usages(fixture: &Fixture, task: &TaskId) -> Vec<Option<Usage>> {
    fixture
        .store()
        .task_events(task, 0)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|stored| match stored.event.kind {
            EventKind::AssistantMessage { usage, .. } => Some(usage),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_summed_over_calls_and_approvals() {
    let fixture = Fixture::with(settings(None, Prices::default()));
    fixture.tree.file("a.txt", "A\n");
    let script = json!([
        reading(),
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "B"}}],
         "usage": {"prompt_tokens": 1200, "completion_tokens": 80, "cached_tokens": 1000,
                   "reasoning_tokens": 30}},
        {"content": "done", "usage": {"prompt_tokens": 1300, "completion_tokens": 20}}
    ]);
    let task = fixture.run(script).await;
    assert_eq!(task.state, TaskState::WaitingApproval);
    assert_eq!(task.usage.model_calls, 2);
    assert_eq!(task.usage.total_tokens, 2380);
    let pending = fixture.pending(&task.id).await;
    let done = fixture
        .service
        .resolve(&pending.id, approve())
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Completed);
    let shown = fixture.service.task(&task.id).await.unwrap();
    assert_eq!(
        shown.usage,
        TaskUsage {
            prompt_tokens: 3500,
            completion_tokens: 200,
            cached_tokens: 1000,
            reasoning_tokens: 30,
            total_tokens: 3700,
            model_calls: 3,
            // The scripted model has no price.
            cost: None,
        }
    );
    assert_eq!(call_usages(&fixture, &task.id).await.len(), 3);
    let serialised = serde_json::to_value(&shown).unwrap();
    assert_eq!(
        serialised["usage"],
        json!({"prompt_tokens": 3500, "completion_tokens": 200, "cached_tokens": 1000,
               "reasoning_tokens": 30, "total_tokens": 3700, "model_calls": 3})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_tokens_fails_the_task_before_the_call_that_would_pass_it() {
    // Used after each call: 1100, 2200. The third call is estimated at about
    // 1000 + 100 + (the file's answer) + 100 more: 2200 + ~1210 > 3000.
    let fixture = Fixture::with(settings(Some(3000), Prices::default()));
    fixture.tree.file("a.txt", "A\n");
    let script = json!([reading(), reading(), reading(), {"content": "done"}]);
    let task = fixture.run(script).await;
    assert_eq!(task.state, TaskState::Failed);
    assert_eq!(task.failure_reason, Some(FailureReason::TokenBudget));
    assert_eq!(
        task.script_position, 2,
        "the third turn was never asked for"
    );
    assert_eq!(task.usage.total_tokens, 2200);
    assert_eq!(task.usage.model_calls, 2);
    let error = task.error.unwrap();
    assert!(error.contains("past its budget of 3000"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_spans_an_approval() {
    // The write waits for approval after 1100 tokens; after the resume the next call's
    // estimate still starts from the checkpoint's count and last usage.
    let fixture = Fixture::with(settings(Some(3000), Prices::default()));
    fixture.tree.file("a.txt", "A\n");
    let script = json!([
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "B"}}],
         "usage": {"prompt_tokens": 1000, "completion_tokens": 100}},
        reading(),
        reading(),
        {"content": "done"}
    ]);
    let task = fixture.run(script).await;
    assert_eq!(task.state, TaskState::WaitingApproval);
    let pending = fixture.pending(&task.id).await;
    let done = fixture
        .service
        .resolve(&pending.id, approve())
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Failed);
    assert_eq!(done.failure_reason, Some(FailureReason::TokenBudget));
    assert_eq!(done.usage.total_tokens, 2200);
    assert_eq!(done.script_position, 2);
}

/// A service whose tasks run against the loopback OpenAI-compatible server.
async fn over_http(stream: bool, max_tokens: Option<u64>) -> (Fixture, MockServer) {
    let server = MockServer::start_with(|request| {
        let body = request.json();
        let answered = body["messages"]
            .as_array()
            .and_then(|messages| messages.last())
            .is_some_and(|last| last["role"] == "tool");
        let turn = if answered {
            MockTurn::text("done")
        } else {
            MockTurn::call("call_1", "read_file", &json!({"path": "a.txt"}))
        };
        let usage = MockUsage {
            prompt: if answered { 2_000 } else { 1_500 },
            completion: 100,
            cached: 1_000,
            reasoning: 40,
        };
        openai::answer(request, &turn, usage)
    })
    .await;
    let mut provider = ProviderSettings::new(
        ProviderKind::OpenAi,
        format!("{}/v1", server.url()),
        "gpt-t",
    );
    provider.stream = stream;
    let model = HttpModel::new(&provider).unwrap();
    let fixture = Fixture::with_model(
        settings(max_tokens, prices("gpt-t")),
        ModelSource::Provider(Arc::new(model)),
    );
    fixture.tree.file("a.txt", "A\n");
    (fixture, server)
}

async fn run_unscripted(fixture: &Fixture) -> pp_types::TaskRecord {
    let task = fixture
        .service
        .create(CreateTask {
            prompt: "read a.txt".into(),
            workspace: None,
            actor: Actor::Operator,
            script: None,
        })
        .await
        .unwrap();
    fixture.service.run_now(&task.id).await.unwrap();
    fixture.service.task(&task.id).await.unwrap()
}

/// 3,500 prompt tokens of which 2,000 cached, 200 completion: (1,500 × 2 + 2,000 × 0.5
/// + 200 × 10) / 1,000,000 = 0.006.
fn expected_usage() -> TaskUsage {
    TaskUsage {
        prompt_tokens: 3500,
        completion_tokens: 200,
        cached_tokens: 2000,
        reasoning_tokens: 80,
        total_tokens: 3700,
        model_calls: 2,
        cost: Some(Cost {
            amount: 0.006,
            currency: "USD".into(),
        }),
    }
}

fn assert_usage(actual: &TaskUsage) {
    let expected = expected_usage();
    let amount = actual.cost.as_ref().map(|cost| cost.amount).unwrap_or(-1.0);
    assert!((amount - 0.006).abs() < 1e-12, "{actual:?}");
    assert_eq!(
        TaskUsage {
            cost: expected.cost.clone(),
            ..actual.clone()
        },
        expected
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_provider_task_records_usage_and_cost() {
    let (fixture, server) = over_http(true, None).await;
    let task = run_unscripted(&fixture).await;
    assert_eq!(task.state, TaskState::Completed, "{task:?}");
    assert_usage(&task.usage);
    assert_eq!(server.served(), 2);
    let calls = fixture.store().model_calls(&task.id).await.unwrap();
    assert_eq!(
        calls.iter().map(|c| c.model.as_str()).collect::<Vec<_>>(),
        vec!["openai-compatible:gpt-t"; 2]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_provider_task_records_usage_and_cost() {
    let (fixture, _server) = over_http(false, None).await;
    let task = run_unscripted(&fixture).await;
    assert_eq!(task.state, TaskState::Completed, "{task:?}");
    assert_usage(&task.usage);
    assert_eq!(
        call_usages(&fixture, &task.id).await[0],
        Some(Usage {
            prompt_tokens: 1500,
            completion_tokens: 100,
            cached_tokens: 1000,
            reasoning_tokens: 40,
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_task_stops_at_its_budget() {
    // After the first call 1,600 are used; the second is estimated at 1,500 + 100 +
    // the file's answer + 100 more: past 3,000.
    let (fixture, server) = over_http(true, Some(3000)).await;
    let task = run_unscripted(&fixture).await;
    assert_eq!(task.state, TaskState::Failed);
    assert_eq!(task.failure_reason, Some(FailureReason::TokenBudget));
    assert_eq!(server.served(), 1);
    assert_eq!(task.usage.total_tokens, 1600);
    assert_eq!(task.usage.model_calls, 1);
}
