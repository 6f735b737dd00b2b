//! Surviving restarts: waiting tasks resume in another process, running ones become
//! interrupted and are retried safely.

use pp_store::TaskChange;
use pp_types::{ApprovalState, TaskState};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::fixture::{Fixture, approve};

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_waiting_task_is_resolved_by_another_process_at_the_right_script_turn() {
    let fixture = Fixture::new();
    fixture.tree.file("a.txt", "a\n");
    let task = fixture
        .run(json!([
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "b"}}]},
            {"content": "finished at turn three"}
        ]))
        .await;
    assert_eq!(task.state, TaskState::WaitingApproval);
    assert_eq!(task.script_position, 2);
    let pending = fixture.pending(&task.id).await;
    // "Restart": a brand-new service on the same database resolves it.
    let other = fixture.another_process();
    let done = other.resolve(&pending.id, approve()).await.unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(done.final_text.as_deref(), Some("finished at turn three"));
    assert_eq!(fixture.tree.read("b.txt"), "b");
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_task_left_with_a_cancel_request_is_recovered_cancelled_not_interrupted() {
    let fixture = Fixture::new();
    let task = fixture.create(json!([{"content": "never"}])).await;
    let operator = pp_tasks::Caller::operator();
    // Nothing is recorded for a task that does not run.
    assert!(
        !fixture
            .service
            .request_cancel_and_leave(&task.id, &operator)
            .await
            .unwrap()
    );
    // A process claimed it; the person asked to cancel and the process left at once.
    fixture.store().claim_queued().await.unwrap().unwrap();
    assert!(
        fixture
            .service
            .request_cancel_and_leave(&task.id, &operator)
            .await
            .unwrap()
    );
    // No lease to wait for: the process gave the task up when it recorded the request.
    let recovered = fixture.another_process().recover().await.unwrap();
    assert_eq!(recovered.interrupted, Vec::<pp_types::TaskId>::new());
    assert_eq!(recovered.cancelled, vec![task.id.clone()]);
    let record = fixture.store().task(&task.id).await.unwrap();
    assert_eq!(record.state, TaskState::Cancelled);
    let types = fixture.event_types(&task.id).await;
    assert!(types.contains(&"task_cancelled"), "{types:?}");
    assert!(!types.contains(&"task_interrupted"), "{types:?}");
    // Cancelled is final: nothing to retry.
    let error = fixture.service.retry(&task.id).await.unwrap_err();
    assert!(matches!(error, pp_tasks::Error::InvalidState { .. }));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn running_tasks_become_interrupted_and_retry_from_the_prompt() {
    let fixture = Fixture::new();
    let task = fixture.create(json!([{"content": "hello again"}])).await;
    // A process claimed it and died.
    fixture.store().claim_queued().await.unwrap().unwrap();
    crate::fixture::outlive_the_lease().await;
    let interrupted = fixture
        .another_process()
        .recover()
        .await
        .unwrap()
        .interrupted;
    assert_eq!(interrupted, vec![task.id.clone()]);
    let record = fixture.store().task(&task.id).await.unwrap();
    assert_eq!(record.state, TaskState::Interrupted);
    assert!(
        fixture
            .event_types(&task.id)
            .await
            .contains(&"task_interrupted")
    );

    let retried = fixture.service.retry(&task.id).await.unwrap();
    assert_eq!(retried.state, TaskState::Queued);
    let done = fixture.service.run_now(&task.id).await.unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(done.final_text.as_deref(), Some("hello again"));
    let error = fixture.service.retry(&task.id).await.unwrap_err();
    assert!(matches!(error, pp_tasks::Error::InvalidState { .. }));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn an_interruption_after_an_approval_asks_for_it_again() {
    let fixture = Fixture::new();
    let task = fixture
        .run(json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
            {"content": "done"}
        ]))
        .await;
    let pending = fixture.pending(&task.id).await;
    // The decision became durable, then the process died before running the call: mark
    // the approval approved and the task running, exactly as `resolve` leaves them.
    let store = fixture.store();
    store
        .resolve(
            &pending.id,
            pp_store::Resolve {
                state: ApprovalState::Approved,
                actor: pp_types::Actor::Operator,
                reason: None,
                edited_arguments: None,
                edited_preview: None,
                fingerprint: None,
                audit: pp_types::NewAudit {
                    ..pp_types::NewAudit::new(pp_types::AuditAction::ApprovalApproved)
                },
                task_to: TaskState::Running,
                events: Vec::new(),
            },
        )
        .await
        .unwrap();
    crate::fixture::outlive_the_lease().await;
    fixture.another_process().recover().await.unwrap();
    assert!(!fixture.tree.exists("a.txt"));

    let retried = fixture.service.retry(&task.id).await.unwrap();
    assert_eq!(
        retried.state,
        TaskState::WaitingApproval,
        "asks again, never runs blind"
    );
    let again = fixture.pending(&task.id).await;
    assert_ne!(again.id, pending.id);
    assert_eq!(again.arguments, pending.arguments);
    let done = fixture.service.resolve(&again.id, approve()).await.unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(fixture.tree.read("a.txt"), "x");
    let _ = TaskChange::to(TaskState::Queued);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn another_process_starting_up_leaves_a_live_run_alone() {
    let fixture = Fixture::new();
    let task = fixture
        .create(json!([
            {"tool_calls": [{"name": "slow_read", "arguments": {"millis": 700}}]},
            {"content": "finished"}
        ]))
        .await;
    let service = fixture.service.clone();
    let id = task.id.clone();
    let run = tokio::spawn(async move { service.run_now(&id).await.unwrap() });
    // Well past the lease (on paused time): the live run keeps its heartbeat fresh.
    tokio::time::sleep(crate::fixture::LEASE * 2 + std::time::Duration::from_millis(50)).await;
    let interrupted = fixture
        .another_process()
        .recover()
        .await
        .unwrap()
        .interrupted;
    assert!(interrupted.is_empty(), "{interrupted:?}");
    let done = run.await.unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(done.final_text.as_deref(), Some("finished"));
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_workers_interrupt_a_dead_runners_task_while_they_poll() {
    let fixture = Fixture::new();
    let task = fixture.create(json!([{"content": "never"}])).await;
    fixture.store().claim_queued().await.unwrap().unwrap();
    let other = fixture.another_process();
    other.start_workers();
    let store = fixture.store();
    for _ in 0..100 {
        if store.task(&task.id).await.unwrap().state == TaskState::Interrupted {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        store.task(&task.id).await.unwrap().state,
        TaskState::Interrupted
    );
}

/// Issue 29, item 3: a retry continues after the last call whose result is recorded,
/// with that result as its answer; the person is not asked again for a write that ran,
/// and it does not run again.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_retry_continues_after_the_last_recorded_result() {
    let fixture = Fixture::new();
    fixture.tree.file("notes.txt", "n\n");
    let task = fixture
        .run(json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
            {"content": "finished after the write"}
        ]))
        .await;
    let pending = fixture.pending(&task.id).await;
    let done = fixture
        .service
        .resolve(&pending.id, approve())
        .await
        .unwrap();
    let mut done = done;
    for _ in 0..500 {
        if done.state == TaskState::Completed {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        done = fixture.store().task(&task.id).await.unwrap();
    }
    assert_eq!(fixture.tree.read("a.txt"), "x");
    // The state a process leaves when it dies during the read after the write: the
    // write's result recorded, the task running with no heartbeat any more.
    fixture
        .store()
        .transition(
            &task.id,
            &[TaskState::Completed],
            TaskChange::to(TaskState::Running),
        )
        .await
        .unwrap();
    crate::fixture::outlive_the_lease().await;
    let interrupted = fixture
        .another_process()
        .recover()
        .await
        .unwrap()
        .interrupted;
    assert_eq!(interrupted, vec![task.id.clone()]);
    // Someone edits the file meanwhile: a write run again would undo it.
    std::fs::write(fixture.tree.workspace().join("a.txt"), "edited by hand").unwrap();

    let retried = fixture.service.retry(&task.id).await.unwrap();
    assert_eq!(retried.state, TaskState::Queued);
    let done = fixture.service.run_now(&task.id).await.unwrap();
    assert_eq!(done.state, TaskState::Completed, "{done:?}");
    assert_eq!(
        done.final_text.as_deref(),
        Some("finished after the write"),
        "the model went on from the step after the write"
    );
    assert_eq!(
        fixture.tree.read("a.txt"),
        "edited by hand",
        "not written again"
    );
    let approvals = fixture.store().approvals_for_task(&task.id).await.unwrap();
    assert_eq!(approvals.len(), 1, "nothing asked twice: {approvals:?}");
    let events = fixture.store().task_events(&task.id, 0).await.unwrap();
    let retried_message = events
        .iter()
        .find_map(|stored| match &stored.event.kind {
            pp_types::EventKind::TaskRetried { message } => Some(message.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        retried_message.contains("continuing after `write_file`"),
        "{retried_message}"
    );
    // The read after the write ran again (reads repeat).
    let reads = events
        .iter()
        .filter(|stored| {
            matches!(&stored.event.kind, pp_types::EventKind::ToolResult { name, .. } if name == "read_file")
        })
        .count();
    assert_eq!(reads, 2);
}

/// With no recorded result to continue from, a retry starts again from the prompt.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_retry_with_nothing_recorded_starts_from_the_prompt() {
    let fixture = Fixture::new();
    let task = fixture.create(json!([{"content": "from the top"}])).await;
    fixture.store().claim_queued().await.unwrap().unwrap();
    crate::fixture::outlive_the_lease().await;
    fixture.another_process().recover().await.unwrap();
    let retried = fixture.service.retry(&task.id).await.unwrap();
    assert_eq!(
        (retried.state, retried.script_position),
        (TaskState::Queued, 0)
    );
}

/// Issue 29, item 3: a call cut between its `tool_started` row and its result (the
/// process died while the write ran) is asked again as a new approval whose card says
/// "this call may already have run", with the target before the call against now.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_call_cut_after_it_started_is_asked_again_saying_it_may_have_run() {
    let fixture = Fixture::new();
    let task = fixture
        .run(json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x\n"}}]},
            {"content": "done"}
        ]))
        .await;
    let pending = fixture.pending(&task.id).await;
    let store = fixture.store();
    // The decision became durable and the call started, exactly as `resolve` and the
    // runner leave them: the approval approved, the task running, the target's state
    // before the call kept with the `tool_started` row …
    store
        .resolve(&pending.id, approved_in_store())
        .await
        .unwrap();
    store
        .call_started(
            pp_store::NewStartedCall {
                approval_id: pending.id.clone(),
                task_id: task.id.clone(),
                tool: pending.tool.clone(),
                target: pending.target.clone(),
                files: vec![pp_store::StartedFile {
                    root: pp_types::ChangeRoot::Workspace,
                    path: "a.txt".into(),
                    before: pp_store::Before::Absent,
                    size: None,
                }],
            },
            pp_types::NewAudit {
                task_id: Some(task.id.clone()),
                approval_id: Some(pending.id.clone()),
                tool: Some(pending.tool.clone()),
                ..pp_types::NewAudit::new(pp_types::AuditAction::ToolStarted)
            },
        )
        .await
        .unwrap();
    // … then the write happened and the process died before recording its result.
    fixture.tree.file("a.txt", "x\n");
    crate::fixture::outlive_the_lease().await;
    fixture.another_process().recover().await.unwrap();

    let retried = fixture.service.retry(&task.id).await.unwrap();
    assert_eq!(
        retried.state,
        TaskState::WaitingApproval,
        "asked, never run blind"
    );
    let again = fixture.pending(&task.id).await;
    assert_ne!(again.id, pending.id, "a new approval");
    assert_eq!(again.arguments, pending.arguments);
    let card = fixture
        .service
        .approval_view_checked(&again.id)
        .await
        .unwrap();
    let notice = card.may_have_run.expect("the card says it may have run");
    assert!(
        notice.message.starts_with("this call may already have run"),
        "{}",
        notice.message
    );
    assert_eq!(notice.approval_id, pending.id.to_string());
    assert_eq!(notice.targets.len(), 1);
    let target = &notice.targets[0];
    assert_eq!(target.path, "a.txt");
    assert_eq!(
        (target.before, target.now, target.now_size, target.changed),
        (
            pp_tasks::PathState::Absent,
            pp_tasks::PathState::File,
            Some(2),
            Some(true)
        )
    );
    let diff = target.diff.as_deref().unwrap();
    assert!(diff.contains("+x"), "{diff}");
    // The timeline says so too, and the list row flags it.
    let events = store.task_events(&task.id, 0).await.unwrap();
    assert!(events.iter().any(|stored| matches!(
        &stored.event.kind,
        pp_types::EventKind::TaskRetried { message } if message.contains("may already have run")
    )));
    let rows = fixture
        .service
        .approval_views(Some(ApprovalState::Pending), 10)
        .await
        .unwrap();
    let row = pp_tasks::ApprovalRow::from(
        rows.into_iter()
            .find(|v| v.id == again.id.to_string())
            .unwrap(),
    );
    assert!(row.may_have_run);
    // The earlier card (the cut call's) carries no such notice; approving the new one
    // runs the write once more, as the person decided.
    let earlier = fixture.service.approval_view(&pending.id).await.unwrap();
    assert_eq!(earlier.may_have_run, None);
    let done = fixture.service.resolve(&again.id, approve()).await.unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(fixture.tree.read("a.txt"), "x\n");
}

