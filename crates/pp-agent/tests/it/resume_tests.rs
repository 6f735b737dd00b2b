//! Suspension before side effects, and every way of resuming.

use pp_agent::{Agent, Limits, Outcome, Resolution, ResumeError};
use pp_types::{Checkpoint, Decision, Denial, DenyRule, Message, ToolSpec};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::fakes::{QueueModel, calls, fake_policy, text};
use crate::loop_tests::Harness;

async fn suspended(harness: &Harness, model: &QueueModel) -> Checkpoint {
    match harness.start(model, Limits::default()).await {
        Outcome::Suspended(checkpoint) => *checkpoint,
        other => panic!("not suspended: {other:?}"),
    }
}

async fn resume(
    harness: &Harness,
    model: &QueueModel,
    checkpoint: Checkpoint,
    resolution: Resolution,
) -> Result<Outcome, ResumeError> {
    Agent::new(model, &harness.registry, &fake_policy, &harness.log)
        .resume(checkpoint, resolution)
        .await
}

fn approve() -> Resolution {
    Resolution::Approve {
        edited_arguments: None,
        edited_by: None,
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_write_suspends_before_any_side_effect() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![calls(
        0,
        &[
            ("read_thing", r#"{"path":"a"}"#),
            ("write_thing", r#"{"path":"out.txt","content":"x"}"#),
            ("read_thing", r#"{"path":"b"}"#),
        ],
    )]);
    let checkpoint = suspended(&harness, &model).await;
    assert!(harness.write.executions().is_empty());
    assert_eq!(
        harness.read.executions().len(),
        1,
        "only the call before the write ran"
    );
    assert_eq!(checkpoint.pending.call.id, "c0_1");
    assert_eq!(
        checkpoint.pending.arguments,
        json!({"path": "out.txt", "content": "x"})
    );
    assert_eq!(checkpoint.pending.capability, "file:write");
    assert_eq!(checkpoint.later_calls.len(), 1);
    assert_eq!(checkpoint.step, 0);
    assert_eq!(
        checkpoint.messages.last(),
        Some(&Message::tool("c0_0", "ok a"))
    );
    assert_eq!(
        checkpoint.events.last().unwrap().type_name(),
        "approval_required"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn approve_runs_that_call_then_the_later_read_and_the_next_write_asks_again() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(
            0,
            &[
                ("write_thing", r#"{"path":"a.txt","content":"1"}"#),
                ("read_thing", r#"{"path":"r"}"#),
            ],
        ),
        calls(1, &[("write_thing", r#"{"path":"b.txt","content":"2"}"#)]),
    ]);
    let checkpoint = suspended(&harness, &model).await;
    assert!(
        harness.read.executions().is_empty(),
        "a read after the call that asks waits for the decision"
    );
    let outcome = resume(&harness, &model, checkpoint, approve())
        .await
        .unwrap();
    assert_eq!(
        harness.write.executions(),
        vec![json!({"path": "a.txt", "content": "1"})]
    );
    assert_eq!(
        harness.read.executions(),
        vec![json!({"path": "r"})],
        "the later read runs after the decision"
    );
    let Outcome::Suspended(second) = outcome else {
        panic!("second write must ask")
    };
    assert_eq!(second.step, 1);
    assert_eq!(second.pending.arguments["path"], "b.txt");
    let messages = &model.requests()[1].messages;
    assert_eq!(messages[3], Message::tool("c0_0", "ok a.txt"));
    assert_eq!(messages[4], Message::tool("c0_1", "ok r"));
    assert_eq!(harness.write.executions().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn approve_with_edited_arguments_runs_the_edit() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(0, &[("write_thing", r#"{"path":"a.txt","content":"1"}"#)]),
        text("done"),
    ]);
    let checkpoint = suspended(&harness, &model).await;
    let edited = json!({"path": "b.txt", "content": "2"});
    let outcome = resume(
        &harness,
        &model,
        checkpoint,
        Resolution::Approve {
            edited_arguments: Some(edited.clone()),
            edited_by: None,
        },
    )
    .await
    .unwrap();
    assert_eq!(outcome.status(), "completed");
    assert_eq!(harness.write.executions(), vec![edited]);
}

#[tokio::test(flavor = "current_thread")]
async fn invalid_or_escaping_edits_are_refused_and_nothing_runs() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(0, &[("write_thing", r#"{"path":"a.txt","content":"1"}"#)]),
        text("done"),
    ]);
    let mut checkpoint = suspended(&harness, &model).await;
    let original = checkpoint.clone();
    for (edit, expected) in [
        (
            json!({"content": "x"}),
            "edited arguments refused: arguments is missing the required field `path`",
        ),
        (
            json!({"path": "../out", "content": "x"}),
            "edited arguments refused: denied by policy: path `../out` escapes (rule: escapes)",
        ),
    ] {
        let error = resume(
            &harness,
            &model,
            checkpoint,
            Resolution::Approve {
                edited_arguments: Some(edit),
                edited_by: None,
            },
        )
        .await
        .unwrap_err();
        assert_eq!(error.to_string(), expected);
        let ResumeError::InvalidEdit {
            checkpoint: returned,
            ..
        } = error
        else {
            panic!()
        };
        assert_eq!(*returned, original, "the checkpoint comes back untouched");
        checkpoint = *returned;
    }
    assert!(harness.write.executions().is_empty());
    let types: Vec<_> = harness.event_types();
    assert_eq!(
        types
            .iter()
            .filter(|t| **t == "approval_edit_rejected")
            .count(),
        2
    );
    assert_eq!(types.iter().filter(|t| **t == "tool_denied").count(), 0);
    // The approval is still usable afterwards.
    let outcome = resume(&harness, &model, checkpoint, approve())
        .await
        .unwrap();
    assert_eq!(outcome.status(), "completed");
    assert_eq!(harness.write.executions().len(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn reject_tells_the_model_and_continues() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(0, &[("write_thing", r#"{"path":"a.txt","content":"1"}"#)]),
        text("ok, I will not write"),
    ]);
    let checkpoint = suspended(&harness, &model).await;
    let outcome = resume(
        &harness,
        &model,
        checkpoint,
        Resolution::Reject {
            reason: Some("wrong folder".into()),
        },
    )
    .await
    .unwrap();
    assert_eq!(outcome.status(), "completed");
    assert!(harness.write.executions().is_empty());
    let last = model.requests()[1].messages.last().cloned().unwrap();
    assert_eq!(
        last,
        Message::tool("c0_0", "error: rejected by the operator: wrong folder")
    );
    assert!(!harness.event_types().contains(&"tool_denied"));
}

#[tokio::test(flavor = "current_thread")]
async fn resume_uses_the_fresh_policy_it_is_given() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(0, &[("write_thing", r#"{"path":"a.txt","content":"1"}"#)]),
        text("done"),
    ]);
    let checkpoint = suspended(&harness, &model).await;
    // The world changed while the person decided: the new gate refuses the path.
    let refusing = |_: &ToolSpec, _: &Value| {
        Decision::Deny(Denial::new(
            DenyRule::SymlinkEscape,
            "path `a.txt` leads outside",
        ))
    };
    let outcome = Agent::new(&model, &harness.registry, &refusing, &harness.log)
        .resume(checkpoint, approve())
        .await
        .unwrap();
    assert_eq!(outcome.status(), "completed");
    assert!(harness.write.executions().is_empty());
    assert!(harness.event_types().contains(&"tool_denied"));
}

#[tokio::test(flavor = "current_thread")]
async fn checkpoints_round_trip_through_json_and_keep_counters() {
    let harness = Harness::new();
    let model = QueueModel::new(vec![
        calls(0, &[("read_thing", r#"{"path":"/abs"}"#)]),
        calls(1, &[("write_thing", r#"{"path":"a.txt","content":"1"}"#)]),
        calls(2, &[("read_thing", r#"{"path":"../x"}"#)]),
        calls(3, &[("read_thing", r#"{"path":"../y"}"#)]),
    ]);
    let checkpoint = suspended(&harness, &model).await;
    assert_eq!(checkpoint.denials, 1);
    assert_eq!(checkpoint.tokens_used, 30);
    let json = serde_json::to_string(&checkpoint).unwrap();
    let restored: Checkpoint = serde_json::from_str(&json).unwrap();
    assert_eq!(restored, checkpoint);
    // The denial cap spans the resume: two more denials fail the task.
    let outcome = resume(&harness, &model, restored, approve()).await.unwrap();
    assert!(matches!(
        outcome,
        Outcome::Failed {
            reason: pp_types::FailureReason::PolicyViolation,
            ..
        }
    ));
}
