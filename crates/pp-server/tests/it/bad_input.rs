//! Bad input on every route: a clear 4xx with a code, never a 5xx.

use axum::body::Body;
use axum::http::Method;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{App, authed};

fn raw_json(method: Method, uri: &str, body: &str) -> axum::http::Request<Body> {
    authed(method, uri)
        .header("content-type", "application/json")
        .body(Body::from(body.to_owned()))
        .unwrap()
}

#[tokio::test]
async fn create_task_rejects_bad_bodies() {
    let app = App::idle();
    for body in [
        r#"{"prompt":"#,
        "not json",
        r#"{"prompt": 5}"#,
        r#"{"prompt": "x", "workspace": 3}"#,
        "{}",
        "[]",
        "null",
        r#"{"prompt": "x", "script": [{"content": "hi"}]}"#,
        r#"{"prompt": "   "}"#,
    ] {
        app.send(raw_json(Method::POST, "/api/tasks", body))
            .await
            .expect(400, Some("bad_request"));
    }
    // No Content-Type.
    let request = authed(Method::POST, "/api/tasks")
        .body(Body::from(json!({"prompt": "x"}).to_string()))
        .unwrap();
    let reply = app.send(request).await;
    reply.expect(400, Some("bad_request"));
    assert!(
        reply.json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Content-Type")
    );
    // Unknown workspace.
    app.call_json(
        Method::POST,
        "/api/tasks",
        &json!({"prompt": "x", "workspace": "nope"}),
    )
    .await
    .expect(404, Some("not_found"));
    // Over the 1 MiB body limit.
    let huge = json!({"prompt": "x".repeat(2 << 20)});
    app.call_json(Method::POST, "/api/tasks", &huge)
        .await
        .expect(413, Some("payload_too_large"));
    let tasks = app.call(Method::GET, "/api/tasks").await;
    assert_eq!(tasks.json["tasks"], json!([]));
}

#[tokio::test]
async fn resolve_rejects_bad_bodies() {
    let app = App::running();
    let (_, approval) = app.waiting_write("a.txt", "a\n").await;
    let uri = format!("/api/approvals/{approval}/resolve");
    for body in [
        r#"{"decision": "maybe"}"#,
        r#"{"decision": true}"#,
        r#"{"decision": "approve", "reason": 5}"#,
        r#"{"decision": "approve", "extra": 1}"#,
        r#"{"decision": "#,
        "{}",
    ] {
        app.send(raw_json(Method::POST, &uri, body))
            .await
            .expect(400, Some("bad_request"));
    }
    app.call_json(
        Method::POST,
        &format!("{uri}?wait=perhaps"),
        &json!({"decision": "approve"}),
    )
    .await
    .expect(400, Some("bad_request"));
    // Edited arguments only go with approve.
    app.call_json(
        Method::POST,
        &uri,
        &json!({"decision": "reject", "edited_arguments": {"path": "b.txt", "content": ""}}),
    )
    .await
    .expect(400, Some("bad_request"));
    let huge = json!({"decision": "reject", "reason": "x".repeat(2 << 20)});
    app.call_json(Method::POST, &uri, &huge)
        .await
        .expect(413, Some("payload_too_large"));
    // After all that the approval is still pending and nothing was written.
    let card = app
        .call(Method::GET, &format!("/api/approvals/{approval}"))
        .await;
    assert_eq!(card.json["state"], "pending");
    assert!(!app.tree.exists("a.txt"));
    // Unknown approval.
    app.call_json(
        Method::POST,
        "/api/approvals/a_unknown/resolve",
        &json!({"decision": "approve"}),
    )
    .await
    .expect(404, Some("not_found"));
}

