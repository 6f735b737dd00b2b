//! Changesets: one model turn's approval-needing calls shown at once and decided
//! together, run in the model's order once every card is decided.

use pp_tasks::{ChangesetDecision, Decision, DecisionStatus, Error, ResolveRequest};
use pp_types::{Actor, ApprovalRecord, ApprovalState, TaskId, TaskState};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::fixture::{Fixture, approve, changes};

/// One turn writing `paths` (each "<path> v2\n"), then "done".
fn writes(paths: &[&str]) -> Value {
    let calls: Vec<Value> = paths
        .iter()
        .map(|path| json!({"name": "write_file", "arguments": {"path": path, "content": format!("{path} v2\n")}}))
        .collect();
    json!([{"tool_calls": calls}, {"content": "done"}])
}

/// The task's pending approvals, in the model's order.
async fn pending(fixture: &Fixture, task: &TaskId) -> Vec<ApprovalRecord> {
    fixture
        .service
        .approvals_for_task(task)
        .await
        .unwrap()
        .into_iter()
        .filter(|approval| approval.state == ApprovalState::Pending)
        .collect()
}

fn decide(approval: &ApprovalRecord, decision: Decision) -> ChangesetDecision {
    ChangesetDecision {
        approval_id: approval.id.clone(),
        decision,
        edited_arguments: None,
        reason: None,
        seen_fingerprint: None,
    }
}

