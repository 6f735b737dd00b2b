//! Tasks: create, read, list, claim and compare-and-set transitions.

use pp_store::{Error, NewTask, Recovered, TaskChange};
use pp_types::{Actor, TaskState};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{TestDb, ids, new_task, started};

both!(a_created_task_is_queued_and_reads_back_equal);
async fn a_created_task_is_queued_and_reads_back_equal(db: TestDb) {
    let script = json!([{"content": "hi"}, {"tool_calls": []}]);
    let task = db
        .store
        .create_task(NewTask {
            script: Some(script.clone()),
            created_by: Actor::Scheduler,
            origin: Some("weekly invoices".into()),
            ..new_task("Summarise notes.md")
        })
        .await
        .unwrap();
    assert!(task.id.as_str().starts_with("t_"));
    assert_eq!(task.state, TaskState::Queued);
    assert_eq!(task.script, Some(script));
    assert_eq!(task.created_by, Actor::Scheduler);
    assert_eq!(task.origin.as_deref(), Some("weekly invoices"));
    assert_eq!(task.created_at, task.updated_at);
    assert_eq!(task.finished_at, None);
    assert_eq!(db.store.task(&task.id).await.unwrap(), task);
}

both!(an_unknown_task_is_not_found);
async fn an_unknown_task_is_not_found(db: TestDb) {
    let error = db.store.task(&"t_nope".into()).await.unwrap_err();
    assert!(matches!(&error, Error::NotFound { what: "task", id } if id == "t_nope"));
    assert_eq!(error.to_string(), "task t_nope not found");
}

both!(tasks_list_newest_first_with_state_filter_and_limit);
async fn tasks_list_newest_first_with_state_filter_and_limit(db: TestDb) {
    let first = db.create("one").await;
    let second = db.create("two").await;
    let third = db.create("three").await;
    db.store
        .claim(&second.id, &[TaskState::Queued])
        .await
        .unwrap();

    let all = db.store.list_tasks(None, 10).await.unwrap();
    assert_eq!(
        ids(&all),
        [third.id.clone(), second.id.clone(), first.id.clone()]
    );
    let queued = db
        .store
        .list_tasks(Some(TaskState::Queued), 10)
        .await
        .unwrap();
    assert_eq!(ids(&queued), [third.id.clone(), first.id]);
    let running = db
        .store
        .list_tasks(Some(TaskState::Running), 10)
        .await
        .unwrap();
    assert_eq!(ids(&running), [second.id]);
    assert_eq!(
        ids(&db.store.list_tasks(None, 1).await.unwrap()),
        [third.id]
    );
    assert!(
        db.store
            .list_tasks(Some(TaskState::Failed), 10)
            .await
            .unwrap()
            .is_empty()
    );
}

both!(claim_queued_takes_the_oldest_first_and_each_once);
async fn claim_queued_takes_the_oldest_first_and_each_once(db: TestDb) {
    let mut created = Vec::new();
    for n in 0..5 {
        created.push(db.create(&format!("task {n}")).await);
    }
    let mut claimed = Vec::new();
    while let Some(task) = db.store.claim_queued().await.unwrap() {
        assert_eq!(task.state, TaskState::Running);
        claimed.push(task);
    }
    assert_eq!(ids(&claimed), ids(&created));
    assert_eq!(db.store.claim_queued().await.unwrap(), None);
}

both!(claim_is_a_compare_and_set);
async fn claim_is_a_compare_and_set(db: TestDb) {
    let task = db.create("x").await;
    let running = db
        .store
        .claim(&task.id, &[TaskState::Queued])
        .await
        .unwrap();
    assert_eq!(running.state, TaskState::Running);
    let error = db
        .store
        .claim(&task.id, &[TaskState::Queued])
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::Conflict {
                current: TaskState::Running,
                ..
            }
        ),
        "{error:?}"
    );
}

