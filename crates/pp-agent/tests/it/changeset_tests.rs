//! Changesets: a turn's approval-needing calls suspend together and resume with one
//! decision each, the rest of the turn running in the model's order.

use std::sync::{Arc, Mutex};

use pp_agent::{
    AFTER_EARLIER_MESSAGE, Agent, BeforeApprovedCall, BoxFuture, DecisionProblem, EventLog, Limits,
    NOT_RUN_MESSAGE, Outcome, Resolution, ResumeError, ToolRegistry,
};
use pp_types::{Checkpoint, Decision, Event, FailureReason, Message, Risk, ToolSpec};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::fakes::{
    QueueModel, RecordingTool, assert_every_call_answered_once, calls, fake_policy, text,
};

struct Harness {
    read: Arc<RecordingTool>,
    write: Arc<RecordingTool>,
    delete: Arc<RecordingTool>,
    registry: ToolRegistry,
    log: Arc<EventLog>,
}

impl Harness {
    fn new() -> Self {
        let read = RecordingTool::new("read_thing", "file:read", Risk::Low);
        let write = RecordingTool::new("write_thing", "file:write", Risk::High);
        let delete = RecordingTool::new("delete_thing", "file:delete", Risk::High);
        let mut registry = ToolRegistry::new();
        registry.register(read.clone()).unwrap();
        registry.register(write.clone()).unwrap();
        registry.register(delete.clone()).unwrap();
        Self {
            read,
            write,
            delete,
            registry,
            log: Arc::new(EventLog::new()),
        }
    }

    fn agent<'a>(&'a self, model: &'a QueueModel) -> Agent<'a> {
        Agent::new(model, &self.registry, &fake_policy, &*self.log)
    }

    async fn suspend(&self, model: &QueueModel) -> Checkpoint {
        match self.agent(model).start("system".into(), "prompt").await {
            Outcome::Suspended(checkpoint) => {
                assert_open_calls_are_the_changesets(&checkpoint);
                *checkpoint
            }
            other => panic!("not suspended: {other:?}"),
        }
    }

    /// The call events logged so far, as `type:call_id`.
    fn trace(&self) -> Vec<String> {
        trace(&self.log.events())
    }
}

/// `type:call_id` for every event about a call.
fn trace(events: &[Event]) -> Vec<String> {
    events.iter().filter_map(trace_one).collect()
}

fn trace_one(event: &Event) -> Option<String> {
    let value = serde_json::to_value(event).unwrap();
    let id = value.get("call_id")?.as_str()?.to_owned();
    Some(format!("{}:{id}", event.type_name()))
}

/// One resume's decisions.
type Decisions = Vec<(String, Resolution)>;

/// What the hook saw of one check: call id, arguments, the last call event then, and how
/// many writes had run by then.
type Check = (String, Value, Option<String>, usize);

fn approve() -> Resolution {
    Resolution::Approve {
        edited_arguments: None,
        edited_by: None,
    }
}

fn all(ids: &[&str], resolution: &Resolution) -> Decisions {
    ids.iter()
        .map(|id| ((*id).to_owned(), resolution.clone()))
        .collect()
}

/// A suspended checkpoint answers every call of its turn at most once, and the calls
/// without an answer are exactly `pending` and `later_calls`.
fn assert_open_calls_are_the_changesets(checkpoint: &Checkpoint) {
    let turn = checkpoint
        .messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }))
        .unwrap();
    let Message::Assistant { tool_calls, .. } = &checkpoint.messages[turn] else {
        unreachable!()
    };
    let answered: Vec<&str> = checkpoint.messages[turn + 1..]
        .iter()
        .map(|m| match m {
            Message::Tool { tool_call_id, .. } => tool_call_id.as_str(),
            other => panic!("not a tool answer: {other:?}"),
        })
        .collect();
    let mut open: Vec<&str> = tool_calls
        .iter()
        .map(|c| c.id.as_str())
        .filter(|id| !answered.contains(id))
        .collect();
    let mut expected: Vec<&str> = std::iter::once(checkpoint.pending.call.id.as_str())
        .chain(checkpoint.later_calls.iter().map(|c| c.id.as_str()))
        .collect();
    open.sort_unstable();
    expected.sort_unstable();
    assert_eq!(open, expected, "unanswered calls");
    for id in &answered {
        assert_eq!(answered.iter().filter(|a| *a == id).count(), 1, "{id}");
    }
    for pending in &checkpoint.more_pending {
        assert!(checkpoint.later_calls.contains(&pending.call));
    }
}

