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

/// What the read-time check costs: a single card (segment built, target fingerprinted,
/// no diff while unchanged; then with a changed 2,000-line file, a fresh diff) against
/// the inbox, which does not check.
#[tokio::test]
#[ignore = "measurement, not a check"]
async fn card_read_latency() {
    use std::time::{Duration, Instant};

    fn summary(mut times: Vec<Duration>) -> String {
        times.sort();
        format!(
            "median {:?}, p90 {:?}, max {:?}",
            times[times.len() / 2],
            times[times.len() * 9 / 10],
            times[times.len() - 1]
        )
    }
    let app = App::running();
    let original: String = (0..2000).map(|line| format!("line {line}\n")).collect();
    app.tree.file("big.md", &original);
    let (_task, id) = app
        .waiting_write(
            "big.md",
            &original.replace("line 1000\n", "line one thousand\n"),
        )
        .await;
    let uri = format!("/api/approvals/{id}");
    let time = |uri: String| {
        let app = &app;
        async move {
            let mut times = Vec::new();
            for _ in 0..200 {
                let started = Instant::now();
                app.call(Method::GET, &uri).await.expect(200, None);
                times.push(started.elapsed());
            }
            summary(times)
        }
    };
    let unchanged = time(uri.clone()).await;
    let inbox = time("/api/approvals".to_owned()).await;
    app.tree
        .file("big.md", &original.replace("line 5\n", "line five\n"));
    let changed = time(uri).await;
    println!("n=200 each, 2,000-line target");
    println!("GET /api/approvals/{{id}} unchanged: {unchanged}");
    println!("GET /api/approvals/{{id}} changed (fresh diff): {changed}");
    println!("GET /api/approvals (no check): {inbox}");
}
