//! The token budget stops a task before the model call that would pass it.

use pp_agent::{Agent, EventLog, Limits, Outcome};
use pp_types::{EventKind, FailureReason, Usage};
use pretty_assertions::assert_eq;

use crate::fakes::{QueueModel, calls, fake_policy, text};
use crate::loop_tests::Harness;

/// A turn that reads `a` and reports 1000 prompt and 100 completion tokens: the next
/// call is estimated at 1000 + 100 (this request and answer) + the tool's answer (a few
/// tokens) + 100 (an answer as long as this one).
fn reading(turn: usize) -> pp_agent::ModelResponse {
    let mut response = calls(turn, &[("read_thing", r#"{"path":"a"}"#)]);
    response.usage = Some(Usage {
        prompt_tokens: 1000,
        completion_tokens: 100,
        ..Usage::default()
    });
    response
}

fn budget(tokens: u64) -> Limits {
    Limits {
        token_budget: Some(tokens),
        ..Limits::default()
    }
}

fn failure(outcome: &Outcome) -> (FailureReason, String) {
    match outcome {
        Outcome::Failed {
            reason, message, ..
        } => (*reason, message.clone()),
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_call_that_would_pass_the_budget_is_not_made() {
    // Used after each call: 1100, 2200, 3300. Before call 3 the estimate is 2200 +
    // ~1210 > 3000: stop there, with 2200 used, under the budget.
    let harness = Harness::new();
    let model = QueueModel::new((0..5).map(reading).collect());
    let outcome = harness.start(&model, budget(3000)).await;
    let (reason, message) = failure(&outcome);
    assert_eq!(reason, FailureReason::TokenBudget);
    assert!(
        message.starts_with("stopped before the next model call: the task used 2200 tokens"),
        "{message}"
    );
    assert_eq!(model.requests().len(), 2);
    assert_eq!(
        harness.read.executions().len(),
        2,
        "both answered calls ran"
    );
    let types = harness.event_types();
    assert_eq!(types.last(), Some(&"task_failed"));
    assert_eq!(
        types.iter().filter(|t| **t == "model_request").count(),
        2,
        "no request event for the call that was not made: {types:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_call_that_fits_is_made() {
    // 500 more: call 3 (estimated ~3410 in all) fits; call 4 (~4510) does not.
    let harness = Harness::new();
    let model = QueueModel::new((0..5).map(reading).collect());
    let outcome = harness.start(&model, budget(3500)).await;
    assert_eq!(failure(&outcome).0, FailureReason::TokenBudget);
    assert_eq!(model.requests().len(), 3);
    assert_eq!(harness.read.executions().len(), 3);
}

#[tokio::test(flavor = "current_thread")]
async fn a_final_answer_within_the_budget_completes() {
    let harness = Harness::new();
    let mut answer = text("done");
    answer.usage = Some(Usage {
        prompt_tokens: 1200,
        completion_tokens: 50,
        ..Usage::default()
    });
    let model = QueueModel::new(vec![reading(0), answer]);
    let outcome = harness.start(&model, budget(3000)).await;
    assert!(matches!(outcome, Outcome::Completed { .. }), "{outcome:?}");
}

#[tokio::test(flavor = "current_thread")]
async fn an_answer_longer_than_estimated_stops_its_tool_calls() {
    // The first call reports more than the whole budget: its tool call is not run.
    let harness = Harness::new();
    let mut huge = reading(0);
    huge.usage = Some(Usage {
        prompt_tokens: 1000,
        completion_tokens: 5000,
        ..Usage::default()
    });
    let model = QueueModel::new(vec![huge, reading(1)]);
    let outcome = harness.start(&model, budget(3000)).await;
    let (reason, message) = failure(&outcome);
    assert_eq!(reason, FailureReason::TokenBudget);
    assert!(message.contains("used 6000 tokens"), "{message}");
    assert!(harness.read.executions().is_empty());
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn the_first_call_is_estimated_from_its_request() {
    // No usage reported yet: the estimate is the request itself (a few dozen tokens
    // here), which a tiny budget cannot hold.
    let harness = Harness::new();
    let model = QueueModel::new(vec![reading(0)]);
    let outcome = harness.start(&model, budget(10)).await;
    assert_eq!(failure(&outcome).0, FailureReason::TokenBudget);
    assert!(model.requests().is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn earlier_attempts_count_and_every_call_carries_its_usage() {
    let log = EventLog::new();
    let harness = Harness::new();
    let model = QueueModel::new((0..5).map(reading).collect());
    // 2000 used before: call 1 (a small request) fits, call 2 (2000 + 1100 + ~1210)
    // would pass 4000.
    let outcome = Agent::new(&model, &harness.registry, &fake_policy, &log)
        .with_limits(budget(4000))
        .with_tokens_used(2000)
        .start("system".into(), "prompt")
        .await;
    assert_eq!(failure(&outcome).0, FailureReason::TokenBudget);
    assert_eq!(model.requests().len(), 1);
    let usages: Vec<_> = log
        .events()
        .into_iter()
        .filter_map(|event| match event.kind {
            EventKind::AssistantMessage { usage, .. } => Some(usage),
            _ => None,
        })
        .collect();
    assert_eq!(
        usages,
        vec![Some(Usage {
            prompt_tokens: 1000,
            completion_tokens: 100,
            ..Usage::default()
        })]
    );
}
