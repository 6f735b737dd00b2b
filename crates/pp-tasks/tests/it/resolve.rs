//! Resolving approvals: exactly once, stale targets, edits, rejections.

use pp_tasks::{Decision, ResolveRequest};
use pp_types::{Actor, ApprovalId, ApprovalState, TaskState};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::fixture::{Fixture, approve, write_then_done};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_simultaneous_resolves_execute_the_tool_once() {
    let fixture = Fixture::new();
    let task = fixture.run(write_then_done("once.txt", "1")).await;
    let pending = fixture.pending(&task.id).await;
    // Half through this service, half through "another process" on the same database.
    let other = fixture.another_process();
    let mut handles = Vec::new();
    for i in 0..24 {
        let service = if i % 2 == 0 {
            fixture.service.clone()
        } else {
            other.clone()
        };
        let id = pending.id.clone();
        handles.push(tokio::spawn(async move {
            service.resolve(&id, approve()).await
        }));
    }
    assert_eq!(outcomes(handles).await, (1, 23));
    assert_eq!(fixture.audit_count("approval_approved").await, 1);
    assert_eq!(fixture.audit_count("tool_executed").await, 1);
    let types = fixture.event_types(&task.id).await;
    assert_eq!(types.iter().filter(|t| **t == "tool_result").count(), 1);
    assert_eq!(fixture.tree.read("once.txt"), "1");
}

/// How many of the resolves `handles` ran were accepted, and how many found the approval
/// already resolved (any other answer fails the test).
async fn outcomes(
    handles: Vec<tokio::task::JoinHandle<Result<pp_types::TaskRecord, pp_tasks::Error>>>,
) -> (usize, usize) {
    let (mut ok, mut conflicts) = (0, 0);
    for handle in handles {
        match handle.await.unwrap() {
            Ok(_) => ok += 1,
            Err(pp_tasks::Error::AlreadyResolved { .. }) => conflicts += 1,
            Err(error) => panic!("unexpected {error}"),
        }
    }
    (ok, conflicts)
}

