//! `GET /api/health` names the model; `GET /favicon.ico` serves the icon; neither needs
//! a session.

use axum::body::Body;
use axum::http::Method;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{App, anonymous};

#[tokio::test]
async fn health_names_the_model_in_use() {
    let app = App::idle();
    let reply = app
        .send(
            anonymous(Method::GET, "/api/health")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    reply.expect(200, None);
    assert_eq!(
        reply.json,
        json!({"status": "ok", "model": "scripted tasks only", "model_name": "scripted"})
    );
}

#[tokio::test]
async fn the_favicon_is_the_svg_icon_and_needs_no_session() {
    let app = App::idle();
    let icon = app
        .send(
            anonymous(Method::GET, "/favicon.ico")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    icon.expect(200, None);
    assert_eq!(icon.header("content-type"), "image/svg+xml");
    let asset = app
        .send(
            anonymous(Method::GET, "/assets/favicon.svg")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    asset.expect(200, None);
    assert_eq!(icon.bytes, asset.bytes);
    let svg = String::from_utf8(icon.bytes.clone()).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("<title>PocketPilot</title>"),
        "{svg}"
    );
}