/// The paths the change log recorded, in the order they were written.
async fn written(fixture: &Fixture, task: &TaskId) -> Vec<String> {
    changes(fixture, task)
        .await
        .into_iter()
        .filter_map(|change| change.path)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_writes_decided_by_one_request_run_once_each_in_the_models_order() {
    let fixture = Fixture::new();
    let task = fixture.run(writes(&["c.md", "a.md", "b.md"])).await;
    assert_eq!(task.state, TaskState::WaitingApproval);
    let cards = pending(&fixture, &task.id).await;
    assert_eq!(cards.len(), 3, "every card appears at once");
    let changeset = cards[0].changeset_id.clone().expect("a changeset");
    assert!(
        cards
            .iter()
            .all(|card| card.changeset_id.as_deref() == Some(&*changeset))
    );
    let view = fixture.service.changeset_view(&changeset).await.unwrap();
    let targets: Vec<_> = view
        .approvals
        .iter()
        .map(|card| card.target.clone())
        .collect();
    assert_eq!(
        targets,
        [
            Some("c.md".into()),
            Some("a.md".into()),
            Some("b.md".into())
        ]
    );
    assert!(view.approvals.iter().all(|card| card.precheck.is_some()));
    assert!(
        !fixture.tree.exists("a.md"),
        "nothing runs before the decisions"
    );

    // Decided in another order than the model's: they still run in the model's.
    let decisions = vec![
        decide(&cards[2], Decision::Approve),
        decide(&cards[0], Decision::Approve),
        decide(&cards[1], Decision::Approve),
    ];
    let results = fixture
        .service
        .resolve_changeset(
            &changeset,
            decisions,
            Actor::Operator,
            Some(pp_types::Via::Api),
            None,
            true,
        )
        .await
        .unwrap();
    assert!(
        results.iter().all(|r| r.status == DecisionStatus::Accepted),
        "{results:?}"
    );
    let done = fixture.service.task(&task.id).await.unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(written(&fixture, &task.id).await, ["c.md", "a.md", "b.md"]);
    assert_eq!(fixture.tree.read("a.md"), "a.md v2\n");
    assert_eq!(fixture.audit_count("tool_executed").await, 3);
    assert_eq!(fixture.audit_count("tool_started").await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changeset_decided_by_three_single_resolves_runs_after_the_last() {
    let fixture = Fixture::new();
    let task = fixture.run(writes(&["a.md", "b.md", "c.md"])).await;
    let cards = pending(&fixture, &task.id).await;
    assert_eq!(cards.len(), 3);
    let first = fixture
        .service
        .resolve(&cards[0].id, approve())
        .await
        .unwrap();
    assert_eq!(first.state, TaskState::WaitingApproval, "two still wait");
    let rejected = ResolveRequest {
        decision: Decision::Reject,
        reason: Some("not this one".into()),
        ..approve()
    };
    let second = fixture
        .service
        .resolve(&cards[1].id, rejected)
        .await
        .unwrap();
    assert_eq!(second.state, TaskState::WaitingApproval);
    assert!(
        !fixture.tree.exists("a.md"),
        "nothing runs before the last decision"
    );
    let last = fixture
        .service
        .resolve(&cards[2].id, approve())
        .await
        .unwrap();
    assert_eq!(last.state, TaskState::Completed);
    assert_eq!(written(&fixture, &task.id).await, ["a.md", "c.md"]);
    assert!(!fixture.tree.exists("b.md"), "the rejected call never ran");
    let view = fixture.service.approval_view(&cards[1].id).await.unwrap();
    assert_eq!(view.state, ApprovalState::Rejected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_decisions_on_one_changeset_decide_each_call_exactly_once() {
    let fixture = Fixture::new();
    let task = fixture.run(writes(&["a.md", "b.md"])).await;
    let cards = pending(&fixture, &task.id).await;
    let changeset = cards[0].changeset_id.clone().unwrap();
    let decisions = || {
        cards
            .iter()
            .map(|card| decide(card, Decision::Approve))
            .collect::<Vec<_>>()
    };
    let (one, other) = (fixture.service.clone(), fixture.another_process());
    let (first, second) = tokio::join!(
        one.resolve_changeset(
            &changeset,
            decisions(),
            Actor::Operator,
            Some(pp_types::Via::Api),
            None,
            true
        ),
        other.resolve_changeset(
            &changeset,
            decisions(),
            Actor::Operator,
            Some(pp_types::Via::Api),
            None,
            true
        ),
    );
    let all: Vec<_> = first.unwrap().into_iter().chain(second.unwrap()).collect();
    let accepted = all
        .iter()
        .filter(|r| r.status == DecisionStatus::Accepted)
        .count();
    let already = all
        .iter()
        .filter(|r| r.status == DecisionStatus::AlreadyResolved)
        .count();
    assert_eq!((accepted, already), (2, 2), "{all:?}");
    let done = fixture.wait_for_end(&task.id).await;
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(written(&fixture, &task.id).await, ["a.md", "b.md"]);
    assert_eq!(fixture.audit_count("tool_executed").await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changeset_resolve_refuses_strangers_and_repeats_before_deciding_anything() {
    let fixture = Fixture::new();
    let task = fixture.run(writes(&["a.md", "b.md"])).await;
    let cards = pending(&fixture, &task.id).await;
    let changeset = cards[0].changeset_id.clone().unwrap();
    let other = fixture.run(writes(&["x.md", "y.md"])).await;
    let stranger = pending(&fixture, &other.id).await.remove(0);

    let twice = vec![
        decide(&cards[0], Decision::Approve),
        decide(&cards[0], Decision::Reject),
    ];
    let outside = vec![
        decide(&cards[0], Decision::Approve),
        decide(&stranger, Decision::Approve),
    ];
    for decisions in [twice, outside] {
        let error = fixture
            .service
            .resolve_changeset(
                &changeset,
                decisions,
                Actor::Operator,
                Some(pp_types::Via::Api),
                None,
                false,
            )
            .await
            .unwrap_err();
        assert!(matches!(error, Error::BadRequest(_)), "{error}");
    }
    assert_eq!(
        pending(&fixture, &task.id).await.len(),
        2,
        "nothing was decided"
    );
    let unknown = fixture
        .service
        .resolve_changeset(
            "cs_nope",
            Vec::new(),
            Actor::Operator,
            Some(pp_types::Via::Api),
            None,
            false,
        )
        .await
        .unwrap_err();
    assert!(matches!(unknown, Error::NotFound { .. }), "{unknown}");

    // A changed target and a bad edit are answered per decision; the good one is taken.
    fixture.tree.file("b.md", "someone else\n");
    let mut changed = decide(&cards[1], Decision::Approve);
    changed.seen_fingerprint = Some("not-what-it-is".into());
    let mut bad_edit = decide(&cards[0], Decision::Approve);
    bad_edit.edited_arguments = Some(json!({"path": "../outside.md", "content": "x"}));
    let results = fixture
        .service
        .resolve_changeset(
            &changeset,
            vec![bad_edit, changed],
            Actor::Operator,
            Some(pp_types::Via::Api),
            None,
            false,
        )
        .await
        .unwrap();
    let statuses: Vec<_> = results.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [
            DecisionStatus::InvalidArguments,
            DecisionStatus::ChangedSinceSeen
        ]
    );
    assert!(results.iter().all(|r| r.message.is_some()));
    assert_eq!(
        pending(&fixture, &task.id).await.len(),
        2,
        "both still pending"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_before_the_last_decision_runs_nothing_and_says_so() {
    let fixture = Fixture::new();
    let task = fixture.run(writes(&["a.md", "b.md"])).await;
    let cards = pending(&fixture, &task.id).await;
    fixture
        .service
        .resolve(&cards[0].id, approve())
        .await
        .unwrap();
    let cancelled = fixture.service.cancel(&task.id).await.unwrap();
    assert_eq!(cancelled.state, TaskState::Cancelled);
    assert!(!fixture.tree.exists("a.md"));
    let approved = fixture.service.approval_view(&cards[0].id).await.unwrap();
    assert_eq!(approved.state, ApprovalState::Cancelled);
    assert_eq!(
        approved.reason.as_deref(),
        Some(pp_store::NOT_RUN_CANCELLED)
    );
    let error = fixture
        .service
        .resolve(&cards[1].id, approve())
        .await
        .unwrap_err();
    assert!(matches!(error, Error::InvalidState { .. }), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_whose_target_changes_before_it_runs_ends_stale_and_the_rest_run() {
    let fixture = Fixture::new();
    let task = fixture.run(writes(&["a.md", "b.md"])).await;
    let cards = pending(&fixture, &task.id).await;
    let no_wait = ResolveRequest {
        wait: false,
        ..approve()
    };
    fixture
        .service
        .resolve(&cards[0].id, no_wait)
        .await
        .unwrap();
    // The first card is approved against "absent"; the file appears before it runs.
    fixture.tree.file("a.md", "written meanwhile\n");
    let done = fixture
        .service
        .resolve(&cards[1].id, approve())
        .await
        .unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(
        fixture.tree.read("a.md"),
        "written meanwhile\n",
        "not overwritten"
    );
    assert_eq!(fixture.tree.read("b.md"), "b.md v2\n");
    let stale = fixture.service.approval_view(&cards[0].id).await.unwrap();
    assert_eq!(stale.state, ApprovalState::Stale);
    assert_eq!(written(&fixture, &task.id).await, ["b.md"]);
}
