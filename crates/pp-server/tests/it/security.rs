//! Host and Origin checks, security headers, the console shell.

use axum::body::Body;
use axum::http::{Method, Request};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{App, HOST, TOKEN, anonymous, authed};

const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' \
                   data: blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
                   form-action 'self'";

#[tokio::test]
async fn a_foreign_host_is_refused_on_every_route() {
    let app = App::idle();
    let mut uris: Vec<String> = crate::auth::concrete_routes()
        .into_iter()
        .filter(|(method, _)| method == Method::GET)
        .map(|(_, path)| path)
        .collect();
    uris.extend(["/", "/assets/app.js", "/login?token=x", "/nowhere"].map(String::from));
    for host in [
        "evil.example.com",
        "evil.example.com:8420",
        "localhost.evil.example.com",
        "127.0.0.1.nip.io:8420",
        "192.168.1.10:8420",
    ] {
        for uri in &uris {
            let request = Request::builder()
                .uri(uri.as_str())
                .header("host", host)
                .header("authorization", format!("Bearer {TOKEN}"))
                .body(Body::empty())
                .unwrap();
            let reply = app.send(request).await;
            reply.expect(403, Some("forbidden"));
            assert_eq!(reply.header("content-security-policy"), CSP);
        }
    }
    // No Host at all.
    let request = Request::builder()
        .uri("/api/health")
        .body(Body::empty())
        .unwrap();
    app.send(request).await.expect(403, Some("forbidden"));
    // An absolute-form URI naming another host than the Host header.
    let request = Request::builder()
        .uri("http://evil.example.com/api/health")
        .header("host", HOST)
        .body(Body::empty())
        .unwrap();
    app.send(request).await.expect(403, Some("forbidden"));
    // Two Host headers, the loopback one first.
    let request = Request::builder()
        .uri("/api/health")
        .header("host", HOST)
        .header("host", "evil.example.com")
        .body(Body::empty())
        .unwrap();
    app.send(request).await.expect(403, Some("forbidden"));
}

#[tokio::test]
async fn loopback_hosts_are_accepted() {
    let app = App::idle();
    for host in [
        "localhost:8420",
        "127.0.0.1:8420",
        "[::1]:8420",
        "localhost",
        "127.0.0.1",
    ] {
        let request = Request::builder()
            .uri("/api/tasks")
            .header("host", host)
            .header("authorization", format!("Bearer {TOKEN}"))
            .body(Body::empty())
            .unwrap();
        app.send(request).await.expect(200, None);
    }
}

#[tokio::test]
async fn foreign_origins_cannot_change_state() {
    let app = App::idle();
    let create = |origin: Option<&str>, fetch_site: Option<&str>| {
        let mut builder =
            authed(Method::POST, "/api/tasks").header("content-type", "application/json");
        if let Some(origin) = origin {
            builder = builder.header("origin", origin);
        }
        if let Some(site) = fetch_site {
            builder = builder.header("sec-fetch-site", site);
        }
        builder
            .body(Body::from(json!({"prompt": "hi"}).to_string()))
            .unwrap()
    };
    for origin in [
        "http://evil.example.com",
        "null",
        "http://127.0.0.1:8420",
        "https://localhost:8420",
        "http://localhost:8421",
        "http://localhost:8420.evil.com",
    ] {
        app.send(create(Some(origin), None))
            .await
            .expect(403, Some("forbidden"));
    }
    app.send(create(None, Some("cross-site")))
        .await
        .expect(403, Some("forbidden"));
    let tasks = app.call(Method::GET, "/api/tasks").await;
    assert_eq!(tasks.json["tasks"], json!([]), "nothing was created");

    app.send(create(Some("http://localhost:8420"), Some("same-origin")))
        .await
        .expect(201, None);
    app.send(create(None, None)).await.expect(201, None);

    // Uploads and logout are state-changing too.
    let upload = authed(Method::PUT, "/api/files/content?path=x.txt")
        .header("origin", "http://evil.example.com")
        .body(Body::from("evil"))
        .unwrap();
    app.send(upload).await.expect(403, Some("forbidden"));
    assert!(!app.tree.exists("x.txt"));
    let logout = anonymous(Method::POST, "/logout")
        .header("origin", "http://evil.example.com")
        .body(Body::empty())
        .unwrap();
    app.send(logout).await.expect(403, Some("forbidden"));

    // Reads with a foreign Origin are not refused (CORS keeps the answer from the page).
    let read = authed(Method::GET, "/api/tasks")
        .header("origin", "http://evil.example.com")
        .body(Body::empty())
        .unwrap();
    app.send(read).await.expect(200, None);
}