/// More decisions arrive together than are checked at once (16): the others wait their
/// turn, and every one is still decided exactly once and every task runs on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_beyond_those_checked_at_once_wait_their_turn_and_each_lands_once() {
    let fixture = Fixture::new();
    let mut pending = Vec::new();
    for i in 0..40 {
        let task = fixture
            .run(write_then_done(&format!("f{i}.txt"), &i.to_string()))
            .await;
        pending.push((task.id.clone(), fixture.pending(&task.id).await.id));
    }
    let mut handles = Vec::new();
    // Each approval twice, all at once, as a console tab and a phone might.
    for _ in 0..2 {
        for (_, approval) in &pending {
            let (service, id) = (fixture.service.clone(), approval.clone());
            handles.push(tokio::spawn(async move {
                service.resolve(&id, approve()).await
            }));
        }
    }
    assert_eq!(outcomes(handles).await, (40, 40));
    assert_eq!(fixture.audit_count("approval_approved").await, 40);
    assert_eq!(fixture.audit_count("tool_executed").await, 40);
    for (i, (task, _)) in pending.iter().enumerate() {
        assert_eq!(fixture.wait_for_end(task).await.state, TaskState::Completed);
        assert_eq!(fixture.tree.read(&format!("f{i}.txt")), i.to_string());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_changed_before_approval_makes_the_approval_stale() {
    let fixture = Fixture::new();
    fixture.tree.file("report.md", "v1\n");
    let task = fixture
        .run(json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "report.md", "content": "mine\n"}}]},
            {"content": "I will read it again"}
        ]))
        .await;
    let pending = fixture.pending(&task.id).await;
    // Someone edits the file after the person was shown the diff.
    fixture.tree.file("report.md", "v2 by someone else\n");
    let done = fixture
        .service
        .resolve(&pending.id, approve())
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(
        fixture.tree.read("report.md"),
        "v2 by someone else\n",
        "not overwritten"
    );
    let approval = fixture.store().approval(&pending.id).await.unwrap();
    assert_eq!(approval.state, ApprovalState::Stale);
    assert!(
        approval
            .reason
            .unwrap()
            .contains("changed after the approval was requested")
    );
    assert_eq!(fixture.audit_count("approval_stale").await, 1);
    assert_eq!(fixture.audit_count("tool_executed").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_edit_is_refused_and_the_approval_stays_pending() {
    let fixture = Fixture::new();
    fixture.tree.outside_file("keep.txt", "outside");
    let task = fixture.run(write_then_done("a.txt", "x")).await;
    let pending = fixture.pending(&task.id).await;
    for edited in [
        json!({"path": "../outside/keep.txt", "content": "pwned"}),
        json!({"path": "a.txt"}),
        json!({"path": "a.txt", "content": "x", "extra": true}),
    ] {
        let request = ResolveRequest {
            edited_arguments: Some(edited),
            ..approve()
        };
        let error = fixture
            .service
            .resolve(&pending.id, request)
            .await
            .unwrap_err();
        assert!(
            matches!(error, pp_tasks::Error::InvalidArguments(_)),
            "{error}"
        );
    }
    let approval = fixture.store().approval(&pending.id).await.unwrap();
    assert_eq!(approval.state, ApprovalState::Pending);
    assert_eq!(fixture.tree.outside_snapshot()[0].1, b"outside");
    let types = fixture.event_types(&task.id).await;
    assert_eq!(
        types
            .iter()
            .filter(|t| **t == "approval_edit_rejected")
            .count(),
        3
    );

    // A valid edit is approved and runs with the edited arguments.
    let request = ResolveRequest {
        edited_arguments: Some(json!({"path": "b.txt", "content": "edited"})),
        ..approve()
    };
    let done = fixture.service.resolve(&pending.id, request).await.unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(fixture.tree.read("b.txt"), "edited");
    assert!(!fixture.tree.exists("a.txt"));
    let approval = fixture.store().approval(&pending.id).await.unwrap();
    assert_eq!(
        approval.edited_arguments,
        Some(json!({"path": "b.txt", "content": "edited"}))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_continues_and_the_next_write_asks_again() {
    let fixture = Fixture::new();
    let task = fixture
        .run(json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "1"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "2"}}]},
            {"content": "done"}
        ]))
        .await;
    let first = fixture.pending(&task.id).await;
    let request = ResolveRequest {
        decision: Decision::Reject,
        edited_arguments: None,
        reason: Some("not that one".into()),
        seen_fingerprint: None,
        actor: Actor::Operator,
        wait: true,
        via: Some(pp_types::Via::Api),
        remote_user: None,
    };
    let after = fixture.service.resolve(&first.id, request).await.unwrap();
    assert_eq!(
        after.state,
        TaskState::WaitingApproval,
        "the second write asks again"
    );
    let second = fixture.pending(&task.id).await;
    assert_ne!(first.id, second.id);
    assert_eq!(fixture.audit_count("approval_rejected").await, 1);
    let rejected = fixture.store().approval(&first.id).await.unwrap();
    assert_eq!(rejected.reason.as_deref(), Some("not that one"));
    let done = fixture
        .service
        .resolve(&second.id, approve())
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert!(!fixture.tree.exists("a.txt"));
    assert_eq!(fixture.tree.read("b.txt"), "2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolving_without_waiting_returns_once_the_decision_is_durable() {
    let fixture = Fixture::new();
    let task = fixture.run(write_then_done("a.txt", "x")).await;
    let pending = fixture.pending(&task.id).await;
    let request = ResolveRequest {
        wait: false,
        ..approve()
    };
    let returned = fixture.service.resolve(&pending.id, request).await.unwrap();
    assert_eq!(returned.state, TaskState::Running);
    let approval = fixture.store().approval(&pending.id).await.unwrap();
    assert_eq!(approval.state, ApprovalState::Approved);
    assert_eq!(
        fixture.wait_for_end(&task.id).await.state,
        TaskState::Completed
    );
    let error = fixture
        .service
        .resolve(&pending.id, approve())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("approval {} is already approved", pending.id)
    );
}

/// A service with one worker, held by a slow read until the returned handle finishes.
async fn with_the_only_worker_busy(
    millis: u64,
) -> (
    crate::fixture::Fixture,
    tokio::task::JoinHandle<pp_types::TaskRecord>,
) {
    let fixture = crate::fixture::Fixture::with(pp_tasks::TaskSettings {
        workers: 1,
        poll_interval: std::time::Duration::from_millis(20),
        ..pp_tasks::TaskSettings::default()
    });
    let busy = fixture
        .create(json!([
            {"tool_calls": [{"name": "slow_read", "arguments": {"millis": millis}}]},
            {"content": "done"}
        ]))
        .await;
    let service = fixture.service.clone();
    let id = busy.id.clone();
    let handle = tokio::spawn(async move { service.run_now(&id).await.unwrap() });
    // The worker is taken once the busy task runs.
    fixture.wait_for_state(&busy.id, TaskState::Running).await;
    (fixture, handle)
}

