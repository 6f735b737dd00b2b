//! The loop without approvals: answers, tool errors, denials, limits.

use std::sync::Arc;

use pp_agent::{Agent, EventLog, Limits, Outcome, ToolRegistry};
use pp_types::{FailureReason, Message, Risk};
use pretty_assertions::assert_eq;

use crate::fakes::{QueueModel, RecordingTool, calls, fake_policy, text};

pub(crate) struct Harness {
    pub(crate) read: Arc<RecordingTool>,
    pub(crate) write: Arc<RecordingTool>,
    pub(crate) registry: ToolRegistry,
    pub(crate) log: EventLog,
}

impl Harness {
    pub(crate) fn new() -> Self {
        let read = RecordingTool::new("read_thing", "file:read", Risk::Low);
        let write = RecordingTool::new("write_thing", "file:write", Risk::High);
        let mut registry = ToolRegistry::new();
        registry.register(read.clone()).unwrap();
        registry.register(write.clone()).unwrap();
        Self {
            read,
            write,
            registry,
            log: EventLog::new(),
        }
    }

    pub(crate) async fn start(&self, model: &QueueModel, limits: Limits) -> Outcome {
        Agent::new(model, &self.registry, &fake_policy, &self.log)
            .with_limits(limits)
            .start("system".into(), "prompt")
            .await
    }

    pub(crate) fn event_types(&self) -> Vec<&'static str> {
        self.log.events().iter().map(|e| e.type_name()).collect()
    }
}

