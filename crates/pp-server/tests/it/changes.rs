//! The change log over HTTP: `GET /api/tasks/{id}/changes`, `POST
//! /api/changes/{id}/revert` (200, 409 `changed_since` with the diff, 409
//! `not_revertible`, 404), task counts and the card's outcome.

use axum::http::Method;
use pp_types::{TaskId, TaskState};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::App;

/// A completed task that overwrote `plan.md` (`a\nb\n` → `a\nagent\n`), and its change.
async fn overwritten(app: &App) -> (TaskId, String, Value) {
    app.tree.file("plan.md", "a\nb\n");
    let (task, approval) = app.waiting_write("plan.md", "a\nagent\n").await;
    app.call_json(
        Method::POST,
        &format!("/api/approvals/{approval}/resolve"),
        &json!({"decision": "approve"}),
    )
    .await
    .expect(202, None);
    app.wait_for(&task, TaskState::Completed).await;
    let reply = app
        .call(Method::GET, &format!("/api/tasks/{task}/changes"))
        .await;
    reply.expect(200, None);
    let change = reply.json["changes"][0].clone();
    (task, approval, change)
}

#[tokio::test]
async fn a_change_is_listed_counted_and_reverted() {
    let app = App::running();
    let (task, approval, change) = overwritten(&app).await;
    let id = change["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("c_"));
    assert_eq!(
        json!({
            "task_id": change["task_id"], "approval_id": change["approval_id"],
            "tool": change["tool"], "kind": change["kind"], "path": change["path"],
            "root": change["root"], "bytes": change["bytes"], "revertible": change["revertible"],
            "reverted_by": change["reverted_by"],
        }),
        json!({
            "task_id": task.as_str(), "approval_id": approval, "tool": "write_file",
            "kind": "overwritten", "path": "plan.md", "root": "workspace", "bytes": 8,
            "revertible": true,
            "reverted_by": null,
        })
    );
    let shown = app.call(Method::GET, &format!("/api/tasks/{task}")).await;
    assert_eq!(
        shown.json["changes"],
        json!({"created": 0, "overwritten": 1, "edited": 0, "reverted": 0, "effects_unknown": 0,
               "moved": 0, "deleted": 0, "folder_created": 0})
    );
    let listed = app.call(Method::GET, "/api/tasks").await;
    assert_eq!(listed.json["tasks"][0]["changes"]["overwritten"], 1);
    let card = app
        .call(Method::GET, &format!("/api/approvals/{approval}"))
        .await;
    assert_eq!(
        (
            card.json["revertible"].clone(),
            card.json["outcome"].clone()
        ),
        (
            json!(true),
            json!({"status": "done", "message": "Written `plan.md` (8 B)"})
        )
    );

    let reverted = app
        .call(Method::POST, &format!("/api/changes/{id}/revert"))
        .await;
    reverted.expect(200, None);
    assert_eq!(reverted.json["change"]["kind"], "reverted");
    assert_eq!(reverted.json["change"]["path"], "plan.md");
    assert_eq!(app.tree.read("plan.md"), "a\nb\n");
    let rows = app.audit("change_reverted", Some(&task)).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].actor, pp_types::Actor::Operator);

    // Again: nothing left to revert.
    let again = app
        .call(Method::POST, &format!("/api/changes/{id}/revert"))
        .await;
    again.expect(409, Some("not_revertible"));
    assert_code_documented(&app, again.code()).await;
}

/// The document's error-code enum names `code` (schema-checking clients reject others).
async fn assert_code_documented(app: &App, code: &str) {
    let doc = app.call(Method::GET, "/api/openapi.json").await.json;
    let known = doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]
        ["enum"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        known.iter().any(|known| known == code),
        "`{code}` not in {known:?}"
    );
}

#[tokio::test]
async fn a_file_changed_since_is_refused_with_the_diff() {
    let app = App::running();
    let (_task, _approval, change) = overwritten(&app).await;
    app.tree.file("plan.md", "a\nagent\nmine\n");
    let refused = app
        .call(
            Method::POST,
            &format!("/api/changes/{}/revert", change["id"].as_str().unwrap()),
        )
        .await;
    refused.expect(409, Some("changed_since"));
    assert_code_documented(&app, refused.code()).await;
    assert_eq!(
        refused.json["diff"],
        "--- a/plan.md\n+++ b/plan.md\n@@ -1,2 +1,3 @@\n a\n agent\n+mine\n"
    );
    assert_eq!(app.tree.read("plan.md"), "a\nagent\nmine\n", "untouched");
}

#[tokio::test]
async fn unknown_ids_are_404() {
    let app = App::idle();
    app.call(Method::GET, "/api/tasks/t_nope/changes")
        .await
        .expect(404, Some("not_found"));
    app.call(Method::POST, "/api/changes/c_nope/revert")
        .await
        .expect(404, Some("not_found"));
}

