//! The tool seam's acceptance test: `stamp_files`, from a provider defined only in
//! pp-test-support (`Stamps`), is offered, gated, previewed and stale-checked by the
//! task service exactly like the built-in tools — pp-tasks knows nothing about it.

use pp_types::{ApprovalState, EventKind, TaskState};
use serde_json::{Value, json};

use crate::fixture::{Fixture, approve};

fn stamp(paths: &Value) -> Value {
    json!([
        {"tool_calls": [{"name": "stamp_files", "arguments": {"paths": paths, "stamp": "seen"}}]},
        {"content": "done"}
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_provider_is_offered_previewed_and_approved() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "a\n");
    fixture.tree.file("b.txt", "b\n");
    let task = fixture.run(stamp(&json!(["a.txt", "b.txt"]))).await;
    assert_eq!(task.state, TaskState::WaitingApproval, "stamp:update asks");

    let pending = fixture.pending(&task.id).await;
    assert_eq!(pending.tool, "stamp_files");
    assert_eq!(pending.capability, "stamp:update");
    assert_eq!(
        pending.target.as_deref(),
        Some("a.txt"),
        "the tool names it"
    );
    let preview = pending
        .checkpoint
        .pending
        .preview
        .clone()
        .expect("a preview");
    assert_eq!(
        preview.content.as_deref(),
        Some("append \"seen\" to a.txt, b.txt")
    );
    assert!(pending.fingerprint.as_deref().unwrap().contains(';'));

    let done = fixture
        .service
        .resolve(&pending.id, approve())
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(fixture.tree.read("a.txt"), "a\nseen\n");
    assert_eq!(fixture.tree.read("b.txt"), "b\nseen\n");
    assert_eq!(fixture.audit_count("tool_executed").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_to_any_target_of_a_foreign_tool_makes_the_approval_stale() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "a\n");
    fixture.tree.file("b.txt", "b\n");
    let task = fixture.run(stamp(&json!(["a.txt", "b.txt"]))).await;
    let pending = fixture.pending(&task.id).await;
    // The second path, not the first: the stale check is the tool's, not "path"'s.
    fixture.tree.file("b.txt", "b changed\n");
    let done = fixture
        .service
        .resolve(&pending.id, approve())
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Completed);
    let approval = fixture.store().approval(&pending.id).await.unwrap();
    assert_eq!(approval.state, ApprovalState::Stale);
    assert_eq!(fixture.tree.read("a.txt"), "a\n", "nothing written");
    assert_eq!(fixture.tree.read("b.txt"), "b changed\n");
    assert_eq!(fixture.audit_count("tool_executed").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_element_of_a_path_array_is_gated_and_escapes_count_as_denials() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "a\n");
    fixture.tree.outside_file("secret.txt", "TOP-SECRET");
    // The escape hides in the second element; three tries exhaust max_denials (3).
    let escape = json!({"paths": ["a.txt", "../outside/secret.txt"], "stamp": "x"});
    let call = json!({"tool_calls": [{"name": "stamp_files", "arguments": escape}]});
    let task = fixture
        .run(json!([call, call, call, {"content": "gave up"}]))
        .await;
    assert_eq!(task.state, TaskState::Failed);
    assert_eq!(
        task.failure_reason.map(|reason| reason.as_str()),
        Some("policy_violation")
    );
    let events = fixture.store().task_events(&task.id, 0).await.unwrap();
    let denials = events
        .iter()
        .filter(|stored| matches!(stored.event.kind, EventKind::ToolDenied { .. }))
        .count();
    assert_eq!(denials, 3);
    assert!(
        fixture
            .store()
            .approvals_for_task(&task.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(fixture.tree.read("a.txt"), "a\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_array_that_is_not_an_array_of_strings_is_denied() {
    let fixture = Fixture::new();
    let task = fixture
        .run(json!([
            {"tool_calls": [{"name": "stamp_files", "arguments": {"paths": "a.txt", "stamp": "x"}}]},
            {"content": "ok"}
        ]))
        .await;
    // The schema refuses a string where an array is declared before the gate is asked;
    // either way nothing runs and no approval is asked for.
    assert_ne!(task.state, TaskState::WaitingApproval);
    assert!(
        fixture
            .store()
            .approvals_for_task(&task.id)
            .await
            .unwrap()
            .is_empty()
    );
}