both!(a_transition_from_the_wrong_state_conflicts_and_changes_nothing);
async fn a_transition_from_the_wrong_state_conflicts_and_changes_nothing(db: TestDb) {
    let task = db.create("x").await;
    let change = TaskChange {
        final_text: Some("done".into()),
        events: vec![started("x")],
        ..TaskChange::to(TaskState::Completed)
    };
    let error = db
        .store
        .transition(
            &task.id,
            &[TaskState::Running, TaskState::WaitingApproval],
            change,
        )
        .await
        .unwrap_err();
    match &error {
        Error::Conflict {
            id,
            current,
            expected,
        } => {
            assert_eq!(id, task.id.as_str());
            assert_eq!(*current, TaskState::Queued);
            assert_eq!(expected, &[TaskState::Running, TaskState::WaitingApproval]);
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(
        error.to_string(),
        format!(
            "task {} is queued, not one of [running, waiting_approval]",
            task.id
        )
    );
    assert_eq!(db.store.task(&task.id).await.unwrap(), task);
    assert!(db.store.task_events(&task.id, 0).await.unwrap().is_empty());
}

both!(transitions_add_running_time_and_terminal_states_set_finished_at);
async fn transitions_add_running_time_and_terminal_states_set_finished_at(db: TestDb) {
    let task = db.create("x").await;
    db.store
        .claim(&task.id, &[TaskState::Queued])
        .await
        .unwrap();
    let (task_after, stored) = db
        .store
        .transition(
            &task.id,
            &[TaskState::Running],
            TaskChange {
                add_running_ms: 100,
                script_position: Some(2),
                events: vec![started("x")],
                ..TaskChange::to(TaskState::Running)
            },
        )
        .await
        .unwrap();
    assert_eq!(task_after.running_ms, 100);
    assert_eq!(task_after.script_position, 2);
    assert_eq!(task_after.finished_at, None);
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].task_id, task.id);

    let (done, _) = db
        .store
        .transition(
            &task.id,
            &[TaskState::Running],
            TaskChange {
                add_running_ms: 250,
                failure_reason: Some(pp_types::FailureReason::MaxSteps),
                error: Some("used all 20 steps".into()),
                ..TaskChange::to(TaskState::Failed)
            },
        )
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Failed);
    assert_eq!(done.running_ms, 350);
    assert_eq!(
        done.script_position, 2,
        "None leaves the position unchanged"
    );
    assert_eq!(done.failure_reason, Some(pp_types::FailureReason::MaxSteps));
    assert_eq!(done.error.as_deref(), Some("used all 20 steps"));
    let finished = done.finished_at.expect("terminal state sets finished_at");
    assert!(finished >= task.created_at);
    assert_eq!(done.updated_at, finished);
    assert_eq!(db.store.task(&task.id).await.unwrap(), done);
}

both!(interrupt_running_touches_only_running_tasks);
async fn interrupt_running_touches_only_running_tasks(db: TestDb) {
    let queued = db.create("queued").await;
    let (waiting, _) = db.waiting("waiting").await;
    let running_a = db.create("running a").await;
    let running_b = db.create("running b").await;
    db.store
        .claim(&running_a.id, &[TaskState::Queued])
        .await
        .unwrap();
    db.store
        .claim(&running_b.id, &[TaskState::Queued])
        .await
        .unwrap();

    let interrupted = db
        .store
        .interrupt_running("the server restarted")
        .await
        .unwrap();
    assert_eq!(interrupted, [running_a.id, running_b.id]);
    for id in &interrupted {
        let task = db.store.task(id).await.unwrap();
        assert_eq!(task.state, TaskState::Interrupted);
        assert_eq!(task.error.as_deref(), Some("the server restarted"));
        assert_eq!(task.finished_at, None);
        assert!(db.store.task_events(id, 0).await.unwrap().is_empty());
    }
    assert_eq!(
        db.store.task(&queued.id).await.unwrap().state,
        TaskState::Queued
    );
    assert_eq!(db.store.task(&waiting.id).await.unwrap(), waiting);
    assert!(
        db.store
            .interrupt_running("again")
            .await
            .unwrap()
            .is_empty()
    );
}

