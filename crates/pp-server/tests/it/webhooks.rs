//! `POST /api/channels/{name}/webhook`: a signed delivery is accepted (202, a `webhook`
//! task named after its channel); every refusal is the same 401 body with no task; the
//! Origin check does not apply to it but the Host check does (with `allowed_hosts`);
//! the rate limit; a delivered write waits for a person; `Secure` cookies over HTTPS.

use axum::body::Body;
use axum::http::{Method, Request};
use pp_channels::{ChannelSettings, sign};
use pp_server::ServerSettings;
use pp_types::{Actor, Clock as _, TaskId, TaskState};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::{App, HOST, Reply, TOKEN, write_script};

/// The app's time in Unix seconds: its store's [`pp_types::ManualClock`], which stands
/// still while a test runs, so a window check sees exactly the times signed here.
fn now(app: &App) -> i64 {
    app.clock.now().as_millis().div_euclid(1000)
}

async fn create(app: &App, name: &str) -> String {
    let reply = app
        .call_json(Method::POST, "/api/channels", &json!({ "name": name }))
        .await;
    reply.expect(201, None);
    reply.json["secret"].as_str().unwrap().to_owned()
}

/// A delivery with these exact header values (`None`: header left out).
fn raw(
    name: &str,
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: Vec<u8>,
) -> Request<Body> {
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(format!("/api/channels/{name}/webhook"))
        .header("host", HOST)
        .header("content-type", "application/json");
    if let Some(timestamp) = timestamp {
        request = request.header("X-PocketPilot-Timestamp", timestamp);
    }
    if let Some(signature) = signature {
        request = request.header("X-PocketPilot-Signature", signature);
    }
    request.body(Body::from(body)).unwrap()
}

/// A delivery signed with `secret` at `timestamp`.
fn signed_at(name: &str, secret: &str, timestamp: i64, body: &str) -> Request<Body> {
    let timestamp = timestamp.to_string();
    let signature = sign(secret, &timestamp, body.as_bytes());
    raw(
        name,
        Some(&timestamp),
        Some(&signature),
        body.as_bytes().to_vec(),
    )
}

fn signed(app: &App, name: &str, secret: &str, body: &str) -> Request<Body> {
    signed_at(name, secret, now(app), body)
}

async fn task_count(app: &App) -> usize {
    app.service.list_tasks(None, 1000).await.unwrap().len()
}

