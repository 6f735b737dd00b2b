//! `/api/changesets`: one model turn's approval-needing calls as one review, decided by
//! one request (or by single resolves), each call exactly once.

use axum::http::Method;
use pp_types::TaskState;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::App;

/// A task whose one turn writes `paths`, waiting on their changeset; returns the task
/// and the changeset's id.
async fn waiting_on(app: &App, paths: &[&str]) -> (pp_types::TaskId, String) {
    let calls: Vec<Value> = paths
        .iter()
        .map(|path| json!({"name": "write_file", "arguments": {"path": path, "content": "new\n"}}))
        .collect();
    let task = app
        .create_task(json!([{"tool_calls": calls}, {"content": "done"}]))
        .await;
    app.wait_for(&task.id, TaskState::WaitingApproval).await;
    let cards = app.call(Method::GET, "/api/approvals").await;
    let changeset = cards.json["approvals"][0]["changeset_id"]
        .as_str()
        .expect("a changeset id on the inbox row")
        .to_owned();
    (task.id, changeset)
}

#[tokio::test]
async fn a_changeset_is_shown_whole_and_decided_by_one_request() {
    let app = App::running();
    app.tree.file("b.md", "old\n");
    let (task, changeset) = waiting_on(&app, &["a.md", "b.md", "c.md"]).await;

    let review = app
        .call(Method::GET, &format!("/api/changesets/{changeset}"))
        .await;
    review.expect(200, None);
    assert_eq!(review.json["id"], changeset.as_str());
    assert_eq!(review.json["task_id"], task.as_str());
    assert_eq!(
        (review.json["size"].clone(), review.json["pending"].clone()),
        (json!(3), json!(3))
    );
    let cards = review.json["approvals"].as_array().unwrap();
    let targets: Vec<_> = cards.iter().map(|card| card["target"].clone()).collect();
    assert_eq!(targets, [json!("a.md"), json!("b.md"), json!("c.md")]);
    for card in cards {
        assert_eq!(card["changeset_id"], changeset.as_str());
        assert_eq!(card["precheck"]["status"], "ready");
    }
    // The single card says which changeset it is part of.
    let one = app
        .call(
            Method::GET,
            &format!("/api/approvals/{}", cards[1]["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(one.json["changeset_id"], changeset.as_str());

    // Approve all three with the fingerprints the review showed, one request.
    let decisions: Vec<Value> = cards
        .iter()
        .map(|card| {
            json!({"approval_id": card["id"], "decision": "approve",
                   "seen_fingerprint": card["precheck"]["fingerprint"]})
        })
        .collect();
    let resolved = app
        .call_json(
            Method::POST,
            &format!("/api/changesets/{changeset}/resolve?wait=true"),
            &json!({"decisions": decisions}),
        )
        .await;
    resolved.expect(200, None);
    let statuses: Vec<_> = resolved.json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|result| result["status"].clone())
        .collect();
    assert_eq!(
        statuses,
        [json!("accepted"), json!("accepted"), json!("accepted")]
    );
    assert_eq!(
        app.wait_for(&task, TaskState::Completed).await.state,
        TaskState::Completed
    );
    for path in ["a.md", "b.md", "c.md"] {
        assert_eq!(app.tree.read(path), "new\n");
    }

    // A second request finds every call decided: 202, each `already_resolved`.
    let again = app
        .call_json(
            Method::POST,
            &format!("/api/changesets/{changeset}/resolve"),
            &json!({"decisions": decisions}),
        )
        .await;
    again.expect(202, None);
    assert!(
        again.json["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|result| result["status"] == "already_resolved"),
        "{:?}",
        again.json
    );
}

#[tokio::test]
async fn a_changeset_resolve_refuses_an_approval_outside_it_or_named_twice() {
    let app = App::running();
    let (task, changeset) = waiting_on(&app, &["a.md", "b.md"]).await;
    let review = app
        .call(Method::GET, &format!("/api/changesets/{changeset}"))
        .await;
    let first = review.json["approvals"][0]["id"].clone();
    let uri = format!("/api/changesets/{changeset}/resolve");

    let twice = json!({"decisions": [
        {"approval_id": first, "decision": "approve"},
        {"approval_id": first, "decision": "reject"}]});
    app.call_json(Method::POST, &uri, &twice)
        .await
        .expect(400, Some("bad_request"));
    let outside = json!({"decisions": [{"approval_id": "a_elsewhere", "decision": "approve"}]});
    app.call_json(Method::POST, &uri, &outside)
        .await
        .expect(400, Some("bad_request"));
    let unknown = json!({"decisions": []});
    app.call_json(Method::POST, "/api/changesets/cs_unknown/resolve", &unknown)
        .await
        .expect(404, Some("not_found"));
    app.call(Method::GET, "/api/changesets/cs_unknown")
        .await
        .expect(404, Some("not_found"));
    let unknown_field = json!({"decisions": [], "approve_all": true});
    app.call_json(Method::POST, &uri, &unknown_field)
        .await
        .expect(400, Some("bad_request"));

    // Nothing was decided by the refused requests.
    let review = app
        .call(Method::GET, &format!("/api/changesets/{changeset}"))
        .await;
    assert_eq!(review.json["pending"], 2);
    assert_eq!(
        app.service.task(&task).await.unwrap().state,
        TaskState::WaitingApproval
    );
}