both!(only_tasks_whose_runner_stopped_heartbeating_are_interrupted);
async fn only_tasks_whose_runner_stopped_heartbeating_are_interrupted(db: TestDb) {
    let stopped = db.create("runner crashed").await;
    let alive = db.create("runner alive").await;
    db.store
        .claim(&stopped.id, &[TaskState::Queued])
        .await
        .unwrap();
    db.store
        .claim(&alive.id, &[TaskState::Queued])
        .await
        .unwrap();
    let lease = std::time::Duration::from_millis(40);
    // Exactly at the lease both are still alive: a claim counts as a heartbeat.
    db.clock
        .advance(lease - std::time::Duration::from_millis(1));
    assert_eq!(
        db.store.interrupt_stale("early", lease).await.unwrap(),
        Recovered::default()
    );
    db.clock.advance(std::time::Duration::from_millis(21));
    db.store.heartbeat(&alive.id).await.unwrap();

    let interrupted = db
        .store
        .interrupt_stale("its process stopped", lease)
        .await
        .unwrap();
    assert_eq!(
        interrupted,
        Recovered {
            interrupted: vec![stopped.id.clone()],
            cancelled: Vec::new(),
        }
    );
    assert_eq!(
        db.store.task(&stopped.id).await.unwrap().state,
        TaskState::Interrupted
    );
    assert_eq!(
        db.store.task(&alive.id).await.unwrap().state,
        TaskState::Running
    );
    // A heartbeat never revives a task that is no longer running.
    db.store.heartbeat(&stopped.id).await.unwrap();
    assert_eq!(
        db.store.task(&stopped.id).await.unwrap().state,
        TaskState::Interrupted
    );
    assert_eq!(
        db.store
            .interrupt_stale("again", std::time::Duration::from_secs(60))
            .await
            .unwrap(),
        Recovered::default()
    );
}

both!(a_requested_cancel_ends_the_stale_task_cancelled_not_interrupted);
async fn a_requested_cancel_ends_the_stale_task_cancelled_not_interrupted(db: TestDb) {
    let left = db.create("left with a second Ctrl+C").await;
    let alive = db.create("still running elsewhere").await;
    let queued = db.create("not running").await;
    for task in [&left, &alive] {
        db.store
            .claim(&task.id, &[TaskState::Queued])
            .await
            .unwrap();
    }
    // Only a running task takes a request.
    assert!(!db.store.request_cancel(&queued.id, None).await.unwrap());
    assert!(
        db.store
            .request_cancel(&left.id, Some("ada"))
            .await
            .unwrap()
    );
    // Its process gave it up: a heartbeat no longer counts for it, so recovery does not
    // wait for the lease; the task with a live heartbeat is left alone.
    db.store.heartbeat(&left.id).await.unwrap();
    db.store.heartbeat(&alive.id).await.unwrap();
    let lease = std::time::Duration::from_secs(60);
    assert_eq!(
        db.store.interrupt_stale("stopped", lease).await.unwrap(),
        Recovered {
            interrupted: Vec::new(),
            cancelled: vec![left.id.clone()],
        }
    );
    let cancelled = db.store.task(&left.id).await.unwrap();
    assert_eq!(cancelled.state, TaskState::Cancelled);
    assert_eq!(
        cancelled.error.as_deref(),
        Some(pp_store::CANCELLED_AFTER_STOP)
    );
    assert!(cancelled.finished_at.is_some());
    let events = db.store.task_events(&left.id, 0).await.unwrap();
    assert_eq!(
        events.last().map(|stored| stored.event.kind.clone()),
        Some(pp_types::EventKind::TaskCancelled {
            message: pp_store::CANCELLED_AFTER_STOP.to_owned()
        })
    );
    let audit = db
        .store
        .list_audit(&pp_store::AuditFilter {
            task_id: Some(left.id.clone()),
            action: Some("task_cancelled".to_owned()),
            ..pp_store::AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].user.as_deref(), Some("ada"));
    assert_eq!(
        db.store.task(&alive.id).await.unwrap().state,
        TaskState::Running
    );
    // A task without a request whose heartbeat stops is interrupted, as before.
    db.clock
        .advance(lease + std::time::Duration::from_millis(1));
    assert_eq!(
        db.store.interrupt_stale("stopped", lease).await.unwrap(),
        Recovered {
            interrupted: vec![alive.id.clone()],
            cancelled: Vec::new(),
        }
    );
    assert_eq!(
        db.store.task(&left.id).await.unwrap().state,
        TaskState::Cancelled,
        "recovery never touches a task twice"
    );
}

both!(a_state_change_settles_a_cancel_request);
async fn a_state_change_settles_a_cancel_request(db: TestDb) {
    let task = db.create("asked to stop, then ended otherwise").await;
    db.store
        .claim(&task.id, &[TaskState::Queued])
        .await
        .unwrap();
    assert!(db.store.request_cancel(&task.id, None).await.unwrap());
    // The process stored another end before it stopped (here: waiting for approval,
    // then claimed again by someone who approved): the request is gone with it.
    db.store
        .transition(
            &task.id,
            &[TaskState::Running],
            TaskChange::to(TaskState::WaitingApproval),
        )
        .await
        .unwrap();
    db.store
        .claim(&task.id, &[TaskState::WaitingApproval])
        .await
        .unwrap();
    let lease = std::time::Duration::from_secs(60);
    db.clock.advance(lease / 2);
    db.store.heartbeat(&task.id).await.unwrap();
    db.clock
        .advance(lease / 2 + std::time::Duration::from_millis(1));
    // The new run's heartbeats count again: not stale within its lease.
    assert_eq!(
        db.store.interrupt_stale("stopped", lease).await.unwrap(),
        Recovered::default()
    );
    db.clock.advance(lease);
    assert_eq!(
        db.store.interrupt_stale("stopped", lease).await.unwrap(),
        Recovered {
            interrupted: vec![task.id.clone()],
            cancelled: Vec::new(),
        }
    );
}

