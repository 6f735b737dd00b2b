//! `GET /api/tasks/{id}` carries the task's token usage, as the document describes it.

use axum::http::Method;
use pp_types::TaskState;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::App;

#[tokio::test]
async fn a_task_shows_its_usage_and_every_call_event_its_own() {
    let app = App::running();
    app.tree.file("a.txt", "A\n");
    let task = app
        .create_task(json!([
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}],
             "usage": {"prompt_tokens": 900, "completion_tokens": 40, "cached_tokens": 512}},
            {"content": "done",
             "usage": {"prompt_tokens": 1000, "completion_tokens": 60, "reasoning_tokens": 25}}
        ]))
        .await;
    app.wait_for(&task.id, TaskState::Completed).await;

    let reply = app
        .call(Method::GET, &format!("/api/tasks/{}", task.id))
        .await;
    reply.expect(200, None);
    let usage = reply.json["usage"].clone();
    assert_eq!(
        usage,
        json!({"prompt_tokens": 1900, "completion_tokens": 100, "cached_tokens": 512,
               "reasoning_tokens": 25, "total_tokens": 2000, "model_calls": 2})
    );

    // The document's schema names every key given, and requires those always given.
    let doc = app.call(Method::GET, "/api/openapi.json").await.json;
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["Task"]["properties"]["usage"]["$ref"],
        "#/components/schemas/TaskUsage"
    );
    let described = &schemas["TaskUsage"];
    for key in described["required"].as_array().unwrap() {
        assert!(usage.get(key.as_str().unwrap()).is_some(), "{key}");
    }
    for key in usage.as_object().unwrap().keys() {
        assert!(described["properties"].get(key).is_some(), "{key}");
    }

    let events = app
        .call(Method::GET, &format!("/api/tasks/{}/events", task.id))
        .await;
    events.expect(200, None);
    let calls: Vec<Value> = events.json["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["type"] == "assistant_message")
        .map(|event| event["usage"].clone())
        .collect();
    assert_eq!(
        calls,
        vec![
            json!({"prompt_tokens": 900, "completion_tokens": 40, "cached_tokens": 512,
                   "reasoning_tokens": 0}),
            json!({"prompt_tokens": 1000, "completion_tokens": 60, "cached_tokens": 0,
                   "reasoning_tokens": 25}),
        ]
    );
    assert!(schemas["StoredEvent"]["properties"]["usage"].is_object());
}
