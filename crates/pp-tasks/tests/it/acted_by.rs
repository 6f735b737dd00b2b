//! Every action has its user (team mode): a cancel (of a waiting task, and of one
//! running in this process), a retry and a revert made for a team user name that user on
//! their audit rows; made for the operator, the rows name no user.

use std::time::Duration;

use pp_tasks::Caller;
use pp_types::{Role, TaskState};
use serde_json::json;

use crate::fixture::{Fixture, audit_rows, run_approving, write_then_done};

fn user(name: &str) -> Caller {
    Caller {
        user: Some(name.to_owned()),
        role: Role::Owner,
        workspaces: Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancels_name_the_user_who_asked() {
    let fixture = Fixture::new();
    // A task waiting for approval: cancelled by the store at once.
    let waiting = fixture.run(write_then_done("a.txt", "x")).await;
    assert_eq!(waiting.state, TaskState::WaitingApproval);
    let cancelled = fixture
        .service
        .cancel_as(&waiting.id, &user("olga"))
        .await
        .unwrap();
    assert_eq!(cancelled.state, TaskState::Cancelled);

    // A task running here: the runner writes the row once its call stops.
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
    let asked = fixture
        .service
        .cancel_as(&slow.id, &user("mia"))
        .await
        .unwrap();
    // Cancelled, or (on a loaded machine) still under way: it ends cancelled either way.
    assert!(
        matches!(asked.state, TaskState::Cancelled | TaskState::Running),
        "{asked:?}"
    );
    running.await.unwrap().unwrap();
    assert_eq!(
        fixture.store().task(&slow.id).await.unwrap().state,
        TaskState::Cancelled
    );

    // And the operator's cancel names no one.
    let third = fixture.run(write_then_done("b.txt", "y")).await;
    fixture.service.cancel(&third.id).await.unwrap();

    let rows = audit_rows(&fixture.service, "task_cancelled").await;
    let by_task = |task: &pp_types::TaskId| {
        rows.iter()
            .find(|row| row.task_id.as_ref() == Some(task))
            .unwrap_or_else(|| panic!("no row for {task}: {rows:?}"))
            .user
            .clone()
    };
    assert_eq!(by_task(&waiting.id).as_deref(), Some("olga"));
    assert_eq!(by_task(&slow.id).as_deref(), Some("mia"));
    assert_eq!(by_task(&third.id), None);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_retry_names_the_user_who_asked() {
    let fixture = Fixture::new();
    let task = fixture.create(json!([{"content": "hello again"}])).await;
    // A process claimed it and died.
    fixture.store().claim_queued().await.unwrap().unwrap();
    crate::fixture::outlive_the_lease().await;
    fixture.another_process().recover().await.unwrap();
    assert_eq!(
        fixture.store().task(&task.id).await.unwrap().state,
        TaskState::Interrupted
    );
    fixture
        .service
        .retry_as(&task.id, &user("abe"))
        .await
        .unwrap();
    let rows = audit_rows(&fixture.service, "task_retried").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].task_id.as_ref(), Some(&task.id));
    assert_eq!(rows[0].user.as_deref(), Some("abe"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revert_names_the_user_who_asked() {
    let fixture = Fixture::new();
    let task = run_approving(&fixture, write_then_done("a.txt", "x")).await;
    let change = crate::fixture::changes(&fixture, &task).await[0].id.clone();
    fixture
        .service
        .changes()
        .revert_as(&change, pp_types::Actor::Operator, &user("olga"))
        .await
        .unwrap()
        .unwrap();
    assert!(!fixture.tree.exists("a.txt"));
    let rows = audit_rows(&fixture.service, "change_reverted").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].user.as_deref(), Some("olga"));

    // The operator's revert (another change) names no one.
    let second = run_approving(&fixture, write_then_done("b.txt", "y")).await;
    let change = crate::fixture::changes(&fixture, &second).await[0]
        .id
        .clone();
    fixture
        .service
        .changes()
        .revert(&change, pp_types::Actor::Operator)
        .await
        .unwrap()
        .unwrap();
    let rows = audit_rows(&fixture.service, "change_reverted").await;
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].user, None, "newest first: the operator's");
}