both!(cancel_ends_the_task_and_its_pending_approvals);
async fn cancel_ends_the_task_and_its_pending_approvals(db: TestDb) {
    let (task, approval) = db.waiting("x").await;
    let from = [
        TaskState::Queued,
        TaskState::Running,
        TaskState::WaitingApproval,
    ];
    let cancelled = db
        .store
        .cancel_task(
            &task.id,
            &from,
            cancel_change("cancelled by the operator", vec![started("bye")]),
            pp_types::NewAudit::new(pp_types::AuditAction::TaskCancelled),
        )
        .await
        .unwrap();
    assert_eq!(cancelled.state, TaskState::Cancelled);
    assert_eq!(
        cancelled.error.as_deref(),
        Some("cancelled by the operator")
    );
    assert!(cancelled.finished_at.is_some());

    let approval = db.store.approval(&approval.id).await.unwrap();
    assert_eq!(approval.state, pp_types::ApprovalState::Cancelled);
    assert_eq!(
        approval.reason.as_deref(),
        Some("cancelled by the operator")
    );
    assert!(approval.resolved_at.is_some());
    let events = db.store.task_events(&task.id, 0).await.unwrap();
    assert_eq!(events.last().unwrap().event, started("bye"));

    // Cancelling again is a conflict; resolving the cancelled approval is refused.
    let audit = db
        .store
        .list_audit(&pp_store::AuditFilter {
            actor: None,
            task_id: Some(task.id.clone()),
            action: Some("task_cancelled".into()),
            before_id: None,
            exclude: Vec::new(),
            limit: 10,
        })
        .await;
    assert_eq!(
        audit.unwrap().len(),
        1,
        "the cancel's audit row is written with it"
    );
    let error = db
        .store
        .cancel_task(
            &task.id,
            &from,
            cancel_change("again", Vec::new()),
            pp_types::NewAudit::new(pp_types::AuditAction::TaskCancelled),
        )
        .await
        .unwrap_err();
    assert!(matches!(
        error,
        Error::Conflict {
            current: TaskState::Cancelled,
            ..
        }
    ));
    let error = db
        .store
        .resolve(&approval.id, crate::approve())
        .await
        .unwrap_err();
    assert!(matches!(
        error,
        Error::AlreadyResolved {
            state: pp_types::ApprovalState::Cancelled,
            ..
        }
    ));
}

both!(creating_a_task_writes_its_audit_row);
async fn creating_a_task_writes_its_audit_row(db: TestDb) {
    let task = db
        .store
        .create_task(NewTask {
            created_by: Actor::Webhook,
            ..new_task("from a webhook")
        })
        .await
        .unwrap();
    let rows = db
        .store
        .list_audit(&pp_store::AuditFilter::default())
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].action, "task_created");
    assert_eq!(rows[0].actor, Actor::Webhook);
    assert_eq!(rows[0].task_id.as_ref(), Some(&task.id));
}