/// A move over HTTP: the card names both paths, the change carries `from_path` (the
/// document describes it and the kind), and the revert moves the file back.
#[tokio::test]
async fn a_move_is_carded_logged_with_where_it_came_from_and_reverted() {
    let app = App::running();
    app.tree.file("draft.md", "text\n");
    app.tree.dir("docs");
    let task = app
        .create_task(json!([
            {"tool_calls": [{"name": "move_file", "arguments": {"from": "draft.md", "to": "docs/final.md"}}]},
            {"content": "done"}
        ]))
        .await;
    app.wait_for(&task.id, TaskState::WaitingApproval).await;
    let approval = app.service.approvals_for_task(&task.id).await.unwrap()[0]
        .id
        .to_string();
    let card = app
        .call(Method::GET, &format!("/api/approvals/{approval}"))
        .await;
    card.expect(200, None);
    assert_eq!(
        (
            &card.json["label"],
            &card.json["destination"],
            &card.json["destination_resolved"]
        ),
        (
            &json!("move"),
            &json!("docs/final.md"),
            &json!("docs/final.md")
        )
    );
    app.call_json(
        Method::POST,
        &format!("/api/approvals/{approval}/resolve"),
        &json!({"decision": "approve"}),
    )
    .await
    .expect(202, None);
    app.wait_for(&task.id, TaskState::Completed).await;
    let listed = app
        .call(Method::GET, &format!("/api/tasks/{}/changes", task.id))
        .await;
    listed.expect(200, None);
    let change = listed.json["changes"][0].clone();
    assert_eq!(
        (&change["kind"], &change["from_path"], &change["path"]),
        (&json!("moved"), &json!("draft.md"), &json!("docs/final.md"))
    );
    let doc = app.call(Method::GET, "/api/openapi.json").await.json;
    let schema = &doc["components"]["schemas"]["Change"];
    assert!(schema["properties"]["from_path"].is_object());
    for kind in ["moved", "deleted", "folder_created"] {
        assert!(
            schema["properties"]["kind"]["enum"]
                .as_array()
                .is_some_and(|kinds| kinds.contains(&json!(kind))),
            "{kind}"
        );
    }
    let shown = app
        .call(Method::GET, &format!("/api/tasks/{}", task.id))
        .await;
    assert_eq!(shown.json["changes"]["moved"], 1);
    let reverted = app
        .call(
            Method::POST,
            &format!("/api/changes/{}/revert", change["id"].as_str().unwrap()),
        )
        .await;
    reverted.expect(200, None);
    assert_eq!(app.tree.read("draft.md"), "text\n");
    assert!(!app.tree.exists("docs/final.md"));
}

#[tokio::test]
#[expect(
    clippy::disallowed_methods,
    reason = "the test changes the workspace behind the service's back"
)]
async fn a_revert_where_the_file_became_a_folder_or_its_folder_a_link_out_is_409_changed_since() {
    let app = App::running();
    let (task, _, change) = overwritten(&app).await;
    let id = change["id"].as_str().unwrap().to_owned();
    // The file became a folder: a change since, not an internal error.
    std::fs::remove_file(app.tree.workspace().join("plan.md")).unwrap();
    app.tree.file("plan.md/inside.txt", "someone's\n");
    let reply = app
        .call(Method::POST, &format!("/api/changes/{id}/revert"))
        .await;
    reply.expect(409, Some("changed_since"));
    assert_eq!(app.tree.read("plan.md/inside.txt"), "someone's\n");

    // A file in a folder that was swapped for a link leading outside.
    app.tree.file("docs/a.md", "a\n");
    let (second, approval) = app.waiting_write("docs/a.md", "agent\n").await;
    app.call_json(
        Method::POST,
        &format!("/api/approvals/{approval}/resolve"),
        &json!({"decision": "approve"}),
    )
    .await
    .expect(202, None);
    app.wait_for(&second, TaskState::Completed).await;
    let changes = app
        .call(Method::GET, &format!("/api/tasks/{second}/changes"))
        .await;
    let id = changes.json["changes"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let workspace = app.tree.workspace();
    std::fs::rename(workspace.join("docs"), workspace.join("docs.old")).unwrap();
    app.tree.outside_file("docs/a.md", "agent\n");
    app.tree.symlink("docs", app.tree.outside().join("docs"));
    let outside = app.tree.outside_snapshot();
    let reply = app
        .call(Method::POST, &format!("/api/changes/{id}/revert"))
        .await;
    reply.expect(409, Some("changed_since"));
    assert_eq!(
        app.tree.outside_snapshot(),
        outside,
        "nothing written outside"
    );
    assert_eq!(app.tree.read("docs.old/a.md"), "agent\n");
    assert!(app.audit("change_reverted", Some(&task)).await.is_empty());
    assert!(app.audit("change_reverted", Some(&second)).await.is_empty());
}