#[tokio::test]
async fn filters_and_ids_are_checked() {
    let app = App::idle();
    let bad = [
        "/api/tasks?state=bogus",
        "/api/tasks?limit=abc",
        "/api/tasks?limit=0",
        "/api/tasks?limit=-1",
        "/api/tasks?limit=1000000",
        "/api/approvals?state=bogus",
        "/api/approvals?limit=x",
        "/api/audit?actor=robot",
        "/api/audit?before=abc",
        "/api/audit?limit=0",
        "/api/events?after=abc",
        "/api/events?limit=nope",
        "/api/files/content",
        "/api/files/content?path=",
    ];
    for uri in bad {
        app.call(Method::GET, uri)
            .await
            .expect(400, Some("bad_request"));
    }
    let missing = [
        (Method::GET, "/api/tasks/t_unknown"),
        (Method::GET, "/api/tasks/t_unknown/events"),
        (Method::POST, "/api/tasks/t_unknown/cancel"),
        (Method::POST, "/api/tasks/t_unknown/retry"),
        (Method::GET, "/api/approvals/a_unknown"),
        (Method::GET, "/api/files?workspace=nope"),
        (Method::GET, "/api/files/content?path=missing.txt"),
        (Method::GET, "/api/nowhere"),
        (Method::GET, "/nowhere"),
    ];
    for (method, uri) in missing {
        app.call(method, uri).await.expect(404, Some("not_found"));
    }
    let sse = authed(Method::GET, "/api/events")
        .header("accept", "text/event-stream")
        .header("last-event-id", "yesterday")
        .body(Body::empty())
        .unwrap();
    app.send(sse).await.expect(400, Some("bad_request"));
    for (method, uri) in [
        (Method::DELETE, "/api/tasks"),
        (Method::PUT, "/api/tasks/t_1"),
        (Method::GET, "/api/approvals/a_1/resolve"),
        (Method::POST, "/api/health"),
        (Method::DELETE, "/api/files/content"),
    ] {
        app.call(method, uri)
            .await
            .expect(405, Some("method_not_allowed"));
    }
}

#[tokio::test]
async fn state_conflicts_are_409() {
    let app = App::running();
    let task = app.create_task(json!([{"content": "done"}])).await;
    app.wait_for(&task.id, pp_types::TaskState::Completed).await;
    app.call(Method::POST, &format!("/api/tasks/{}/cancel", task.id))
        .await
        .expect(409, Some("invalid_state"));
    app.call(Method::POST, &format!("/api/tasks/{}/retry", task.id))
        .await
        .expect(409, Some("invalid_state"));
}

#[tokio::test]
async fn garbage_on_every_route_is_never_a_5xx() {
    let app = App::running();
    let (task, approval) = app.waiting_write("g.txt", "g\n").await;
    let routes = crate::auth::concrete_routes();
    let queries = [
        "",
        "?limit=-1&state=%00&after=x&path=%00&wait=2",
        "?path=../../etc/passwd&workspace=%FF",
        "?path=/etc/passwd",
        "?state=&limit=&after=&before=&actor=",
    ];
    let bodies = [
        "",
        "{{{{",
        "\u{0}\u{1}",
        r#"{"decision": "approve", "edited_arguments": 7}"#,
    ];
    for (method, path) in routes {
        for id in [
            "x_unknown",
            task.as_str(),
            approval.as_str(),
            "%2e%2e",
            "%FF",
        ] {
            let path = path.replace("x_unknown", id);
            for query in queries {
                for body in bodies {
                    if path.contains("/resolve") && id == approval && body.contains("approve") {
                        continue;
                    }
                    let request = authed(method.clone(), &format!("{path}{query}"))
                        .header("content-type", "application/json")
                        .header("accept", "application/json")
                        .body(Body::from(body))
                        .unwrap();
                    let reply = app.send(request).await;
                    assert!(
                        reply.status.as_u16() < 500,
                        "{method} {path}{query} {body:?}: {reply:?}"
                    );
                    if !reply.status.is_success() {
                        assert!(
                            !reply.code().is_empty(),
                            "{method} {path}{query}: {reply:?}"
                        );
                    }
                }
            }
        }
    }
}