both!(every_stored_time_comes_from_the_store_clock);
async fn every_stored_time_comes_from_the_store_clock(db: TestDb) {
    use std::time::Duration;
    let task = db.create("on a manual clock").await;
    assert_eq!(task.created_at, crate::START);
    assert_eq!(
        db.store.task(&task.id).await.unwrap().created_at,
        crate::START
    );
    assert!(task.id.as_str().starts_with("t_"));

    db.clock.advance(Duration::from_secs(5));
    let claimed = db
        .store
        .claim(&task.id, &[TaskState::Queued])
        .await
        .unwrap();
    let claimed_at = crate::START.saturating_add(Duration::from_secs(5));
    assert_eq!(claimed.updated_at, claimed_at);
    // (The heartbeat's time is checked through the lease in
    // `only_tasks_whose_runner_stopped_heartbeating_are_interrupted`.)
    db.clock.advance(Duration::from_secs(1));
    db.store.heartbeat(&task.id).await.unwrap();

    db.clock.advance(Duration::from_secs(60));
    let done_at = crate::START.saturating_add(Duration::from_secs(66));
    let (done, events) = db
        .store
        .transition(
            &task.id,
            &[TaskState::Running],
            TaskChange {
                events: vec![crate::started("x")],
                ..TaskChange::to(TaskState::Completed)
            },
        )
        .await
        .unwrap();
    assert_eq!(done.updated_at, done_at);
    assert_eq!(done.finished_at, Some(done_at));
    assert_eq!(events[0].at, done_at);
    assert_eq!(
        db.store.task_events(&task.id, 0).await.unwrap()[0].at,
        done_at
    );
    let audit = db
        .store
        .append_audit(pp_types::NewAudit {
            ..pp_types::NewAudit::new(pp_types::AuditAction::ConsoleLogin)
        })
        .await
        .unwrap();
    assert_eq!(audit.at, done_at);
}

/// A cancel's state change: `cancelled` with `reason` and `events`.
fn cancel_change(reason: &str, events: Vec<pp_types::Event>) -> TaskChange {
    TaskChange {
        error: Some(reason.to_owned()),
        events,
        ..TaskChange::to(TaskState::Cancelled)
    }
}

both!(a_running_task_with_an_approved_call_not_yet_run_cannot_be_cancelled);
async fn a_running_task_with_an_approved_call_not_yet_run_cannot_be_cancelled(db: TestDb) {
    let (task, approval) = db.waiting("x").await;
    db.store
        .resolve(&approval.id, crate::approve())
        .await
        .unwrap();
    assert!(db.store.approved_call_pending(&task.id).await.unwrap());
    let cancel = || {
        db.store.cancel_task(
            &task.id,
            &[TaskState::Running],
            cancel_change("stop", Vec::new()),
            pp_types::NewAudit::new(pp_types::AuditAction::TaskCancelled),
        )
    };
    assert!(matches!(
        cancel().await.unwrap_err(),
        Error::ApprovedCallPending { .. }
    ));
    // Once the call's outcome is in the ledger, the running task can be cancelled.
    db.store
        .append_audit(pp_types::NewAudit {
            task_id: Some(task.id.clone()),
            approval_id: Some(approval.id),
            ..pp_types::NewAudit::new(pp_types::AuditAction::ToolExecuted)
        })
        .await
        .unwrap();
    assert!(!db.store.approved_call_pending(&task.id).await.unwrap());
    assert_eq!(cancel().await.unwrap().state, TaskState::Cancelled);
}

both!(a_task_created_running_is_never_claimed_by_another_worker);
async fn a_task_created_running_is_never_claimed_by_another_worker(db: TestDb) {
    let task = db
        .store
        .create_running_task(new_task("run by mcp serve"))
        .await
        .unwrap();
    assert_eq!(task.state, TaskState::Running);
    assert_eq!(db.store.task(&task.id).await.unwrap(), task);
    assert_eq!(db.open_again().await.claim_queued().await.unwrap(), None);
    let rows = db
        .store
        .list_audit(&pp_store::AuditFilter {
            task_id: Some(task.id.clone()),
            ..pp_store::AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].action, "task_created");
    // It has a heartbeat from the start: a live lease keeps it running.
    let lease = std::time::Duration::from_secs(30);
    assert_eq!(
        db.store.interrupt_stale("x", lease).await.unwrap(),
        Recovered::default()
    );
}

both!(tasks_by_ids_reads_the_known_ones_in_one_call);
async fn tasks_by_ids_reads_the_known_ones_in_one_call(db: TestDb) {
    let first = db.create("first").await;
    let second = db.create("second").await;
    let third = db.create("third").await;
    assert!(db.store.tasks_by_ids(&[]).await.unwrap().is_empty());

    let missing = pp_types::TaskId("t_missing".into());
    let ids = [
        third.id.clone(),
        missing,
        first.id.clone(),
        first.id.clone(),
    ];
    let mut found = db.store.tasks_by_ids(&ids).await.unwrap();
    found.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
    let mut expected = vec![
        db.store.task(&first.id).await.unwrap(),
        db.store.task(&third.id).await.unwrap(),
    ];
    expected.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
    assert_eq!(
        found, expected,
        "each known task once, the unknown id absent"
    );
    assert!(!found.iter().any(|task| task.id == second.id));
}