#[tokio::test]
async fn a_signed_delivery_creates_a_webhook_task() {
    let app = App::idle();
    let secret = create(&app, "forms").await;
    let reply = app
        .send(signed(&app, "forms", &secret, r#"{"name":"Ada"}"#))
        .await;
    reply.expect(202, None);
    let task_id = TaskId(reply.json["task_id"].as_str().unwrap().to_owned());
    let task = app.service.task(&task_id).await.unwrap();
    assert_eq!(task.created_by, Actor::Webhook);
    assert_eq!(task.origin.as_deref(), Some("forms"));
    let shown = app
        .call(Method::GET, &format!("/api/tasks/{task_id}"))
        .await;
    assert_eq!(shown.json["created_by"], "webhook");
    let log = app
        .call(Method::GET, "/api/channels/forms/deliveries")
        .await;
    assert_eq!(log.json["deliveries"][0]["status"], "accepted");
    assert_eq!(log.json["deliveries"][0]["task_id"], task_id.as_str());
}

#[tokio::test]
async fn every_refusal_is_the_same_401_and_creates_no_task() {
    let app = App::idle();
    let secret = create(&app, "forms").await;
    let off = create(&app, "off").await;
    app.call_json(Method::PUT, "/api/channels/off", &json!({"enabled": false}))
        .await
        .expect(200, None);
    let body = r#"{"a":1}"#;
    let stamp = now(&app).to_string();
    let good = sign(&secret, &stamp, body.as_bytes());
    let sent = now(&app);
    let replay = || signed_at("forms", &secret, sent, r#"{"replay":1}"#);
    // The first copy is accepted; the copies after it are replays.
    app.send(replay()).await.expect(202, None);
    let tasks_before = task_count(&app).await;

    let oversize = "x".repeat(256 * 1024 + 1);
    let cases: Vec<(&str, Request<Body>)> = vec![
        (
            "bad signature",
            raw(
                "forms",
                Some(&stamp),
                Some(&format!("sha256={}", "0".repeat(64))),
                body.into(),
            ),
        ),
        (
            "wrong secret",
            signed(&app, "forms", &"ab".repeat(32), body),
        ),
        (
            "tampered body",
            raw("forms", Some(&stamp), Some(&good), br#"{"a":2}"#.to_vec()),
        ),
        // One second outside the 300 s window: the clock stands still between signing
        // and checking.
        ("stale", signed_at("forms", &secret, now(&app) - 301, body)),
        ("future", signed_at("forms", &secret, now(&app) + 301, body)),
        ("replay", replay()),
        ("oversize", signed(&app, "forms", &secret, &oversize)),
        ("no timestamp", raw("forms", None, Some(&good), body.into())),
        (
            "no signature",
            raw("forms", Some(&stamp), None, body.into()),
        ),
        (
            "bad timestamp",
            raw("forms", Some("soon"), Some(&good), body.into()),
        ),
        (
            "uppercase hex",
            raw(
                "forms",
                Some(&stamp),
                Some(&good.to_uppercase()),
                body.into(),
            ),
        ),
        (
            "other scheme",
            raw(
                "forms",
                Some(&stamp),
                Some(&good.replace("sha256=", "sha1=")),
                body.into(),
            ),
        ),
        ("unknown channel", signed(&app, "nobody", &secret, body)),
        ("disabled channel", signed(&app, "off", &off, body)),
    ];
    let mut bodies = Vec::new();
    for (case, request) in cases {
        let reply: Reply = app.send(request).await;
        reply.expect(401, Some("unauthorized"));
        bodies.push((
            case,
            reply.bytes.clone(),
            reply.header("www-authenticate").to_owned(),
        ));
    }
    let (_, first_body, first_header) = bodies[0].clone();
    for (case, bytes, header) in &bodies {
        assert_eq!(
            bytes, &first_body,
            "{case}: the same body for every refusal"
        );
        assert_eq!(header, &first_header, "{case}");
    }
    assert_eq!(
        task_count(&app).await,
        tasks_before,
        "no refused delivery created a task"
    );
    // The reasons are in the operator's delivery log, never in the 401.
    let log = app
        .call(Method::GET, "/api/channels/forms/deliveries?limit=50")
        .await;
    let reasons: Vec<&str> = log.json["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|row| row["reason"].as_str())
        .collect();
    for reason in [
        "bad signature",
        "stale timestamp",
        "timestamp in the future",
        "replayed signature",
        "body over the size cap",
    ] {
        assert!(reasons.contains(&reason), "{reason}: {reasons:?}");
    }
}

#[tokio::test]
async fn deliveries_skip_the_origin_check_but_not_the_host_check() {
    let app = App::with_settings(ServerSettings {
        allowed_hosts: vec!["pp.example.org".into()],
        ..ServerSettings::default()
    });
    let secret = create(&app, "forms").await;
    let (mut head, body) = signed(&app, "forms", &secret, "from a form service").into_parts();
    head.headers
        .insert("origin", "https://forms.example.net".parse().unwrap());
    head.headers
        .insert("sec-fetch-site", "cross-site".parse().unwrap());
    app.send(Request::from_parts(head, body))
        .await
        .expect(202, None);

    // Through the reverse proxy's name: accepted; through any other name: 403.
    let (mut head, body) = signed(&app, "forms", &secret, "via the proxy").into_parts();
    head.headers
        .insert("host", "pp.example.org".parse().unwrap());
    app.send(Request::from_parts(head, body))
        .await
        .expect(202, None);
    let (mut head, body) = signed(&app, "forms", &secret, "rebinding").into_parts();
    head.headers
        .insert("host", "evil.example.com".parse().unwrap());
    app.send(Request::from_parts(head, body))
        .await
        .expect(403, Some("forbidden"));

    // Other routes keep the Origin check, also on an allowed host.
    let request = Request::builder()
        .method(Method::POST)
        .uri("/api/channels")
        .header("host", "pp.example.org")
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("origin", "https://forms.example.net")
        .header("content-type", "application/json")
        .body(Body::from(json!({"name": "sneaky"}).to_string()))
        .unwrap();
    app.send(request).await.expect(403, Some("forbidden"));
}

#[tokio::test]
async fn the_rate_limit_answers_429_to_signed_deliveries_only() {
    let app = App::idle();
    app.state.set_channels(crate::channels::service(
        &app.service,
        &app.store,
        ChannelSettings {
            rate_limit: 2,
            ..ChannelSettings::default()
        },
    ));
    let secret = create(&app, "forms").await;
    app.send(signed(&app, "forms", &secret, "1"))
        .await
        .expect(202, None);
    app.send(signed(&app, "forms", &secret, "2"))
        .await
        .expect(202, None);
    app.send(signed(&app, "forms", &secret, "3"))
        .await
        .expect(429, Some("rate_limited"));
    // Whoever lacks the secret hears 401, never 429, on known and unknown names alike.
    for index in 0..3 {
        let body = index.to_string();
        app.send(signed(&app, "ghost", &secret, &body))
            .await
            .expect(401, Some("unauthorized"));
        app.send(signed(&app, "forms", &"0".repeat(64), &body))
            .await
            .expect(401, Some("unauthorized"));
    }
    let log = app
        .call(Method::GET, "/api/channels/forms/deliveries")
        .await;
    let statuses: Vec<&str> = log.json["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        [
            "refused",
            "refused",
            "refused",
            "rate_limited",
            "accepted",
            "accepted"
        ]
    );
}

#[tokio::test]
async fn unsigned_posts_do_not_use_up_a_channels_rate_limit() {
    // The issue's case: 61 unsigned posts to a channel's URL, then a signed delivery.
    let app = App::idle();
    let secret = create(&app, "forms").await;
    for index in 0..61 {
        app.send(raw("forms", None, None, format!("{index}").into_bytes()))
            .await
            .expect(401, Some("unauthorized"));
    }
    app.send(signed(&app, "forms", &secret, "real"))
        .await
        .expect(202, None);
    // Past the budget of logged refusals, the 61st was counted, not logged one by one.
    let log = app
        .call(Method::GET, "/api/channels/forms/deliveries?limit=100")
        .await;
    let refused = log.json["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["status"] == "refused")
        .count();
    assert_eq!(refused, 60);
}

#[tokio::test]
async fn a_delivered_write_waits_for_a_person_and_the_audit_names_the_webhook() {
    let app = App::with_settings(ServerSettings {
        default_script: Some(write_script("submission.md", "Ada")),
        ..ServerSettings::default()
    });
    app.service.start_workers();
    let secret = create(&app, "forms").await;
    let reply = app
        .send(signed(&app, "forms", &secret, r#"{"name":"Ada"}"#))
        .await;
    reply.expect(202, None);
    let task = TaskId(reply.json["task_id"].as_str().unwrap().to_owned());
    app.wait_for(&task, TaskState::WaitingApproval).await;
    let target = app.tree.workspace().join("submission.md");
    assert!(!target.exists(), "nothing written before a person approves");
    let approvals = app.call(Method::GET, "/api/approvals").await;
    let approval: &Value = approvals.json["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["task_id"] == task.as_str())
        .unwrap();
    let id = approval["id"].as_str().unwrap().to_owned();
    app.call_json(
        Method::POST,
        &format!("/api/approvals/{id}/resolve"),
        &json!({"decision": "approve"}),
    )
    .await
    .expect(202, None);
    app.wait_for(&task, TaskState::Completed).await;
    assert!(target.exists());
    let created = app.audit("task_created", Some(&task)).await;
    assert_eq!(created[0].actor, Actor::Webhook);
}

#[tokio::test]
async fn login_cookies_are_secure_only_behind_a_trusted_https_proxy() {
    for (trust, proto, secure) in [
        (false, Some("https"), false),
        (true, Some("https"), true),
        (true, None, false),
        (true, Some("http"), false),
    ] {
        let app = App::with_settings(ServerSettings {
            trust_forwarded_proto: trust,
            ..ServerSettings::default()
        });
        let mut request = Request::builder()
            .uri(format!("/login?token={TOKEN}"))
            .header("host", HOST);
        if let Some(proto) = proto {
            request = request.header("x-forwarded-proto", proto);
        }
        let reply = app.send(request.body(Body::empty()).unwrap()).await;
        reply.expect(303, None);
        assert_eq!(
            reply.header("set-cookie").contains("; Secure"),
            secure,
            "{trust} {proto:?}"
        );
    }
}
