//! `/api/channels`: create (the secret shown once), list, show, edit, rotate, remove,
//! the delivery log; bad input.

use axum::http::Method;
use pp_channels::{ChannelKey, ChannelSettings, ChannelsService};
use pp_tasks::TaskService;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{App, Store};

/// The channels service every fixture uses (a fixed test key), over `tasks` and its
/// `store`.
pub(crate) fn service(
    tasks: &TaskService,
    store: &Store,
    settings: ChannelSettings,
) -> ChannelsService {
    ChannelsService::new(
        tasks.clone(),
        store.clone(),
        ChannelKey::from_bytes(&[3; 32]),
        settings,
    )
}

#[tokio::test]
async fn channels_are_created_with_a_secret_shown_once_and_managed() {
    let app = App::idle();
    let reply = app
        .call_json(
            Method::POST,
            "/api/channels",
            &json!({"name": "forms", "template": "File {{json.name}}"}),
        )
        .await;
    reply.expect(201, None);
    let secret = reply.json["secret"].as_str().unwrap().to_owned();
    assert_eq!(secret.len(), 64);
    assert_eq!(reply.json["name"], "forms");
    assert_eq!(
        reply.json["url"],
        "http://localhost:8420/api/channels/forms/webhook"
    );
    assert_eq!(reply.json["channel"]["enabled"], true);

    // Never again: not in the list, the channel, or anywhere else.
    for uri in ["/api/channels", "/api/channels/forms"] {
        let reply = app.call(Method::GET, uri).await;
        reply.expect(200, None);
        assert!(!reply.json.to_string().contains(&secret), "{uri}");
    }
    let list = app.call(Method::GET, "/api/channels").await;
    assert_eq!(list.json["channels"][0]["name"], "forms");
    assert_eq!(list.json["channels"][0]["template"], "File {{json.name}}");

    let edited = app
        .call_json(
            Method::PUT,
            "/api/channels/forms",
            &json!({"enabled": false, "template": null}),
        )
        .await;
    edited.expect(200, None);
    assert_eq!(edited.json["enabled"], false);
    assert_eq!(edited.json["template"], json!(null));

    let rotated = app.call(Method::POST, "/api/channels/forms/rotate").await;
    rotated.expect(200, None);
    let new_secret = rotated.json["secret"].as_str().unwrap();
    assert_ne!(new_secret, secret);
    assert!(rotated.json["channel"]["rotated_at"].is_string());

    let log = app
        .call(Method::GET, "/api/channels/forms/deliveries")
        .await;
    log.expect(200, None);
    assert_eq!(log.json["deliveries"], json!([]));

    app.call(Method::DELETE, "/api/channels/forms")
        .await
        .expect(200, None);
    app.call(Method::GET, "/api/channels/forms")
        .await
        .expect(404, Some("not_found"));
}

#[tokio::test]
async fn bad_channel_requests_are_refused() {
    let app = App::idle();
    for (body, status, code) in [
        (json!({"name": "Bad Name"}), 400, "bad_request"),
        (
            json!({"name": "x", "template": "{{nope}}"}),
            400,
            "bad_request",
        ),
        (
            json!({"name": "x", "template": "{{body"}),
            400,
            "bad_request",
        ),
        (
            json!({"name": "x", "workspace": "nowhere"}),
            404,
            "not_found",
        ),
        (json!({"name": "x", "secret": "mine"}), 400, "bad_request"),
        (json!({}), 400, "bad_request"),
    ] {
        app.call_json(Method::POST, "/api/channels", &body)
            .await
            .expect(status, Some(code));
    }
    app.call_json(Method::POST, "/api/channels", &json!({"name": "x"}))
        .await
        .expect(201, None);
    app.call_json(Method::POST, "/api/channels", &json!({"name": "x"}))
        .await
        .expect(409, Some("exists"));
    for (method, uri) in [
        (Method::GET, "/api/channels/nobody"),
        (Method::DELETE, "/api/channels/nobody"),
        (Method::POST, "/api/channels/nobody/rotate"),
        (Method::GET, "/api/channels/nobody/deliveries"),
    ] {
        app.call(method, uri).await.expect(404, Some("not_found"));
    }
}
