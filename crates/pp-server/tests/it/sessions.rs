//! `/api/sessions`: a conversation over HTTP, the busy rule and every 4xx.

use axum::http::Method;
use pp_server::ServerSettings;
use pp_types::{TaskId, TaskState};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::{App, write_script};

/// Workers running, every turn replays a write that waits for approval.
fn chat_app() -> App {
    let app = App::with_settings(ServerSettings {
        default_script: Some(write_script("chat.txt", "hi\n")),
        ..ServerSettings::default()
    });
    app.service.start_workers();
    app
}

async fn new_session(app: &App, body: &Value) -> String {
    let reply = app.call_json(Method::POST, "/api/sessions", body).await;
    reply.expect(201, None);
    reply.json["id"].as_str().unwrap().to_owned()
}

async fn send(app: &App, session: &str, content: &str) -> crate::Reply {
    app.call_json(
        Method::POST,
        &format!("/api/sessions/{session}/messages"),
        &json!({ "content": content }),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_over_http_waits_for_each_turn() {
    let app = chat_app();
    let reply = app
        .call_json(Method::POST, "/api/sessions", &json!({"title": "Plans"}))
        .await;
    reply.expect(201, None);
    let created = reply.json.clone();
    let mut keys: Vec<&str> = created
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["created_at", "id", "title", "updated_at", "workspace"]
    );
    assert_eq!(
        (created["title"].clone(), created["workspace"].clone()),
        (json!("Plans"), json!("main"))
    );
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("s_"), "{id}");
    let untitled = new_session(&app, &json!({})).await;

    let list = app.call(Method::GET, "/api/sessions").await;
    list.expect(200, None);
    let listed: Vec<&str> = list.json["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|session| session["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, [untitled.as_str(), id.as_str()]);
    let newest = app.call(Method::GET, "/api/sessions?limit=1").await;
    newest.expect(200, None);
    assert_eq!(newest.json["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(newest.json["sessions"][0]["id"], untitled.as_str());
    app.call(Method::GET, "/api/sessions?limit=0")
        .await
        .expect(400, Some("bad_request"));

    let first = send(&app, &id, "write it").await;
    first.expect(202, None);
    let first_task = TaskId(first.json["task_id"].as_str().unwrap().to_owned());
    app.wait_for(&first_task, TaskState::WaitingApproval).await;

    send(&app, &id, "and again")
        .await
        .expect(409, Some("session_busy"));
    app.call(Method::DELETE, &format!("/api/sessions/{id}"))
        .await
        .expect(409, Some("session_busy"));

    let approval = app.service.approvals_for_task(&first_task).await.unwrap();
    app.call_json(
        Method::POST,
        &format!("/api/approvals/{}/resolve", approval[0].id),
        &json!({"decision": "approve"}),
    )
    .await
    .expect(202, None);
    app.wait_for(&first_task, TaskState::Completed).await;

    let second = send(&app, &id, "and again").await;
    second.expect(202, None);
    let second_task = second.json["task_id"].as_str().unwrap().to_owned();
    app.wait_for(&TaskId(second_task.clone()), TaskState::WaitingApproval)
        .await;

    let view = app.call(Method::GET, &format!("/api/sessions/{id}")).await;
    view.expect(200, None);
    assert_eq!(view.json["summary"], Value::Null);
    assert_eq!(view.json["title"], "Plans");
    assert_eq!(
        view.json["turns"],
        json!([
            {"index": 1, "task_id": first_task.as_str(), "state": "completed",
             "prompt": "write it", "final_text": "done"},
            {"index": 2, "task_id": second_task, "state": "waiting_approval",
             "prompt": "and again", "final_text": null},
        ])
    );

    app.call(Method::POST, &format!("/api/tasks/{second_task}/cancel"))
        .await
        .expect(200, None);
    let deleted = app
        .call(Method::DELETE, &format!("/api/sessions/{id}"))
        .await;
    deleted.expect(204, None);
    assert!(deleted.bytes.is_empty());
    app.call(Method::GET, &format!("/api/sessions/{id}"))
        .await
        .expect(404, Some("not_found"));
    // The turns' tasks outlive the session.
    app.call(Method::GET, &format!("/api/tasks/{second_task}"))
        .await
        .expect(200, None);
}

#[tokio::test]
async fn every_session_route_refuses_bad_input_with_a_documented_error() {
    let app = App::idle();
    let doc = app.call(Method::GET, "/api/openapi.json").await.json;
    let id = new_session(&app, &json!({})).await;
    let messages = format!("/api/sessions/{id}/messages");
    let cases: Vec<(Method, String, Option<Value>, u16, &str)> = vec![
        (
            Method::POST,
            "/api/sessions".into(),
            Some(json!({"workspace": "nope"})),
            404,
            "not_found",
        ),
        (
            Method::POST,
            "/api/sessions".into(),
            Some(json!({"title": 5})),
            400,
            "bad_request",
        ),
        (
            Method::POST,
            "/api/sessions".into(),
            Some(json!({"prompt": "p"})),
            400,
            "bad_request",
        ),
        (
            Method::POST,
            "/api/sessions".into(),
            None,
            400,
            "bad_request",
        ),
        (
            Method::GET,
            "/api/sessions/s_unknown".into(),
            None,
            404,
            "not_found",
        ),
        (
            Method::GET,
            "/api/sessions/%FF".into(),
            None,
            400,
            "bad_request",
        ),
        (
            Method::DELETE,
            "/api/sessions/s_unknown".into(),
            None,
            404,
            "not_found",
        ),
        (
            Method::DELETE,
            "/api/sessions/%FF".into(),
            None,
            400,
            "bad_request",
        ),
        (
            Method::POST,
            "/api/sessions/s_unknown/messages".into(),
            Some(json!({"content": "hi"})),
            404,
            "not_found",
        ),
        (
            Method::POST,
            messages.clone(),
            Some(json!({"content": "  "})),
            400,
            "bad_request",
        ),
        (
            Method::POST,
            messages.clone(),
            Some(json!({"content": 5})),
            400,
            "bad_request",
        ),
        (
            Method::POST,
            messages.clone(),
            Some(json!({})),
            400,
            "bad_request",
        ),
        (Method::POST, messages.clone(), None, 400, "bad_request"),
    ];
    for (method, path, body, status, code) in cases {
        let reply = match &body {
            Some(body) => app.call_json(method.clone(), &path, body).await,
            None => app.call(method.clone(), &path).await,
        };
        reply.expect(status, Some(code));
        let template = if path.ends_with("/messages") {
            "/api/sessions/{id}/messages"
        } else if path == "/api/sessions" {
            "/api/sessions"
        } else {
            "/api/sessions/{id}"
        };
        crate::openapi::assert_documented(&doc, method.as_str(), template, &reply, &path);
    }
    // A session whose turn is still queued (no workers here) is busy.
    send(&app, &id, "first").await.expect(202, None);
    for (method, path) in [
        (Method::POST, messages.as_str()),
        (Method::DELETE, &format!("/api/sessions/{id}")),
    ] {
        let reply = match method {
            Method::POST => send(&app, &id, "second").await,
            _ => app.call(method.clone(), path).await,
        };
        reply.expect(409, Some("session_busy"));
        let template = if method == Method::POST {
            "/api/sessions/{id}/messages"
        } else {
            "/api/sessions/{id}"
        };
        crate::openapi::assert_documented(&doc, method.as_str(), template, &reply, "busy");
    }
}
