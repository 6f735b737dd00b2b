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