#[tokio::test]
async fn security_headers_on_every_response() {
    let app = App::idle();
    let cases = [
        (authed(Method::GET, "/api/tasks"), 200, true),
        (anonymous(Method::GET, "/api/health"), 200, true),
        (anonymous(Method::GET, "/api/tasks"), 401, true),
        (authed(Method::GET, "/api/tasks/nope"), 404, true),
        (anonymous(Method::GET, "/"), 200, false),
        (anonymous(Method::GET, "/assets/app.css"), 200, false),
        (anonymous(Method::GET, "/login?token=wrong"), 401, true),
    ];
    for (builder, status, no_store) in cases {
        let reply = app.send(builder.body(Body::empty()).unwrap()).await;
        reply.expect(status, None);
        assert_eq!(reply.header("content-security-policy"), CSP);
        assert_eq!(reply.header("x-content-type-options"), "nosniff");
        assert_eq!(reply.header("referrer-policy"), "same-origin");
        assert_eq!(reply.header("x-frame-options"), "DENY");
        if no_store {
            assert_eq!(reply.header("cache-control"), "no-store");
        }
    }
}

#[tokio::test]
async fn the_console_shell_loads_without_a_session() {
    let app = App::idle();
    let page = app
        .send(anonymous(Method::GET, "/").body(Body::empty()).unwrap())
        .await;
    page.expect(200, None);
    assert_eq!(page.header("content-type"), "text/html; charset=utf-8");
    let html = String::from_utf8(page.bytes.clone()).unwrap();
    assert!(html.contains("/assets/app.js"), "{html}");
    assert!(!html.contains("style="), "no inline styles (CSP)");
    assert!(!html.contains("<style"), "no inline styles (CSP)");
    for tag in html.split("<script").skip(1) {
        let open = &tag[..tag.find('>').unwrap()];
        assert!(
            open.contains("src="),
            "no inline scripts (CSP): <script{open}>"
        );
    }

    // Every file in assets/ is embedded and served with a fitting content type.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
    #[expect(clippy::disallowed_methods, reason = "reads this crate's own assets")]
    let entries: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    let mut served = 0;
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !entry.file_type().unwrap().is_file() {
            continue;
        }
        let reply = app
            .send(
                anonymous(Method::GET, &format!("/assets/{name}"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        reply.expect(200, None);
        #[expect(clippy::disallowed_methods, reason = "reads this crate's own assets")]
        let on_disk = std::fs::read(entry.path()).unwrap();
        assert_eq!(reply.bytes, on_disk, "{name}");
        let wanted = match name.rsplit_once('.').map(|(_, ext)| ext) {
            Some("js") => "text/javascript; charset=utf-8",
            Some("css") => "text/css; charset=utf-8",
            Some("html") => "text/html; charset=utf-8",
            _ => reply.header("content-type"),
        };
        assert_eq!(reply.header("content-type"), wanted, "{name}");
        assert_eq!(reply.header("content-security-policy"), CSP);
        served += 1;
    }
    assert!(served >= 2, "app.js and app.css at least");

    for missing in [
        "/assets/nope.js",
        "/assets/..%2FCargo.toml",
        "/assets/../Cargo.toml",
        "/assets/",
    ] {
        let reply = app
            .send(anonymous(Method::GET, missing).body(Body::empty()).unwrap())
            .await;
        reply.expect(404, Some("not_found"));
    }
}

/// Issue 30: the approval-link routes carry the token in their URL: besides the console's
/// headers, `no-store`, `no-referrer` and `noindex`, and never a cookie — for the page,
/// its card and its errors alike.
#[tokio::test]
async fn link_routes_are_not_cached_referred_indexed_or_cookied() {
    let app = App::idle();
    let token = "ab".repeat(32);
    let cases = [
        (anonymous(Method::GET, &format!("/d/{token}")), 200),
        (anonymous(Method::GET, &format!("/api/links/{token}")), 404),
        (anonymous(Method::GET, "/api/links/short"), 404),
    ];
    for (builder, status) in cases {
        let reply = app.send(builder.body(Body::empty()).unwrap()).await;
        reply.expect(status, None);
        assert_eq!(reply.header("content-security-policy"), CSP);
        assert_eq!(reply.header("x-content-type-options"), "nosniff");
        assert_eq!(reply.header("x-frame-options"), "DENY");
        assert_eq!(reply.header("referrer-policy"), "no-referrer");
        assert_eq!(reply.header("cache-control"), "no-store");
        assert_eq!(reply.header("x-robots-tag"), "noindex");
        assert!(!reply.headers.contains_key("set-cookie"));
    }
    let reply = app
        .send(
            anonymous(Method::POST, &format!("/api/links/{token}/resolve"))
                .header("content-type", "application/json")
                .body(Body::from(r#"{"decision":"approve"}"#))
                .unwrap(),
        )
        .await;
    reply.expect(404, Some("not_found"));
    assert_eq!(reply.header("referrer-policy"), "no-referrer");
}