/// Creates a task that waits for approval to overwrite `notes.txt`, without a worker
/// (the suspension is driven by a second service on the same database).
async fn waiting_overwrite(
    fixture: &crate::fixture::Fixture,
) -> (pp_types::TaskId, pp_types::ApprovalId) {
    fixture.tree.file("notes.txt", "v1\n");
    let other = fixture.another_process();
    let task = other
        .create(pp_tasks::CreateTask {
            prompt: "overwrite".into(),
            workspace: None,
            actor: Actor::Operator,
            script: Some(write_then_done("notes.txt", "model\n")),
        })
        .await
        .unwrap();
    let task = other.run_now(&task.id).await.unwrap();
    assert_eq!(task.state, TaskState::WaitingApproval);
    let pending = fixture.pending(&task.id).await;
    (task.id, pending.id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_after_the_approval_won_is_refused_and_the_approved_call_runs() {
    let (fixture, busy) = with_the_only_worker_busy(400).await;
    let (task, approval) = waiting_overwrite(&fixture).await;
    let request = ResolveRequest {
        wait: false,
        ..approve()
    };
    fixture.service.resolve(&approval, request).await.unwrap();
    // The approved call waits for the only worker: the person's approval won, so a
    // cancel now loses instead of stopping the call halfway or lying about it.
    let error = fixture.service.cancel(&task).await.unwrap_err();
    assert!(
        matches!(
            error,
            pp_tasks::Error::InvalidState {
                state: TaskState::Running,
                ..
            }
        ),
        "{error}"
    );
    busy.await.unwrap();
    let done = fixture.wait_for_end(&task).await;
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(fixture.tree.read("notes.txt"), "model\n");
    let actions = fixture.audit_actions(&task).await;
    assert!(
        !actions.contains(&"task_cancelled".to_owned()),
        "{actions:?}"
    );
    assert!(actions.contains(&"tool_executed".to_owned()), "{actions:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staleness_is_checked_again_right_before_the_call_runs() {
    let (fixture, busy) = with_the_only_worker_busy(400).await;
    let (task, approval) = waiting_overwrite(&fixture).await;
    let request = ResolveRequest {
        wait: false,
        ..approve()
    };
    fixture.service.resolve(&approval, request).await.unwrap();
    // The person approved what they saw; then the file changes before the call runs.
    fixture.tree.file("notes.txt", "v2 by the person\n");
    busy.await.unwrap();
    assert_eq!(
        fixture.wait_for_end(&task).await.state,
        TaskState::Completed
    );
    assert_eq!(fixture.tree.read("notes.txt"), "v2 by the person\n");
    let record = fixture.store().approval(&approval).await.unwrap();
    assert_eq!(record.state, ApprovalState::Stale);
    assert_eq!(fixture.audit_count("tool_executed").await, 0);
    assert_eq!(fixture.audit_count("approval_stale").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_that_keeps_the_target_is_still_checked_for_staleness() {
    let fixture = Fixture::new();
    let (task, approval) = waiting_overwrite(&fixture).await;
    fixture.tree.file("notes.txt", "v2 by the person\n");
    let request = ResolveRequest {
        edited_arguments: Some(json!({"path": "./notes.txt", "content": "typo fixed\n"})),
        ..approve()
    };
    let done = fixture.service.resolve(&approval, request).await.unwrap();
    assert_eq!(done.id, task);
    assert_eq!(fixture.tree.read("notes.txt"), "v2 by the person\n");
    assert_eq!(
        fixture.store().approval(&approval).await.unwrap().state,
        ApprovalState::Stale
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_cannot_forge_audit_rows_under_an_approval() {
    let fixture = Fixture::new();
    fixture.tree.file("r.txt", "read me\n");
    let task = fixture
        .run(json!([
            {"tool_calls": [{"id": "dup", "name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}]},
            {"tool_calls": [
                {"id": "dup", "name": "read_file", "arguments": {"path": "r.txt"}},
                {"id": "dup", "name": "read_file", "arguments": {"path": "/etc/passwd"}}
            ]},
            {"content": "done"}
        ]))
        .await;
    let pending = fixture.pending(&task.id).await;
    let done = fixture
        .service
        .resolve(&pending.id, approve())
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Completed);
    let rows = fixture
        .store()
        .list_audit(&pp_store::AuditFilter {
            actor: Some(Actor::Agent),
            task_id: Some(task.id.clone()),
            action: None,
            before_id: None,
            exclude: Vec::new(),
            limit: 100,
        })
        .await
        .unwrap();
    let mut under_approval: Vec<_> = rows
        .iter()
        .filter(|row| row.approval_id.is_some())
        .collect();
    under_approval.sort_by_key(|row| row.id);
    let actions: Vec<&str> = under_approval
        .iter()
        .map(|row| row.action.as_str())
        .collect();
    assert_eq!(actions, ["tool_started", "tool_executed"], "{rows:#?}");
    assert!(
        under_approval
            .iter()
            .all(|row| row.tool.as_deref() == Some("write_file"))
    );
    let denied: Vec<_> = rows
        .iter()
        .filter(|row| row.action == "tool_denied")
        .collect();
    assert_eq!(denied.len(), 1);
    assert_eq!(denied[0].tool.as_deref(), Some("read_file"));
    assert_eq!(rows.len(), 3, "reads are not side effects: {rows:#?}");
}

/// A resolve waiting for its turn among the decisions checked at once holds only what
/// it was given and its place in line; the decision's state (its records, segment and
/// verdict: about 15 KB before it was boxed) is allocated once the turn comes. A
/// thousand resolves released together wait in a few hundred kilobytes.
#[tokio::test]
async fn a_resolve_waiting_its_turn_is_a_small_future() {
    let fixture = Fixture::new();
    let id = ApprovalId("appr_waiting".into());
    let waiting = fixture.service.resolve(&id, approve());
    let size = std::mem::size_of_val(&waiting);
    assert!(size <= 1024, "a waiting resolve is {size} bytes");
}
