//! `/api/memory`: read with an ETag; replace only with a matching `If-Match` (428
//! without one, 412 on a stale one, nothing written either way); audited as operator.
#![allow(
    clippy::disallowed_methods,
    reason = "the test inspects the memory file behind the service's back"
)]

use std::path::PathBuf;

use axum::body::Body;
use axum::http::Method;
use pp_knowledge::{MemoryService, MemorySettings};
use pp_test_support::Store;
use pp_test_support::TempTree;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{App, Reply, authed};

/// The fixture's data directory: `data/` in the tree's base, outside the workspace.
pub(crate) fn service(tree: &TempTree, store: &Store) -> MemoryService {
    let data = tree.base().join("data");
    std::fs::create_dir_all(&data).unwrap();
    MemoryService::new(MemorySettings::new(data), store.clone())
}

fn memory_file(app: &App) -> PathBuf {
    app.tree.base().join("data").join("memory.md")
}

async fn put(app: &App, if_match: Option<&str>, content: &str) -> Reply {
    let mut request = authed(Method::PUT, "/api/memory").header("content-type", "application/json");
    if let Some(version) = if_match {
        request = request.header("if-match", version);
    }
    app.send(
        request
            .body(Body::from(json!({"content": content}).to_string()))
            .unwrap(),
    )
    .await
}

fn etag(reply: &Reply) -> String {
    reply.headers["etag"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn get_returns_the_content_the_version_and_an_etag() {
    let app = App::idle();
    let reply = app.call(Method::GET, "/api/memory").await;
    reply.expect(200, None);
    assert_eq!(reply.json, json!({"content": "", "version": "absent"}));
    assert_eq!(etag(&reply), "\"absent\"");

    std::fs::write(memory_file(&app), "abc").unwrap();
    let reply = app.call(Method::GET, "/api/memory").await;
    let version = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    assert_eq!(reply.json, json!({"content": "abc", "version": version}));
    assert_eq!(etag(&reply), format!("\"{version}\""));
}

#[tokio::test]
async fn put_with_the_current_etag_replaces_and_audits_as_operator() {
    let app = App::idle();
    let first = put(&app, Some("\"absent\""), "likes tea\n").await;
    first.expect(200, None);
    assert_eq!(first.json["content"], "likes tea\n");
    assert_eq!(
        etag(&first),
        format!("\"{}\"", first.json["version"].as_str().unwrap())
    );
    assert_eq!(
        std::fs::read_to_string(memory_file(&app)).unwrap(),
        "likes tea\n"
    );
    let second = put(&app, Some(&etag(&first)), "likes coffee\n").await;
    second.expect(200, None);
    let shown = app.call(Method::GET, "/api/memory").await;
    assert_eq!(shown.json, second.json);
    let audit = app.audit("memory_updated", None).await;
    assert_eq!(audit.len(), 2);
    assert_eq!(audit[0].actor, pp_types::Actor::Operator);
    assert_eq!(audit[0].target.as_deref(), Some("memory.md"));
}

#[tokio::test]
async fn put_without_if_match_is_428_and_writes_nothing() {
    let app = App::idle();
    std::fs::write(memory_file(&app), "keep\n").unwrap();
    put(&app, None, "lost\n")
        .await
        .expect(428, Some("precondition_required"));
    assert_eq!(
        std::fs::read_to_string(memory_file(&app)).unwrap(),
        "keep\n"
    );
    assert!(app.audit("memory_updated", None).await.is_empty());
}

#[tokio::test]
async fn put_with_a_stale_version_is_412_and_writes_nothing() {
    let app = App::idle();
    let read = app.call(Method::GET, "/api/memory").await;
    // Someone else saves first.
    put(&app, Some(&etag(&read)), "theirs\n")
        .await
        .expect(200, None);
    // Our save, based on the older read, loses and changes nothing.
    put(&app, Some(&etag(&read)), "mine\n")
        .await
        .expect(412, Some("version_mismatch"));
    assert_eq!(
        std::fs::read_to_string(memory_file(&app)).unwrap(),
        "theirs\n"
    );
    assert_eq!(app.audit("memory_updated", None).await.len(), 1);
}

#[tokio::test]
async fn a_foreign_origin_cannot_write_the_memory() {
    let app = App::idle();
    let reply = app
        .send(
            authed(Method::PUT, "/api/memory")
                .header("content-type", "application/json")
                .header("if-match", "\"absent\"")
                .header("origin", "http://evil.example.com")
                .body(Body::from(r#"{"content": "x"}"#))
                .unwrap(),
        )
        .await;
    reply.expect(403, Some("forbidden"));
    assert!(!memory_file(&app).exists());
}