/// The conversation of a finished run, after checking every call got exactly one answer.
fn finished(outcome: &Outcome) -> &[Message] {
    let messages = match outcome {
        Outcome::Completed { messages, .. } | Outcome::Failed { messages, .. } => messages,
        Outcome::Suspended(_) => panic!("still suspended"),
    };
    assert_every_call_answered_once(messages);
    messages
}

/// The answers after the first assistant turn with tool calls, as `(id, content)`.
fn turn_answers(messages: &[Message]) -> Vec<(String, String)> {
    let turn = messages
        .iter()
        .position(|m| matches!(m, Message::Assistant { tool_calls, .. } if !tool_calls.is_empty()))
        .unwrap();
    messages[turn + 1..]
        .iter()
        .map_while(|m| match m {
            Message::Tool {
                tool_call_id,
                content,
            } => Some((tool_call_id.clone(), content.clone())),
            _ => None,
        })
        .collect()
}

fn ids(pending: &Checkpoint) -> Vec<&str> {
    pending.pending_ids()
}

#[tokio::test(flavor = "current_thread")]
async fn a_turn_of_writes_becomes_one_changeset_and_runs_in_model_order() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(
            0,
            &[
                ("read_thing", r#"{"path":"r"}"#),
                ("write_thing", r#"{"path":"A","content":"1"}"#),
                ("write_thing", r#"{"path":"B","content":"2"}"#),
                ("delete_thing", r#"{"path":"A/x"}"#),
                ("write_thing", r#"{"path":"../out","content":"3"}"#),
                ("write_thing", r#"{"path":"C","content":"4"}"#),
            ],
        ),
        text("done"),
    ]);
    let checkpoint = harness.suspend(&model).await;
    assert_eq!(checkpoint.version, 2);
    assert_eq!(ids(&checkpoint), ["c0_1", "c0_2", "c0_5"]);
    let later: Vec<&str> = checkpoint
        .later_calls
        .iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(later, ["c0_2", "c0_5"]);
    let previews: Vec<&str> = checkpoint
        .pending_calls()
        .map(|p| p.preview.as_ref().unwrap().target.as_str())
        .collect();
    assert_eq!(previews, ["A", "B", "C"]);
    assert_eq!(
        checkpoint.more_pending[1].arguments,
        json!({"path": "C", "content": "4"})
    );
    assert_eq!(checkpoint.denials, 1);
    assert_eq!(
        turn_answers(&checkpoint.messages),
        [
            ("c0_0".to_owned(), "ok r".to_owned()),
            ("c0_3".to_owned(), format!("error: {AFTER_EARLIER_MESSAGE}")),
            (
                "c0_4".to_owned(),
                "denied by policy: path `../out` escapes (rule: escapes)".to_owned()
            ),
        ]
    );
    assert_eq!(
        harness.trace(),
        [
            "tool_call:c0_0",
            "tool_result:c0_0",
            "tool_call:c0_1",
            "tool_call:c0_2",
            "tool_call:c0_3",
            "tool_error:c0_3",
            "tool_call:c0_4",
            "tool_denied:c0_4",
            "tool_call:c0_5",
            "approval_required:c0_1",
            "approval_required:c0_2",
            "approval_required:c0_5",
        ]
    );
    assert_eq!(harness.read.executions().len(), 1);
    assert!(harness.write.executions().is_empty());
    assert!(harness.delete.executions().is_empty());

    // The JSON the service stores round-trips.
    let stored: Checkpoint =
        serde_json::from_str(&serde_json::to_string(&checkpoint).unwrap()).unwrap();
    assert_eq!(stored, checkpoint);

    // Decisions in any order; the calls run in the model's.
    let before = harness.log.events().len();
    let outcome = harness
        .agent(&model)
        .resume_all(stored, all(&["c0_5", "c0_1", "c0_2"], &approve()))
        .await
        .unwrap();
    assert_eq!(outcome.status(), "completed");
    assert_eq!(
        harness.write.executions(),
        [
            json!({"path": "A", "content": "1"}),
            json!({"path": "B", "content": "2"}),
            json!({"path": "C", "content": "4"}),
        ]
    );
    assert!(harness.delete.executions().is_empty());
    assert_eq!(
        trace(&harness.log.events()[before..]),
        [
            "approval_resolved:c0_1",
            "tool_result:c0_1",
            "approval_resolved:c0_2",
            "tool_result:c0_2",
            "approval_resolved:c0_5",
            "tool_result:c0_5",
        ]
    );
    let answers = turn_answers(finished(&outcome));
    let order: Vec<&str> = answers.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        order,
        ["c0_0", "c0_1", "c0_2", "c0_3", "c0_4", "c0_5"],
        "the answers are in the model's order"
    );
    assert_eq!(answers[5].1, "ok C");
}

#[tokio::test(flavor = "current_thread")]
async fn reads_after_the_first_ask_run_after_the_decisions_in_model_order() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(
            0,
            &[
                ("write_thing", r#"{"path":"A","content":"1"}"#),
                ("read_thing", r#"{"path":"r1"}"#),
                ("write_thing", r#"{"path":"B","content":"2"}"#),
                ("read_thing", r#"{"path":"r2"}"#),
            ],
        ),
        text("done"),
    ]);
    let checkpoint = harness.suspend(&model).await;
    assert!(harness.read.executions().is_empty(), "reads wait");
    assert_eq!(ids(&checkpoint), ["c0_0", "c0_2"]);
    assert_eq!(checkpoint.later_calls.len(), 3);
    let before = harness.log.events().len();
    let outcome = harness
        .agent(&model)
        .resume_all(checkpoint, all(&["c0_0", "c0_2"], &approve()))
        .await
        .unwrap();
    assert_eq!(
        trace(&harness.log.events()[before..]),
        [
            "approval_resolved:c0_0",
            "tool_result:c0_0",
            "tool_result:c0_1",
            "approval_resolved:c0_2",
            "tool_result:c0_2",
            "tool_result:c0_3",
        ],
        "later calls are not announced again and run in order"
    );
    assert_eq!(
        harness.read.executions(),
        [json!({"path": "r1"}), json!({"path": "r2"})]
    );
    // Every call was announced exactly once.
    let announced: Vec<String> = harness
        .trace()
        .into_iter()
        .filter(|t| t.starts_with("tool_call:"))
        .collect();
    assert_eq!(
        announced,
        [
            "tool_call:c0_0",
            "tool_call:c0_1",
            "tool_call:c0_2",
            "tool_call:c0_3"
        ]
    );
    finished(&outcome);
}

#[tokio::test(flavor = "current_thread")]
async fn approve_edit_reject_and_stale_in_one_changeset() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(
            0,
            &[
                ("write_thing", r#"{"path":"A","content":"1"}"#),
                ("write_thing", r#"{"path":"B","content":"2"}"#),
                ("write_thing", r#"{"path":"C","content":"3"}"#),
                ("write_thing", r#"{"path":"D","content":"4"}"#),
            ],
        ),
        text("done"),
    ]);
    let checkpoint = harness.suspend(&model).await;
    let edited = json!({"path": "A2", "content": "1"});
    let decisions = vec![
        (
            "c0_0".to_owned(),
            Resolution::Approve {
                edited_arguments: Some(edited.clone()),
                edited_by: Some("ana".into()),
            },
        ),
        (
            "c0_1".to_owned(),
            Resolution::Reject {
                reason: Some("not that".into()),
            },
        ),
        (
            "c0_2".to_owned(),
            Resolution::Stale {
                message: "not run: `C` changed".into(),
            },
        ),
        ("c0_3".to_owned(), approve()),
    ];
    let before = harness.log.events().len();
    let outcome = harness
        .agent(&model)
        .resume_all(checkpoint, decisions)
        .await
        .unwrap();
    assert_eq!(
        harness.write.executions(),
        [edited.clone(), json!({"path": "D", "content": "4"})]
    );
    let answers = turn_answers(finished(&outcome));
    assert!(
        answers[0]
            .1
            .starts_with("[the person edited this call before approving it (`path`")
            && answers[0].1.ends_with("\nok A2"),
        "{}",
        answers[0].1
    );
    assert_eq!(answers[1].1, "error: rejected by the operator: not that");
    assert_eq!(answers[2].1, "error: not run: `C` changed");
    assert_eq!(answers[3].1, "ok D");
    let resolved: Vec<Value> = harness.log.events()[before..]
        .iter()
        .filter(|e| e.type_name() == "approval_resolved")
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    let decisions: Vec<&str> = resolved
        .iter()
        .map(|e| e["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["approved", "rejected", "stale", "approved"]);
    assert_eq!(resolved[0]["edited"], true);
    assert_eq!(resolved[0]["arguments"], edited);
    assert_eq!(resolved[0]["edited_by"], "ana");
    assert_eq!(resolved[0]["preview"]["target"], "A2");
    assert_eq!(resolved[3]["edited"], false);
}

#[tokio::test(flavor = "current_thread")]
async fn decisions_must_match_the_changeset_one_to_one_and_nothing_runs_otherwise() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(
            0,
            &[
                ("write_thing", r#"{"path":"A","content":"1"}"#),
                ("write_thing", r#"{"path":"B","content":"2"}"#),
                ("read_thing", r#"{"path":"r"}"#),
            ],
        ),
        text("done"),
    ]);
    let mut checkpoint = harness.suspend(&model).await;
    let original = checkpoint.clone();
    let events = harness.log.events().len();
    let reject = Resolution::Reject { reason: None };
    let cases: Vec<(Decisions, DecisionProblem, &str)> = vec![
        (
            all(&["c0_0"], &approve()),
            DecisionProblem::Missing {
                call_id: "c0_1".into(),
            },
            "decisions refused: pending call `c0_1` has no decision",
        ),
        (
            all(&["c0_0", "c0_1", "c0_2"], &approve()),
            DecisionProblem::Unknown {
                call_id: "c0_2".into(),
            },
            "decisions refused: call `c0_2` is not waiting for a decision",
        ),
        (
            vec![
                ("c0_1".into(), approve()),
                ("c0_0".into(), approve()),
                ("c0_1".into(), reject.clone()),
            ],
            DecisionProblem::Duplicate {
                call_id: "c0_1".into(),
            },
            "decisions refused: pending call `c0_1` was decided more than once",
        ),
        (
            Vec::new(),
            DecisionProblem::Missing {
                call_id: "c0_0".into(),
            },
            "decisions refused: pending call `c0_0` has no decision",
        ),
    ];
    for (decisions, expected, text) in cases {
        let error = harness
            .agent(&model)
            .resume_all(checkpoint, decisions)
            .await
            .unwrap_err();
        assert_eq!(error.to_string(), text);
        let ResumeError::Decisions {
            problem,
            checkpoint: back,
        } = error
        else {
            panic!("{error:?}")
        };
        assert_eq!(problem, expected);
        assert_eq!(*back, original);
        checkpoint = *back;
    }
    // The single-decision resume is the changeset resume with the first call's id.
    let error = harness
        .agent(&model)
        .resume(checkpoint, approve())
        .await
        .unwrap_err();
    let ResumeError::Decisions {
        problem,
        checkpoint: back,
    } = error
    else {
        panic!("{error:?}")
    };
    assert_eq!(
        problem,
        DecisionProblem::Missing {
            call_id: "c0_1".into()
        }
    );
    checkpoint = *back;
    assert!(harness.write.executions().is_empty());
    assert!(harness.read.executions().is_empty());
    assert_eq!(harness.log.events().len(), events, "nothing was emitted");
    assert_eq!(model.requests().len(), 1);

    let outcome = harness
        .agent(&model)
        .resume_all(
            checkpoint,
            vec![("c0_1".into(), reject), ("c0_0".into(), approve())],
        )
        .await
        .unwrap();
    assert_eq!(outcome.status(), "completed");
    assert_eq!(
        harness.write.executions(),
        [json!({"path": "A", "content": "1"})]
    );
    assert_eq!(harness.read.executions(), [json!({"path": "r"})]);
    finished(&outcome);
}

#[tokio::test(flavor = "current_thread")]
async fn one_invalid_edit_keeps_the_whole_changeset_from_running() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(
            0,
            &[
                ("write_thing", r#"{"path":"A","content":"1"}"#),
                ("read_thing", r#"{"path":"r"}"#),
                ("write_thing", r#"{"path":"B","content":"2"}"#),
            ],
        ),
        text("done"),
    ]);
    let checkpoint = harness.suspend(&model).await;
    let original = checkpoint.clone();
    let before = harness.log.events().len();
    let error = harness
        .agent(&model)
        .resume_all(
            checkpoint,
            vec![
                ("c0_0".into(), approve()),
                (
                    "c0_2".into(),
                    Resolution::Approve {
                        edited_arguments: Some(json!({"path": "../x", "content": "2"})),
                        edited_by: None,
                    },
                ),
            ],
        )
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "edited arguments refused: denied by policy: path `../x` escapes (rule: escapes)"
    );
    let ResumeError::InvalidEdit {
        call_id,
        checkpoint: back,
        ..
    } = error
    else {
        panic!("{error:?}")
    };
    assert_eq!(call_id, "c0_2");
    assert_eq!(*back, original);
    assert!(
        harness.write.executions().is_empty(),
        "not even the first call ran"
    );
    assert!(harness.read.executions().is_empty());
    assert_eq!(
        trace(&harness.log.events()[before..]),
        ["approval_edit_rejected:c0_2"]
    );
    let outcome = harness
        .agent(&model)
        .resume_all(*back, all(&["c0_0", "c0_2"], &approve()))
        .await
        .unwrap();
    assert_eq!(harness.write.executions().len(), 2);
    finished(&outcome);
}

/// Records each check (call id, arguments, the last call event then, writes run by
/// then) and refuses one call.
struct Hook {
    refuse: &'static str,
    log: Arc<EventLog>,
    write: Arc<RecordingTool>,
    seen: Mutex<Vec<Check>>,
}

impl BeforeApprovedCall for Hook {
    fn check<'a>(
        &'a self,
        call_id: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Result<(), String>> {
        let last = trace(&self.log.events()).pop();
        self.seen.lock().unwrap().push((
            call_id.to_owned(),
            arguments.clone(),
            last,
            self.write.executions().len(),
        ));
        let verdict = if call_id == self.refuse {
            Err(format!("not run: `{call_id}` changed right before it ran"))
        } else {
            Ok(())
        };
        Box::pin(async move { verdict })
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_hook_checks_each_approved_call_right_before_it_runs() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(
            0,
            &[
                ("write_thing", r#"{"path":"A","content":"1"}"#),
                ("write_thing", r#"{"path":"B","content":"2"}"#),
                ("write_thing", r#"{"path":"C","content":"3"}"#),
                ("write_thing", r#"{"path":"D","content":"4"}"#),
            ],
        ),
        text("done"),
    ]);
    let checkpoint = harness.suspend(&model).await;
    let hook = Arc::new(Hook {
        refuse: "c0_1",
        log: Arc::clone(&harness.log),
        write: Arc::clone(&harness.write),
        seen: Mutex::new(Vec::new()),
    });
    let edited = json!({"path": "C2", "content": "3"});
    let before = harness.log.events().len();
    let outcome = harness
        .agent(&model)
        .with_before_approved_call(hook.clone())
        .resume_all(
            checkpoint,
            vec![
                ("c0_0".into(), approve()),
                ("c0_1".into(), approve()),
                (
                    "c0_2".into(),
                    Resolution::Approve {
                        edited_arguments: Some(edited.clone()),
                        edited_by: None,
                    },
                ),
                ("c0_3".into(), Resolution::Reject { reason: None }),
            ],
        )
        .await
        .unwrap();
    assert_eq!(
        *hook.seen.lock().unwrap(),
        [
            (
                "c0_0".to_owned(),
                json!({"path": "A", "content": "1"}),
                Some("approval_resolved:c0_0".to_owned()),
                0
            ),
            (
                "c0_1".to_owned(),
                json!({"path": "B", "content": "2"}),
                Some("approval_resolved:c0_1".to_owned()),
                1
            ),
            (
                "c0_2".to_owned(),
                edited.clone(),
                Some("approval_resolved:c0_2".to_owned()),
                1
            ),
        ],
        "called after each approval_resolved, before the call runs; not for rejections"
    );
    assert_eq!(
        harness.write.executions(),
        [json!({"path": "A", "content": "1"}), edited]
    );
    assert_eq!(
        trace(&harness.log.events()[before..]),
        [
            "approval_resolved:c0_0",
            "tool_result:c0_0",
            "approval_resolved:c0_1",
            "tool_error:c0_1",
            "approval_resolved:c0_2",
            "tool_result:c0_2",
            "approval_resolved:c0_3",
            "tool_error:c0_3",
        ]
    );
    let answers = turn_answers(finished(&outcome));
    assert_eq!(
        answers[1].1,
        "error: not run: `c0_1` changed right before it ran"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_version_1_checkpoint_resumes_as_before() {
    let stored = r#"{
        "version": 1,
        "pending": {
            "call": {"id": "c0_1", "name": "write_thing", "arguments": "{\"path\":\"a.txt\",\"content\":\"1\"}"},
            "arguments": {"path": "a.txt", "content": "1"},
            "capability": "file:write",
            "risk": "high",
            "preview": {"target": "a.txt", "label": "create", "fingerprint": "absent"}
        },
        "later_calls": [
            {"id": "c0_2", "name": "read_thing", "arguments": "{\"path\":\"r\"}"},
            {"id": "c0_3", "name": "write_thing", "arguments": "{\"path\":\"b.txt\",\"content\":\"2\"}"}
        ],
        "messages": [
            {"role": "system", "content": "system"},
            {"role": "user", "content": "prompt"},
            {"role": "assistant", "tool_calls": [
                {"id": "c0_0", "name": "read_thing", "arguments": "{\"path\":\"r0\"}"},
                {"id": "c0_1", "name": "write_thing", "arguments": "{\"path\":\"a.txt\",\"content\":\"1\"}"},
                {"id": "c0_2", "name": "read_thing", "arguments": "{\"path\":\"r\"}"},
                {"id": "c0_3", "name": "write_thing", "arguments": "{\"path\":\"b.txt\",\"content\":\"2\"}"}
            ]},
            {"role": "tool", "tool_call_id": "c0_0", "content": "ok r0"}
        ],
        "step": 0,
        "denials": 0,
        "tokens_used": 15,
        "events": []
    }"#;
    let checkpoint: Checkpoint = serde_json::from_str(stored).unwrap();
    assert_eq!(checkpoint.version, 1);
    assert!(checkpoint.more_pending.is_empty());
    for single in [true, false] {
        let harness = Harness::new();
        let model = QueueModel::new(vec![text("done")]);
        let agent = harness.agent(&model);
        let outcome = if single {
            agent.resume(checkpoint.clone(), approve()).await
        } else {
            agent
                .resume_all(checkpoint.clone(), all(&["c0_1"], &approve()))
                .await
        }
        .unwrap();
        assert_eq!(outcome.status(), "completed");
        assert_eq!(
            harness.write.executions(),
            [json!({"path": "a.txt", "content": "1"})]
        );
        assert!(
            harness.read.executions().is_empty(),
            "version 1: later calls are not run"
        );
        assert_eq!(
            harness.trace(),
            [
                "approval_resolved:c0_1",
                "tool_result:c0_1",
                "tool_call:c0_2",
                "tool_error:c0_2",
                "tool_call:c0_3",
                "tool_error:c0_3",
            ]
        );
        let not_run = format!("error: {NOT_RUN_MESSAGE}");
        assert_eq!(
            turn_answers(finished(&outcome)),
            [
                ("c0_0".to_owned(), "ok r0".to_owned()),
                ("c0_1".to_owned(), "ok a.txt".to_owned()),
                ("c0_2".to_owned(), not_run.clone()),
                ("c0_3".to_owned(), not_run),
            ]
        );
        assert_eq!(model.requests()[0].messages.len(), 7);
    }
}

#[tokio::test(flavor = "current_thread")]
async fn unrunnable_calls_after_the_first_ask_are_answered_at_once() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(
            0,
            &[
                ("write_thing", r#"{"path":"dir/f","content":"1"}"#),
                ("no_such_tool", "{}"),
                ("write_thing", "{not json"),
                ("write_thing", r#"{"content":"no path"}"#),
                ("write_thing", r#"{"path":"./dir/f","content":"again"}"#),
                ("write_thing", r#"{"path":"dir2","content":"sibling"}"#),
                ("delete_thing", r#"{"path":"dir"}"#),
            ],
        ),
        text("done"),
    ]);
    let checkpoint = harness.suspend(&model).await;
    assert_eq!(
        ids(&checkpoint),
        ["c0_0", "c0_5", "c0_6"],
        "a sibling and a folder above an earlier target join the changeset"
    );
    let answers = turn_answers(&checkpoint.messages);
    let answered: Vec<&str> = answers.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(answered, ["c0_1", "c0_2", "c0_3", "c0_4"]);
    assert!(
        answers[0]
            .1
            .starts_with("error: unknown tool `no_such_tool`")
    );
    assert!(
        answers[1]
            .1
            .starts_with("error: arguments are not valid JSON")
    );
    assert!(answers[2].1.starts_with("error: invalid arguments:"));
    assert_eq!(answers[3].1, format!("error: {AFTER_EARLIER_MESSAGE}"));
    assert_eq!(checkpoint.denials, 0);
    let outcome = harness
        .agent(&model)
        .resume_all(checkpoint, all(&["c0_0", "c0_5", "c0_6"], &approve()))
        .await
        .unwrap();
    assert_eq!(harness.write.executions().len(), 2);
    assert_eq!(harness.delete.executions(), [json!({"path": "dir"})]);
    finished(&outcome);
}

#[tokio::test(flavor = "current_thread")]
async fn a_denial_past_the_cap_while_suspending_still_ends_the_run() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![calls(
        0,
        &[
            ("write_thing", r#"{"path":"A","content":"1"}"#),
            ("write_thing", r#"{"path":"/etc/x","content":"1"}"#),
            ("write_thing", r#"{"path":"B","content":"1"}"#),
        ],
    )]);
    let outcome = harness
        .agent(&model)
        .with_limits(Limits {
            max_denials: 1,
            ..Limits::default()
        })
        .start("system".into(), "prompt")
        .await;
    let Outcome::Failed {
        reason, messages, ..
    } = &outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(*reason, FailureReason::PolicyViolation);
    assert!(harness.write.executions().is_empty());
    assert!(
        !harness
            .trace()
            .iter()
            .any(|t| t.starts_with("approval_required"))
    );
    // As for any call after the one that reached the cap, the others stay unanswered
    // (the service closes them); none is answered twice.
    assert_eq!(
        turn_answers(messages),
        [(
            "c0_1".to_owned(),
            "denied by policy: path `/etc/x` escapes (rule: escapes)".to_owned()
        )]
    );
}

#[tokio::test(flavor = "current_thread")]
async fn the_denial_cap_reached_on_resume_leaves_the_rest_unrun_but_answered() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![calls(
        0,
        &[
            // The fake tool refuses `swapped` at execution time (a link swapped in).
            ("write_thing", r#"{"path":"swapped","content":"1"}"#),
            ("read_thing", r#"{"path":"r"}"#),
            ("write_thing", r#"{"path":"B","content":"2"}"#),
        ],
    )]);
    let checkpoint = harness.suspend(&model).await;
    let before = harness.log.events().len();
    let outcome = harness
        .agent(&model)
        .with_limits(Limits {
            max_denials: 1,
            ..Limits::default()
        })
        .resume_all(checkpoint, all(&["c0_0", "c0_2"], &approve()))
        .await
        .unwrap();
    assert_eq!(outcome.status(), "failed");
    assert_eq!(
        harness.write.executions().len(),
        1,
        "only the swapped write was tried"
    );
    assert!(harness.read.executions().is_empty());
    assert_eq!(
        trace(&harness.log.events()[before..]),
        [
            "approval_resolved:c0_0",
            "tool_denied:c0_0",
            "tool_error:c0_1",
            "approval_resolved:c0_2",
            "tool_error:c0_2",
        ]
    );
    let answers = turn_answers(finished(&outcome));
    assert_eq!(
        answers[2].1,
        "error: not run: the task was stopped after 1 denied calls"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_allowed_later_call_the_fresh_policy_would_ask_about_is_not_run() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(
            0,
            &[
                ("write_thing", r#"{"path":"A","content":"1"}"#),
                ("read_thing", r#"{"path":"r"}"#),
            ],
        ),
        text("done"),
    ]);
    let checkpoint = harness.suspend(&model).await;
    let asks = |_: &ToolSpec, _: &Value| Decision::Ask {
        action: "read".into(),
    };
    let outcome = Agent::new(&model, &harness.registry, &asks, &*harness.log)
        .resume_all(checkpoint, all(&["c0_0"], &approve()))
        .await
        .unwrap();
    assert_eq!(outcome.status(), "completed", "no second suspension");
    assert_eq!(harness.write.executions().len(), 1);
    assert!(harness.read.executions().is_empty());
    let answers = turn_answers(finished(&outcome));
    assert_eq!(answers[1].1, format!("error: {NOT_RUN_MESSAGE}"));
}
