//! Regression tests of the hardening review: tool work off the async threads, timeouts
//! and cancels that reach tool work, heartbeats while a tool works, and cancel-vs-resolve
//! races with exactly one winner.

use std::time::Duration;

use pp_tasks::{ResolveRequest, TaskSettings};
use pp_test_support::wait_until_async;
use pp_types::{ApprovalState, TaskState};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::fixture::{Fixture, LEASE, approve, write_then_done};

/// How long a test waits for the tool to start before it fails.
const WITHIN: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeout_interrupts_blocking_tool_work() {
    let fixture = Fixture::with(TaskSettings {
        timeout: Duration::from_millis(300),
        ..TaskSettings::default()
    });
    let task = fixture
        .run(json!([
            {"tool_calls": [{"name": "blocking_read", "arguments": {"until_stopped": true}}]},
            {"content": "never"}
        ]))
        .await;
    assert_eq!(task.state, TaskState::TimedOut);
    assert!(
        fixture.blocking.saw_stop(),
        "the tool's work was told to stop"
    );
    // The interrupted call's outcome is recorded before the task ends.
    let types = fixture.event_types(&task.id).await;
    assert!(types.contains(&"tool_error"), "{types:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_interrupts_blocking_tool_work() {
    let fixture = Fixture::new();
    let task = fixture
        .create(json!([
            {"tool_calls": [{"name": "blocking_read", "arguments": {"until_stopped": true}}]},
            {"content": "never"}
        ]))
        .await;
    let service = fixture.service.clone();
    let id = task.id.clone();
    let run = tokio::spawn(async move { service.run_now(&id).await.unwrap() });
    assert!(
        wait_until_async(WITHIN, async || fixture.blocking.started()).await,
        "the tool never started"
    );
    let cancelled = fixture.service.cancel(&task.id).await.unwrap();
    assert_eq!(cancelled.state, TaskState::Cancelled);
    assert_eq!(run.await.unwrap().state, TaskState::Cancelled);
    assert!(fixture.blocking.saw_stop());
    assert_eq!(fixture.audit_actions(&task.id).await, ["task_cancelled"]);
}

/// On a single async thread, a tool blocking its own thread must not stop the heartbeat:
/// another process starting meanwhile leaves the live run alone.
#[tokio::test(flavor = "current_thread")]
async fn heartbeats_keep_beating_while_a_tool_blocks() {
    let fixture = Fixture::new();
    let task = fixture
        .create(json!([
            {"tool_calls": [{"name": "blocking_read", "arguments": {"millis": 900}}]},
            {"content": "finished"}
        ]))
        .await;
    let service = fixture.service.clone();
    let id = task.id.clone();
    let run = tokio::spawn(async move { service.run_now(&id).await.unwrap() });
    assert!(
        wait_until_async(WITHIN, async || fixture.blocking.started()).await,
        "the tool never started"
    );
    // Well past the lease, with the tool still blocking its thread. A real sleep: what is
    // tested is that the heartbeat beats while an OS thread is blocked in real time.
    tokio::time::sleep(LEASE * 3).await;
    let interrupted = fixture
        .another_process()
        .recover()
        .await
        .unwrap()
        .interrupted;
    assert!(interrupted.is_empty(), "{interrupted:?}");
    assert_eq!(run.await.unwrap().state, TaskState::Completed);
}

/// Racing a resolve against a cancel: exactly one wins, the loser gets `invalid_state`,
/// and the ledger and the disk agree with the winner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_resolve_racing_have_exactly_one_winner() {
    let fixture = Fixture::new();
    let (mut resolves_won, mut cancels_won) = (0, 0);
    for round in 0..30 {
        let path = format!("race-{round}.txt");
        let task = fixture.run(write_then_done(&path, "written")).await;
        assert_eq!(task.state, TaskState::WaitingApproval);
        let pending = fixture.pending(&task.id).await;
        let (service, other) = (fixture.service.clone(), fixture.service.clone());
        let (approval, id) = (pending.id.clone(), task.id.clone());
        let request = ResolveRequest {
            wait: false,
            ..approve()
        };
        let resolve = tokio::spawn(async move { service.resolve(&approval, request).await });
        let cancel = tokio::spawn(async move { other.cancel(&id).await });
        let (resolved, cancelled) = (resolve.await.unwrap(), cancel.await.unwrap());
        let end = fixture.wait_for_end(&task.id).await;
        let actions = fixture.audit_actions(&task.id).await;
        let approval = fixture.store().approval(&pending.id).await.unwrap();
        match (resolved, cancelled) {
            (Ok(_), Err(pp_tasks::Error::InvalidState { .. })) => {
                resolves_won += 1;
                assert_eq!(end.state, TaskState::Completed);
                assert_eq!(approval.state, ApprovalState::Approved);
                assert_eq!(fixture.tree.read(&path), "written");
                assert_eq!(
                    actions,
                    ["approval_approved", "tool_started", "tool_executed"]
                );
            }
            (Err(pp_tasks::Error::InvalidState { .. }), Ok(record)) => {
                cancels_won += 1;
                assert_eq!(record.state, TaskState::Cancelled);
                assert_eq!(end.state, TaskState::Cancelled);
                assert_eq!(approval.state, ApprovalState::Cancelled);
                assert!(!fixture.tree.exists(&path));
                assert_eq!(actions, ["task_cancelled"]);
            }
            // The cancel reached the task after the approved call had run: a real cancel
            // of a running task, recorded after the call's outcome.
            (Ok(_), Ok(record)) => {
                assert_eq!(record.state, TaskState::Cancelled);
                assert_eq!(fixture.tree.read(&path), "written");
                assert_eq!(
                    actions,
                    [
                        "approval_approved",
                        "tool_started",
                        "tool_executed",
                        "task_cancelled"
                    ]
                );
            }
            (resolved, cancelled) => {
                panic!("round {round}: resolve {resolved:?}, cancel {cancelled:?}")
            }
        }
    }
    assert!(resolves_won + cancels_won > 0);
}
