//! `GET /api/tasks?q=&state=&workspace=&created_by=&before=&limit=`: search, filters,
//! paging.

use axum::http::Method;
use pp_tasks::CreateTask;
use pp_types::Actor;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::App;

async fn create(app: &App, prompt: &str) -> String {
    create_by(app, prompt, Actor::Operator).await
}

async fn create_by(app: &App, prompt: &str, actor: Actor) -> String {
    app.service
        .create(CreateTask {
            prompt: prompt.into(),
            workspace: None,
            actor,
            script: None,
        })
        .await
        .unwrap()
        .id
        .to_string()
}

fn ids(reply: &Value) -> Vec<&str> {
    reply["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| task["id"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn tasks_are_searched_filtered_and_paged() {
    let app = App::idle();
    let march = create(&app, "Summarise the March invoices").await;
    let offer = create(&app, "Find the 50% offer").await;
    let notes = create(&app, "Tidy my notes").await;

    let found = app.call(Method::GET, "/api/tasks?q=INVOICES").await;
    found.expect(200, None);
    assert_eq!(ids(&found.json), [march.as_str()]);
    assert_eq!(found.json["next_before"], Value::Null);
    let percent = app.call(Method::GET, "/api/tasks?q=50%25").await;
    assert_eq!(ids(&percent.json), [offer.as_str()]);
    let wildcard = app.call(Method::GET, "/api/tasks?q=%25").await;
    assert_eq!(ids(&wildcard.json), [offer.as_str()], "`%` is literal");

    let queued_here = app
        .call(Method::GET, "/api/tasks?state=queued&workspace=main&q=t")
        .await;
    assert_eq!(
        ids(&queued_here.json),
        [notes.as_str(), offer.as_str(), march.as_str()]
    );
    let elsewhere = app.call(Method::GET, "/api/tasks?workspace=other").await;
    assert_eq!(elsewhere.json, json!({"tasks": [], "next_before": null}));

    let first = app.call(Method::GET, "/api/tasks?limit=2").await;
    assert_eq!(ids(&first.json), [notes.as_str(), offer.as_str()]);
    assert_eq!(first.json["next_before"], offer.as_str());
    let second = app
        .call(Method::GET, &format!("/api/tasks?limit=2&before={offer}"))
        .await;
    assert_eq!(ids(&second.json), [march.as_str()]);
    assert_eq!(second.json["next_before"], Value::Null);
    let exact = app.call(Method::GET, "/api/tasks?limit=3").await;
    assert_eq!(
        exact.json["next_before"],
        Value::Null,
        "a full page that holds the oldest match has no next page"
    );
}

#[tokio::test]
async fn an_unknown_state_is_a_bad_request() {
    let app = App::idle();
    app.call(Method::GET, "/api/tasks?state=sleeping")
        .await
        .expect(400, Some("bad_request"));
}

#[tokio::test]
async fn tasks_are_filtered_by_who_started_them() {
    let app = App::idle();
    let mine = create(&app, "Tidy my notes").await;
    let client = create_by(&app, "read_file notes.txt", Actor::McpClient).await;
    let by_client = app
        .call(Method::GET, "/api/tasks?created_by=mcp_client")
        .await;
    by_client.expect(200, None);
    assert_eq!(ids(&by_client.json), [client.as_str()]);
    assert_eq!(by_client.json["tasks"][0]["created_by"], "mcp_client");
    let by_me = app
        .call(Method::GET, "/api/tasks?created_by=operator")
        .await;
    assert_eq!(ids(&by_me.json), [mine.as_str()]);
    let everyone = app.call(Method::GET, "/api/tasks?created_by=").await;
    assert_eq!(ids(&everyone.json), [client.as_str(), mine.as_str()]);
    let unknown = app.call(Method::GET, "/api/tasks?created_by=robot").await;
    unknown.expect(400, Some("bad_request"));
    assert!(
        unknown.json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("mcp_client"),
        "{}",
        unknown.json
    );
}
