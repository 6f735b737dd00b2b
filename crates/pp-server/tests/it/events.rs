//! `GET /api/tasks/{id}/events` as JSON comes in pages.

use axum::http::Method;
use pp_types::TaskState;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::App;

#[tokio::test]
async fn task_events_come_in_pages_that_chain_with_next_after() {
    let app = App::running();
    let task = app
        .create_task(json!([
            {"content": "one"},
        ]))
        .await;
    app.wait_for(&task.id, TaskState::Completed).await;
    let uri = format!("/api/tasks/{}/events", task.id);

    let whole = app.call(Method::GET, &uri).await;
    whole.expect(200, None);
    let all: Vec<i64> = whole.json["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["seq"].as_i64().unwrap())
        .collect();
    assert!(all.len() >= 3, "{whole:?}");
    assert_eq!(whole.json["next_after"], json!(null));

    let mut seen = Vec::new();
    let mut after = 0;
    let mut pages = 0;
    loop {
        let reply = app
            .call(Method::GET, &format!("{uri}?after={after}&limit=2"))
            .await;
        reply.expect(200, None);
        let events = reply.json["events"].as_array().unwrap();
        assert!(events.len() <= 2, "{reply:?}");
        seen.extend(events.iter().map(|event| event["seq"].as_i64().unwrap()));
        pages += 1;
        match reply.json["next_after"].as_i64() {
            Some(next) => after = next,
            None => break,
        }
    }
    assert_eq!(seen, all);
    assert_eq!(pages, all.len().div_ceil(2));

    for limit in ["0", "5001", "x"] {
        app.call(Method::GET, &format!("{uri}?limit={limit}"))
            .await
            .expect(400, Some("bad_request"));
    }
    app.call(Method::GET, "/api/tasks/t_missing/events?limit=5")
        .await
        .expect(404, Some("not_found"));
}

/// The event types the console listens for and renders, and the OpenAPI document's list,
/// are copies of `EventKind::TYPE_NAMES`: every type appears in each.
#[tokio::test]
async fn every_event_type_is_listed_by_the_console_and_the_document() {
    let app = crate::App::idle();
    let doc = app
        .call(axum::http::Method::GET, "/api/openapi.json")
        .await
        .json;
    let described =
        doc["components"]["schemas"]["StoredEvent"]["properties"]["type"]["description"]
            .as_str()
            .unwrap()
            .to_owned();
    let api_js = include_str!("../../assets/api.js");
    let listed = api_js
        .split("export const EVENT_TYPES = [")
        .nth(1)
        .and_then(|rest| rest.split("];").next())
        .unwrap();
    let timeline_js = include_str!("../../assets/timeline.js");
    for name in pp_types::EventKind::TYPE_NAMES {
        assert!(described.contains(&format!("`{name}`")), "openapi: {name}");
        assert!(listed.contains(&format!("\"{name}\"")), "api.js: {name}");
        assert!(
            timeline_js.contains(&format!("case \"{name}\":")),
            "timeline.js: {name}"
        );
    }
}