/// A retry after an approved call that never started asks again without the notice:
/// nothing of it can have run.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_call_that_never_started_is_asked_again_without_the_notice() {
    let fixture = Fixture::new();
    let task = fixture
        .run(json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]},
            {"content": "done"}
        ]))
        .await;
    let pending = fixture.pending(&task.id).await;
    fixture
        .store()
        .resolve(&pending.id, approved_in_store())
        .await
        .unwrap();
    crate::fixture::outlive_the_lease().await;
    fixture.another_process().recover().await.unwrap();
    fixture.service.retry(&task.id).await.unwrap();
    let again = fixture.pending(&task.id).await;
    let card = fixture
        .service
        .approval_view_checked(&again.id)
        .await
        .unwrap();
    assert_eq!(card.may_have_run, None);
}

/// The store's decision as `resolve` records it: approved, the task to `running` once the
/// changeset's last decision is in.
fn approved_in_store() -> pp_store::Resolve {
    pp_store::Resolve {
        state: ApprovalState::Approved,
        actor: pp_types::Actor::Operator,
        reason: None,
        edited_arguments: None,
        edited_preview: None,
        fingerprint: None,
        audit: pp_types::NewAudit::new(pp_types::AuditAction::ApprovalApproved),
        task_to: TaskState::Running,
        events: Vec::new(),
    }
}