fn last_tool_answer(model: &QueueModel) -> String {
    let requests = model.requests();
    let last = requests.last().unwrap();
    match last.messages.last().unwrap() {
        Message::Tool { content, .. } => content.clone(),
        other => panic!("last message is not a tool answer: {other:?}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn completes_with_the_final_text() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![text("hello")]);
    let outcome = harness.start(&model, Limits::default()).await;
    let Outcome::Completed {
        final_text,
        messages,
        ..
    } = outcome
    else {
        panic!("not completed: {outcome:?}");
    };
    assert_eq!(final_text, "hello");
    assert_eq!(messages.len(), 3);
    assert_eq!(
        harness.event_types(),
        [
            "task_started",
            "model_request",
            "assistant_message",
            "task_completed"
        ]
    );
    let request = &model.requests()[0];
    assert_eq!(request.messages[0], Message::system("system"));
    assert_eq!(request.messages[1], Message::user("prompt"));
    assert_eq!(request.tools.len(), 2);
}

#[tokio::test(flavor = "current_thread")]
async fn runs_allowed_calls_and_answers_each_once() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(
            0,
            &[
                ("read_thing", r#"{"path":"a"}"#),
                ("read_thing", r#"{"path":"b"}"#),
            ],
        ),
        text("done"),
    ]);
    let outcome = harness.start(&model, Limits::default()).await;
    assert_eq!(outcome.status(), "completed");
    assert_eq!(harness.read.executions().len(), 2);
    let second = &model.requests()[1];
    assert_eq!(second.messages[3], Message::tool("c0_0", "ok a"));
    assert_eq!(second.messages[4], Message::tool("c0_1", "ok b"));
}

#[tokio::test(flavor = "current_thread")]
async fn ordinary_errors_are_tool_errors_not_denials() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(
            0,
            &[
                ("no_such_tool", "{}"),
                ("read_thing", "{not json"),
                ("read_thing", r#"{"path": 3}"#),
                ("read_thing", r#"{"path":"a","extra":1}"#),
                ("read_thing", r#"{"path":"missing"}"#),
            ],
        ),
        text("done"),
    ]);
    let outcome = harness
        .start(
            &model,
            Limits {
                max_denials: 1,
                ..Limits::default()
            },
        )
        .await;
    assert_eq!(outcome.status(), "completed");
    let types = harness.event_types();
    assert_eq!(types.iter().filter(|t| **t == "tool_error").count(), 5);
    assert_eq!(types.iter().filter(|t| **t == "tool_denied").count(), 0);
    let answers: Vec<String> = model.requests()[1]
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        answers[0],
        "error: unknown tool `no_such_tool`; available tools: read_thing, write_thing"
    );
    assert!(
        answers[1].starts_with("error: arguments are not valid JSON"),
        "{}",
        answers[1]
    );
    assert_eq!(
        answers[2],
        "error: invalid arguments: arguments.path must be string, not a number"
    );
    assert_eq!(
        answers[3],
        "error: invalid arguments: arguments has an unknown field `extra`"
    );
    assert_eq!(answers[4], "error: missing not found");
    // Only the valid, allowed call ran.
    assert_eq!(harness.read.executions().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_denial_is_told_to_the_model_and_the_loop_goes_on() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(0, &[("read_thing", r#"{"path":"../x"}"#)]),
        text("I will stay inside"),
    ]);
    let outcome = harness.start(&model, Limits::default()).await;
    assert_eq!(outcome.status(), "completed");
    assert_eq!(
        last_tool_answer(&model),
        "denied by policy: path `../x` escapes (rule: escapes)"
    );
    assert!(harness.read.executions().is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn the_third_denial_fails_the_task() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(0, &[("read_thing", r#"{"path":"/etc/passwd"}"#)]),
        calls(
            1,
            &[
                ("read_thing", r#"{"path":"../a"}"#),
                ("read_thing", r#"{"path":"swapped"}"#),
            ],
        ),
        text("never reached"),
    ]);
    let outcome = harness.start(&model, Limits::default()).await;
    let Outcome::Failed {
        reason, message, ..
    } = outcome
    else {
        panic!("not failed: {outcome:?}");
    };
    assert_eq!(reason, FailureReason::PolicyViolation);
    assert_eq!(message, "the task was stopped after 3 denied calls");
    assert_eq!(model.requests().len(), 2);
    // The denial at execution time (jail refusing a swapped link) counts too.
    assert_eq!(harness.read.executions().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn max_steps_end_the_task() {
    let harness = Harness::new();
    let looping: Vec<_> = (0..5)
        .map(|i| calls(i, &[("read_thing", r#"{"path":"a"}"#)]))
        .collect();
    let model = QueueModel::new(looping);
    let outcome = harness
        .start(
            &model,
            Limits {
                max_steps: 3,
                ..Limits::default()
            },
        )
        .await;
    assert!(matches!(
        outcome,
        Outcome::Failed {
            reason: FailureReason::MaxSteps,
            ..
        }
    ));
    assert_eq!(model.requests().len(), 3);
}

#[tokio::test(flavor = "current_thread")]
async fn a_model_error_fails_the_task() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![]);
    let outcome = harness.start(&model, Limits::default()).await;
    let Outcome::Failed {
        reason, message, ..
    } = outcome
    else {
        panic!()
    };
    assert_eq!(reason, FailureReason::ModelError);
    assert_eq!(message, "script exhausted: no more turns");
}

#[tokio::test(flavor = "current_thread")]
async fn requests_are_trimmed_to_the_context_window_and_the_trim_is_an_event() {
    let harness = Harness::new();
    let big = format!(r#"{{"path":"{}"}}"#, "p".repeat(400));
    let model = QueueModel::new(vec![
        calls(0, &[("read_thing", big.as_str())]),
        calls(1, &[("read_thing", big.as_str())]),
        calls(2, &[("read_thing", big.as_str())]),
        text("done"),
    ]);
    let limits = Limits {
        context_window: Some(300),
        ..Limits::default()
    };
    let outcome = harness.start(&model, limits).await;
    let Outcome::Completed { messages, .. } = outcome else {
        panic!("{outcome:?}")
    };
    let requests = model.requests();
    let last = &requests.last().unwrap().messages;
    assert!(last.len() < messages.len(), "older turns were left out");
    assert_eq!(
        last[0],
        Message::system("system"),
        "the system prompt is kept"
    );
    assert_eq!(
        last[1],
        Message::user("prompt"),
        "the latest user message is kept"
    );
    // Every request still answers every call it contains (no call split from its result).
    assert!(harness.event_types().contains(&"context_trimmed"));
    assert_eq!(messages.len(), 9, "the full history stays in the outcome");
}

#[tokio::test(flavor = "current_thread")]
async fn empty_or_repeated_call_ids_are_made_unique() {
    let harness = Harness::new();
    let mut repeated = calls(
        1,
        &[
            ("read_thing", r#"{"path":"b"}"#),
            ("read_thing", r#"{"path":"c"}"#),
        ],
    );
    for call in &mut repeated.tool_calls {
        call.id = "c0_0".into(); // the id of the first turn's call, twice
    }
    let mut empty = calls(2, &[("read_thing", r#"{"path":"d"}"#)]);
    empty.tool_calls[0].id = String::new();
    let model = QueueModel::new(vec![
        calls(0, &[("read_thing", r#"{"path":"a"}"#)]),
        repeated,
        empty,
        text("done"),
    ]);
    let outcome = harness.start(&model, Limits::default()).await;
    assert_eq!(outcome.status(), "completed");
    // QueueModel asserts on every request that each id is answered exactly once.
    let ids: Vec<String> = harness
        .log
        .events()
        .iter()
        .filter_map(|event| match &event.kind {
            pp_types::EventKind::ToolCall { call_id, .. } => Some(call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["c0_0", "call_1_0", "call_1_1", "call_2_0"]);
}
