//! `POST /api/tasks/{id}/cancel` tells the truth: 200 with the task `cancelled` (also
//! when it already was), 202 with the task still `running` and `cancel_requested: true`
//! while its running call has not stopped, 409 `invalid_state` after a won resolve.

use std::sync::Arc;
use std::time::Duration;

use axum::http::Method;
use pp_server::ServerSettings;
use pp_tasks::{ModelSource, TaskService, TaskSettings, Workspaces};
use pp_test_support::{TempTree, wait_until_async};
use pp_types::{ManualClock, TaskState, Timestamp};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{App, bare_state};

/// A running app whose tools include `stubborn_wait` (a call that ignores the task's
/// interrupt), with `workers` workers and a cancel that waits 300 ms for a call to stop.
fn stubborn_app(workers: usize) -> App {
    let tree = TempTree::new();
    let clock = Arc::new(ManualClock::new(Timestamp::now()));
    let store = pp_test_support::sqlite_store_with_clock(
        &tree.base().join("pocketpilot.db"),
        clock.clone(),
    );
    let settings = TaskSettings {
        workers,
        poll_interval: Duration::from_millis(20),
        ..TaskSettings::default()
    };
    let service = TaskService::build(
        store.clone(),
        settings,
        Workspaces::single("main", tree.workspace()),
        ModelSource::Scripted,
        pp_test_support::provider::stubborn_toolbox(),
        None,
    )
    .with_cancel_wait(Duration::from_millis(300));
    let state = bare_state(&service, &store, ServerSettings::default());
    service.start_workers();
    App::assemble(tree, clock, store, service, state)
}

/// A script whose first call blocks for `millis` whatever happens.
fn stubborn_script(millis: u64) -> serde_json::Value {
    json!([
        {"tool_calls": [{"name": "stubborn_wait", "arguments": {"millis": millis}}]},
        {"content": "done"}
    ])
}

#[tokio::test]
async fn a_cancel_of_a_cancelled_task_is_200_with_the_task() {
    let app = App::running();
    let (task, _) = app.waiting_write("c.txt", "c\n").await;
    let uri = format!("/api/tasks/{task}/cancel");
    let first = app.call(Method::POST, &uri).await;
    first.expect(200, None);
    // A second later on the store's clock: a cancel that rewrote the task would show.
    app.clock.advance(Duration::from_secs(1));
    let again = app.call(Method::POST, &uri).await;
    again.expect(200, None);
    assert_eq!(again.json["state"], "cancelled");
    assert_eq!(again.json["cancel_requested"], false);
    assert_eq!(again.json["updated_at"], first.json["updated_at"]);
    assert_eq!(app.audit("task_cancelled", Some(&task)).await.len(), 1);
}

#[tokio::test]
async fn a_cancel_whose_call_does_not_stop_in_time_is_202_then_cancelled() {
    let app = stubborn_app(2);
    let task = app.create_task(stubborn_script(1500)).await;
    app.wait_for(&task.id, TaskState::Running).await;
    let uri = format!("/api/tasks/{}", task.id);
    // The call has started: its `tool_call` event is stored.
    let started = wait_until_async(Duration::from_secs(10), async || {
        let events = app.call(Method::GET, &format!("{uri}/events")).await;
        events.json["events"]
            .as_array()
            .is_some_and(|events| events.iter().any(|event| event["type"] == "tool_call"))
    })
    .await;
    assert!(started, "the stubborn call never started");
    let reply = app.call(Method::POST, &format!("{uri}/cancel")).await;
    reply.expect(202, None);
    assert_eq!(
        (
            reply.json["state"].clone(),
            reply.json["cancel_requested"].clone()
        ),
        (json!("running"), json!(true))
    );
    let shown = app.call(Method::GET, &uri).await;
    assert_eq!(
        (
            shown.json["state"].clone(),
            shown.json["cancel_requested"].clone()
        ),
        (json!("running"), json!(true))
    );
    // No cancel is recorded before it happened.
    assert!(app.audit("task_cancelled", Some(&task.id)).await.is_empty());

    let ended = app.wait_for(&task.id, TaskState::Cancelled).await;
    assert_eq!(ended.error.as_deref(), Some("cancelled by the operator"));
    let shown = app.call(Method::GET, &uri).await;
    assert_eq!(
        (
            shown.json["state"].clone(),
            shown.json["cancel_requested"].clone()
        ),
        (json!("cancelled"), json!(false))
    );
    assert_eq!(app.audit("task_cancelled", Some(&task.id)).await.len(), 1);
    // Now it is done: 200 with the task.
    let again = app.call(Method::POST, &format!("{uri}/cancel")).await;
    again.expect(200, None);
    assert_eq!(again.json["state"], "cancelled");

    // The 202 and the field are in the API document.
    let doc = app.call(Method::GET, "/api/openapi.json").await.json;
    let accepted = &doc["paths"]["/api/tasks/{id}/cancel"]["post"]["responses"]["202"];
    assert_eq!(
        accepted["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/Task"
    );
    assert_eq!(
        doc["components"]["schemas"]["Task"]["properties"]["cancel_requested"]["type"],
        "boolean"
    );
}

#[tokio::test]
async fn a_cancel_whose_call_stops_in_time_is_200_cancelled() {
    let app = stubborn_app(2);
    let task = app.create_task(stubborn_script(100)).await;
    app.wait_for(&task.id, TaskState::Running).await;
    let reply = app
        .call(Method::POST, &format!("/api/tasks/{}/cancel", task.id))
        .await;
    reply.expect(200, None);
    assert_eq!(
        (
            reply.json["state"].clone(),
            reply.json["cancel_requested"].clone()
        ),
        (json!("cancelled"), json!(false))
    );
}

#[tokio::test]
async fn a_cancel_after_a_won_resolve_is_409_invalid_state() {
    // One worker: the approved call waits for it while a stubborn call holds it.
    let app = stubborn_app(1);
    let (task, approval) = app.waiting_write("w.txt", "w\n").await;
    let busy = app.create_task(stubborn_script(1000)).await;
    app.wait_for(&busy.id, TaskState::Running).await;
    app.call_json(
        Method::POST,
        &format!("/api/approvals/{approval}/resolve"),
        &json!({"decision": "approve"}),
    )
    .await
    .expect(202, None);
    app.call(Method::POST, &format!("/api/tasks/{task}/cancel"))
        .await
        .expect(409, Some("invalid_state"));
    app.wait_for(&task, TaskState::Completed).await;
    assert_eq!(app.tree.read("w.txt"), "w\n");
    assert!(app.audit("task_cancelled", Some(&task)).await.is_empty());
}
