//! `GET /api/approvals/{id}`: the card's target checked again at read time, and the
//! size of the change.

use axum::http::Method;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::App;

#[tokio::test]
async fn a_card_says_when_its_target_changed_and_diffs_against_the_current_file() {
    let app = App::running();
    app.tree.file("notes/todo.md", "- milk\n");
    let (_task, id) = app.waiting_write("notes/todo.md", "- milk\n- eggs\n").await;
    let uri = format!("/api/approvals/{id}");

    let card = app.call(Method::GET, &uri).await;
    card.expect(200, None);
    assert_eq!(
        card.json["current"],
        json!({"changed": false, "diff": null})
    );
    assert_eq!(card.json["scope"], "replaces_whole_file");
    assert_eq!(
        (card.json["added"].clone(), card.json["removed"].clone()),
        (json!(1), json!(0))
    );

    app.tree
        .file("notes/todo.md", "- milk\n- bread, written by hand\n");
    let card = app.call(Method::GET, &uri).await;
    card.expect(200, None);
    assert_eq!(card.json["current"]["changed"], true);
    let diff = card.json["current"]["diff"].as_str().unwrap();
    assert!(diff.contains("-- bread, written by hand"), "{diff}");
    assert!(diff.contains("+- eggs"), "{diff}");

    // The inbox leaves the check to the single card.
    let inbox = app.call(Method::GET, "/api/approvals").await;
    assert_eq!(inbox.json["approvals"][0]["id"], id.as_str());
    assert_eq!(inbox.json["approvals"][0].get("current"), None);
}

#[tokio::test]
async fn a_new_file_card_counts_its_lines() {
    let app = App::running();
    let (_task, id) = app.waiting_write("reports/x.md", "one\ntwo\nthree\n").await;
    let card = app.call(Method::GET, &format!("/api/approvals/{id}")).await;
    assert_eq!(card.json["scope"], "new_file");
    assert_eq!(
        (card.json["added"].clone(), card.json["removed"].clone()),
        (json!(3), json!(0))
    );
    assert_eq!(
        card.json["current"],
        json!({"changed": false, "diff": null})
    );
}
