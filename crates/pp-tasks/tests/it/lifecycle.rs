//! Tasks from creation to the end: workers, denials, timeouts, cancellation.

use std::time::Duration;

use pp_tasks::{CreateTask, TaskSettings};
use pp_types::{Actor, ApprovalState, TaskState};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::fixture::{Fixture, approve, write_then_done};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_waits_then_completes_after_approval() {
    let fixture = Fixture::new();
    fixture.tree.file("notes.txt", "old\n");
    let task = fixture.run(write_then_done("notes.txt", "new\n")).await;
    assert_eq!(task.state, TaskState::WaitingApproval);
    assert_eq!(
        fixture.tree.read("notes.txt"),
        "old\n",
        "nothing written before approval"
    );

    let pending = fixture.pending(&task.id).await;
    let view = fixture.service.approval_view(&pending.id).await.unwrap();
    assert_eq!(view.prompt, "do the thing");
    assert_eq!(view.tool, "write_file");
    assert_eq!(view.capability, "file:write");
    assert_eq!(view.risk, pp_types::Risk::High);
    assert_eq!(view.label, Some(pp_types::WriteLabel::Overwrite));
    let diff = view.diff.unwrap();
    assert!(diff.contains("-old") && diff.contains("+new"), "{diff}");

    let done = fixture
        .service
        .resolve(&pending.id, approve())
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(done.final_text.as_deref(), Some("done"));
    assert_eq!(fixture.tree.read("notes.txt"), "new\n");
    let approval = fixture.store().approval(&pending.id).await.unwrap();
    assert_eq!(approval.state, ApprovalState::Approved);
    assert_eq!(approval.resolved_by, Some(Actor::Operator));

    assert_eq!(fixture.audit_count("task_created").await, 1);
    assert_eq!(fixture.audit_count("approval_approved").await, 1);
    let executed = fixture
        .store()
        .list_audit(&pp_store::AuditFilter {
            actor: Some(Actor::Agent),
            task_id: Some(task.id.clone()),
            action: Some("tool_executed".into()),
            before_id: None,
            exclude: Vec::new(),
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(executed.len(), 1);
    assert_eq!(executed[0].target.as_deref(), Some("notes.txt"));
    assert_eq!(
        executed[0].arguments_hash.as_deref(),
        Some(pp_tasks::arguments_hash(&json!({"path": "notes.txt", "content": "new\n"})).as_str())
    );
    let types = fixture.event_types(&task.id).await;
    assert_eq!(
        types.iter().filter(|t| **t == "approval_required").count(),
        1
    );
    assert_eq!(types.last(), Some(&"task_completed"));
    // The stored approval_required event names its approval.
    let events = fixture.store().task_events(&task.id, 0).await.unwrap();
    let required = events
        .iter()
        .find(|e| e.event.type_name() == "approval_required")
        .unwrap();
    let json = serde_json::to_value(required).unwrap();
    assert_eq!(json["approval_id"], pending.id.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_run_queued_tasks_including_ones_from_other_processes() {
    let fixture = Fixture::with(TaskSettings {
        workers: 1,
        poll_interval: Duration::from_millis(20),
        ..TaskSettings::default()
    });
    fixture.tree.file("a.txt", "a\n");
    let read = json!([{"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
                      {"content": "read it"}]);
    let mut mine = Vec::new();
    for _ in 0..3 {
        mine.push(fixture.create(read.clone()).await);
    }
    // Queued by another process: only polling can notice it.
    let other = fixture.another_process();
    let theirs = other
        .create(CreateTask {
            prompt: "from elsewhere".into(),
            workspace: None,
            actor: Actor::Operator,
            script: Some(read),
        })
        .await
        .unwrap();
    fixture.service.start_workers();
    let store = fixture.store();
    for _ in 0..500 {
        let done = store
            .list_tasks(Some(TaskState::Completed), 10)
            .await
            .unwrap()
            .len();
        if done == 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for task in mine.iter().chain([&theirs]) {
        assert_eq!(
            store.task(&task.id).await.unwrap().state,
            TaskState::Completed
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_denial_cap_fails_the_task() {
    let fixture = Fixture::new();
    let escape = json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "../x"}}]});
    let task = fixture.run(json!([escape, escape, escape])).await;
    assert_eq!(task.state, TaskState::Failed);
    assert_eq!(
        task.failure_reason,
        Some(pp_types::FailureReason::PolicyViolation)
    );
    assert_eq!(fixture.audit_count("tool_denied").await, 3);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn running_time_is_capped_and_waiting_does_not_count() {
    let fixture = Fixture::with(TaskSettings {
        timeout: Duration::from_millis(300),
        poll_interval: Duration::from_millis(20),
        ..TaskSettings::default()
    });
    let slow = |millis: u64| json!({"tool_calls": [{"name": "slow_read", "arguments": {"millis": millis}}]});
    let write = json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]});
    // 150 ms running, then a wait for a person longer than the timeout, then 100 ms more.
    let task = fixture
        .run(json!([slow(150), write, slow(100), {"content": "done"}]))
        .await;
    assert_eq!(task.state, TaskState::WaitingApproval);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let pending = fixture.pending(&task.id).await;
    let done = fixture
        .service
        .resolve(&pending.id, approve())
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Completed, "{:?}", done.error);
    // On paused time the running time is exact: 150 ms before the wait, 100 ms after.
    assert_eq!(done.running_ms, 250);

    // A task that runs longer than its budget times out.
    let task = fixture.run(json!([slow(1000), {"content": "never"}])).await;
    assert_eq!(task.state, TaskState::TimedOut);
    assert_eq!(task.failure_reason, Some(pp_types::FailureReason::Timeout));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_waiting_and_running_tasks() {
    let fixture = Fixture::new();
    let task = fixture.run(write_then_done("a.txt", "x")).await;
    let pending = fixture.pending(&task.id).await;
    let cancelled = fixture.service.cancel(&task.id).await.unwrap();
    assert_eq!(cancelled.state, TaskState::Cancelled);
    let approval = fixture.store().approval(&pending.id).await.unwrap();
    assert_eq!(approval.state, ApprovalState::Cancelled);
    let error = fixture
        .service
        .resolve(&pending.id, approve())
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            pp_tasks::Error::InvalidState {
                state: TaskState::Cancelled,
                ..
            }
        ),
        "the cancel won: {error}"
    );
    assert!(!fixture.tree.exists("a.txt"));

    let slow = fixture
        .create(json!([{"tool_calls": [{"name": "slow_read", "arguments": {"millis": 5000}}]}]))
        .await;
    let service = fixture.service.clone();
    let id = slow.id.clone();
    let running = tokio::spawn(async move { service.run_now(&id).await });
    for _ in 0..200 {
        if fixture.store().task(&slow.id).await.unwrap().state == TaskState::Running {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let cancelled = fixture.service.cancel(&slow.id).await.unwrap();
    assert_eq!(cancelled.state, TaskState::Cancelled);
    let ended = tokio::time::timeout(Duration::from_secs(2), running).await;
    assert!(ended.is_ok(), "the running segment stopped at once");
    // A cancel of a cancelled task answers with the task (nothing new recorded).
    let again = fixture.service.cancel(&slow.id).await.unwrap();
    assert_eq!(again.state, TaskState::Cancelled);
    assert_eq!(again.updated_at, cancelled.updated_at);
    assert_eq!(fixture.audit_count("task_cancelled").await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_whose_call_does_not_stop_in_time_says_so_then_cancels() {
    let fixture = Fixture::new();
    let service = fixture
        .service
        .clone()
        .with_cancel_wait(Duration::from_millis(200));
    // `blocking_read` with `millis` ignores the interrupt: the call runs its 1.5 s.
    let task = fixture
        .create(
            json!([{"tool_calls": [{"name": "blocking_read", "arguments": {"millis": 1500}}]},
                       {"content": "never"}]),
        )
        .await;
    let (runner, id) = (service.clone(), task.id.clone());
    let running = tokio::spawn(async move { runner.run_now(&id).await });
    for _ in 0..400 {
        if fixture.blocking.started() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(fixture.blocking.started());
    let requested = service.cancel(&task.id).await.unwrap();
    assert_eq!(requested.state, TaskState::Running, "no new task state");
    assert!(service.cancel_requested(&requested));
    assert_eq!(fixture.audit_count("task_cancelled").await, 0, "not yet");
    // Asked again meanwhile: still under way, not an error.
    let again = service.cancel(&task.id).await.unwrap();
    assert_eq!(again.state, TaskState::Running);

    let ended = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(ended.state, TaskState::Cancelled);
    let stored = service.task(&task.id).await.unwrap();
    assert_eq!(stored.state, TaskState::Cancelled);
    assert!(!service.cancel_requested(&stored));
    assert_eq!(fixture.audit_count("task_cancelled").await, 1);
    assert_eq!(
        service.cancel(&task.id).await.unwrap().state,
        TaskState::Cancelled
    );
}