/// A call cut in a changeset of two: the retry continues after the last recorded write,
/// the model asks the changeset again, and only the approval of the call that started
/// says it may already have run.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_cut_call_asked_again_by_the_model_after_a_continuation_says_it_may_have_run() {
    let fixture = Fixture::new();
    let task = fixture
        .run(json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "a"}}]},
            {"tool_calls": [
                {"name": "write_file", "arguments": {"path": "b.txt", "content": "b"}},
                {"name": "write_file", "arguments": {"path": "c.txt", "content": "c"}}
            ]},
            {"content": "done"}
        ]))
        .await;
    let first = fixture.pending(&task.id).await;
    fixture.service.resolve(&first.id, approve()).await.unwrap();
    fixture
        .wait_for_state(&task.id, TaskState::WaitingApproval)
        .await;
    assert_eq!(fixture.tree.read("a.txt"), "a");
    let store = fixture.store();
    let pair: Vec<_> = store
        .approvals_for_task(&task.id)
        .await
        .unwrap()
        .into_iter()
        .filter(|approval| approval.state == ApprovalState::Pending)
        .collect();
    assert_eq!(pair.len(), 2);
    for approval in &pair {
        store
            .resolve(&approval.id, approved_in_store())
            .await
            .unwrap();
    }
    // `b.txt`'s call started (and wrote) and the process died; `c.txt`'s never started.
    let b = pair
        .iter()
        .find(|a| a.target.as_deref() == Some("b.txt"))
        .unwrap();
    store
        .call_started(
            pp_store::NewStartedCall {
                approval_id: b.id.clone(),
                task_id: task.id.clone(),
                tool: b.tool.clone(),
                target: b.target.clone(),
                files: vec![pp_store::StartedFile {
                    root: pp_types::ChangeRoot::Workspace,
                    path: "b.txt".into(),
                    before: pp_store::Before::Absent,
                    size: None,
                }],
            },
            pp_types::NewAudit {
                task_id: Some(task.id.clone()),
                approval_id: Some(b.id.clone()),
                ..pp_types::NewAudit::new(pp_types::AuditAction::ToolStarted)
            },
        )
        .await
        .unwrap();
    fixture.tree.file("b.txt", "b");
    crate::fixture::outlive_the_lease().await;
    fixture.another_process().recover().await.unwrap();

    let retried = fixture.service.retry(&task.id).await.unwrap();
    assert_eq!(retried.state, TaskState::Queued, "continues after `a.txt`");
    let waiting = fixture.service.run_now(&task.id).await.unwrap();
    assert_eq!(waiting.state, TaskState::WaitingApproval, "{waiting:?}");
    let again: Vec<_> = store
        .approvals_for_task(&task.id)
        .await
        .unwrap()
        .into_iter()
        .filter(|approval| approval.state == ApprovalState::Pending)
        .collect();
    assert_eq!(again.len(), 2, "the model asked the changeset again");
    for approval in &again {
        let card = fixture.service.approval_view(&approval.id).await.unwrap();
        match approval.target.as_deref() {
            Some("b.txt") => {
                let notice = card.may_have_run.expect("b.txt may have run");
                assert_eq!(notice.approval_id, b.id.to_string());
                assert_eq!(notice.targets[0].changed, Some(true));
            }
            _ => assert_eq!(card.may_have_run, None, "c.txt never started"),
        }
    }
    // `a.txt` was not asked again: its write is recorded.
    let asked_a = store
        .approvals_for_task(&task.id)
        .await
        .unwrap()
        .iter()
        .filter(|approval| approval.target.as_deref() == Some("a.txt"))
        .count();
    assert_eq!(asked_a, 1);
}
