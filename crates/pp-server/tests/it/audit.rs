//! `GET /api/audit` and its filters.

use axum::body::Body;
use axum::http::Method;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::{App, authed};

fn ids(reply: &Value) -> Vec<i64> {
    reply["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn audit_filters() {
    let app = App::running();
    for name in ["one", "two", "three"] {
        let request = authed(Method::PUT, &format!("/api/files/content?path={name}.txt"))
            .body(Body::from(name))
            .unwrap();
        app.send(request).await.expect(201, None);
    }
    let (task, approval) = app.waiting_write("agent.txt", "a\n").await;
    app.call_json(
        Method::POST,
        &format!("/api/approvals/{approval}/resolve?wait=true"),
        &json!({"decision": "approve"}),
    )
    .await
    .expect(200, None);

    let all = app.call(Method::GET, "/api/audit").await;
    all.expect(200, None);
    let all_ids = ids(&all.json);
    assert!(
        all_ids.windows(2).all(|pair| pair[0] > pair[1]),
        "newest first: {all_ids:?}"
    );

    let operator = app
        .call(
            Method::GET,
            "/api/audit?actor=operator&action=file_uploaded",
        )
        .await;
    let entries = operator.json["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 3);
    assert!(entries.iter().all(|entry| entry["actor"] == "operator"));
    assert_eq!(entries[0]["target"], "three.txt");
    assert!(entries[0]["at"].as_str().unwrap().ends_with('Z'));

    let agent = app.call(Method::GET, "/api/audit?actor=agent").await;
    let entries = agent.json["entries"].as_array().unwrap();
    assert!(!entries.is_empty());
    assert!(entries.iter().all(|entry| entry["actor"] == "agent"));
    assert!(entries.iter().any(|entry| {
        entry["action"] == "tool_executed"
            && entry["target"] == "agent.txt"
            && entry["arguments_hash"]
                .as_str()
                .unwrap()
                .starts_with("sha256:")
    }));

    let for_task = app
        .call(Method::GET, &format!("/api/audit?task_id={task}"))
        .await;
    let entries = for_task.json["entries"].as_array().unwrap();
    assert!(
        entries
            .iter()
            .all(|entry| entry["task_id"] == task.as_str())
    );
    assert!(
        entries
            .iter()
            .any(|entry| entry["action"] == "approval_approved"
                && entry["actor"] == "operator"
                && entry["approval_id"] == approval.as_str())
    );

    // Paging backwards with before= and limit=.
    let first = app.call(Method::GET, "/api/audit?limit=2").await;
    let first_ids = ids(&first.json);
    assert_eq!(first_ids, all_ids[..2]);
    let next = app
        .call(
            Method::GET,
            &format!("/api/audit?limit=2&before={}", first_ids[1]),
        )
        .await;
    assert_eq!(ids(&next.json), all_ids[2..4]);

    let nothing = app
        .call(Method::GET, "/api/audit?action=no_such_action")
        .await;
    assert_eq!(nothing.json, json!({"entries": []}));
}

#[tokio::test]
async fn login_rows_can_be_left_out() {
    let app = App::idle();
    for action in [
        pp_types::AuditAction::ConsoleLogin,
        pp_types::AuditAction::FileUploaded,
        pp_types::AuditAction::ConsoleLogin,
    ] {
        app.service
            .append_audit(pp_types::NewAudit::new(action))
            .await
            .unwrap();
    }
    let actions = |reply: &Value| -> Vec<String> {
        reply["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| entry["action"].as_str().unwrap().to_owned())
            .collect()
    };
    let all = app.call(Method::GET, "/api/audit").await;
    assert_eq!(actions(&all.json).len(), 3);
    let reply = app
        .call(Method::GET, "/api/audit?exclude=console_login")
        .await;
    reply.expect(200, None);
    assert_eq!(actions(&reply.json), ["file_uploaded"]);
    let reply = app
        .call(
            Method::GET,
            "/api/audit?exclude=console_login,%20file_uploaded,console_login",
        )
        .await;
    assert_eq!(reply.json, json!({"entries": []}));
    let empty = app.call(Method::GET, "/api/audit?exclude=").await;
    assert_eq!(actions(&empty.json).len(), 3);
    let typo = app
        .call(Method::GET, "/api/audit?exclude=console_logins")
        .await;
    typo.expect(400, Some("bad_request"));
    assert!(
        typo.json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("console_logins"),
        "{typo:?}"
    );
}
