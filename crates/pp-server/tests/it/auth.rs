//! Token, session cookie, login and logout.

use axum::body::Body;
use axum::http::{Method, StatusCode};
use pretty_assertions::assert_eq;

use crate::{App, HOST, TOKEN, anonymous};

/// Every route with placeholders filled in.
pub(crate) fn concrete_routes() -> Vec<(Method, String)> {
    pp_server::api_routes()
        .into_iter()
        .map(|(method, path)| {
            (
                Method::from_bytes(method.as_bytes()).unwrap(),
                path.replace("{id}", "x_unknown"),
            )
        })
        .collect()
}

#[tokio::test]
async fn every_api_route_but_health_needs_a_token() {
    let app = App::idle();
    let routes = concrete_routes();
    assert!(routes.len() >= 17, "{routes:?}");
    for (method, path) in routes {
        let reply = app
            .send(
                anonymous(method.clone(), &path)
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        if path == "/api/health" {
            reply.expect(200, None);
            assert_eq!(reply.json["status"], "ok");
        } else if path.contains("{token}") {
            // Approval links: the link's token is the credential (tests/it/links.rs);
            // a bearer token neither helps nor is needed.
            assert_ne!(reply.status.as_u16(), 401, "{method} {path}: {reply:?}");
            continue;
        } else if path.ends_with("/webhook") {
            // Webhook deliveries need a signature instead (tests/it/webhooks.rs).
            reply.expect(401, Some("unauthorized"));
        } else {
            reply.expect(401, Some("unauthorized"));
            assert_eq!(
                reply.header("www-authenticate"),
                "Bearer",
                "{method} {path}"
            );
        }
        // A wrong token is no better than none.
        let wrong = anonymous(method.clone(), &path)
            .header("authorization", "Bearer not-the-token")
            .body(Body::empty())
            .unwrap();
        let reply = app.send(wrong).await;
        if path != "/api/health" {
            reply.expect(401, Some("unauthorized"));
        }
    }
}

#[tokio::test]
async fn bearer_token_schemes() {
    let app = App::idle();
    app.call(Method::GET, "/api/tasks").await.expect(200, None);
    for header in [format!("bearer {TOKEN}"), format!("Bearer   {TOKEN}  ")] {
        let request = anonymous(Method::GET, "/api/tasks")
            .header("authorization", header)
            .body(Body::empty())
            .unwrap();
        app.send(request).await.expect(200, None);
    }
    for header in [
        format!("Basic {TOKEN}"),
        TOKEN.to_owned(),
        "Bearer ".to_owned(),
        format!("Bearer {TOKEN}x"),
        format!("Bearer {}", &TOKEN[..TOKEN.len() - 1]),
    ] {
        let request = anonymous(Method::GET, "/api/tasks")
            .header("authorization", header)
            .body(Body::empty())
            .unwrap();
        app.send(request).await.expect(401, Some("unauthorized"));
    }
}

fn cookie_of(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().trim().to_owned()
}

#[tokio::test]
async fn login_sets_a_strict_http_only_cookie_and_redirects() {
    let app = App::idle();
    let reply = app
        .send(
            anonymous(Method::GET, &format!("/login?token={TOKEN}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    reply.expect(303, None);
    assert_eq!(reply.header("location"), "/");
    assert_eq!(reply.header("cache-control"), "no-store");
    let set_cookie = reply.header("set-cookie");
    let attributes: Vec<&str> = set_cookie.split(';').map(str::trim).collect();
    assert!(attributes[0].starts_with("pp_session="), "{set_cookie}");
    assert!(
        attributes[0].len() > "pp_session=".len() + 16,
        "{set_cookie}"
    );
    assert!(
        !set_cookie.contains(TOKEN),
        "the session id is not the token"
    );
    for wanted in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=604800"] {
        assert!(
            attributes.contains(&wanted),
            "{wanted} missing in {set_cookie}"
        );
    }
    let cookie = cookie_of(set_cookie);

    // The cookie alone now authenticates.
    let with_cookie = |method: Method, uri: &str| {
        anonymous(method, uri)
            .header("cookie", format!("other=1; {cookie}"))
            .body(Body::empty())
            .unwrap()
    };
    app.send(with_cookie(Method::GET, "/api/tasks"))
        .await
        .expect(200, None);
    assert_eq!(app.audit("console_login", None).await.len(), 1);

    // A wrong bearer token is refused even with a valid cookie.
    let request = anonymous(Method::GET, "/api/tasks")
        .header("cookie", cookie.clone())
        .header("authorization", "Bearer wrong")
        .body(Body::empty())
        .unwrap();
    app.send(request).await.expect(401, Some("unauthorized"));

    // Logout deletes the session and clears the cookie.
    let logout = anonymous(Method::POST, "/logout")
        .header("cookie", cookie.clone())
        .header("origin", format!("http://{HOST}"))
        .body(Body::empty())
        .unwrap();
    let reply = app.send(logout).await;
    reply.expect(303, None);
    assert!(reply.header("set-cookie").contains("Max-Age=0"));
    app.send(with_cookie(Method::GET, "/api/tasks"))
        .await
        .expect(401, Some("unauthorized"));
}

#[tokio::test]
async fn a_bad_login_token_gets_a_401_page_and_no_cookie() {
    let app = App::idle();
    for uri in ["/login?token=wrong", "/login", "/login?token="] {
        let reply = app
            .send(anonymous(Method::GET, uri).body(Body::empty()).unwrap())
            .await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{uri}");
        assert!(reply.header("content-type").starts_with("text/html"));
        assert_eq!(reply.header("set-cookie"), "");
        let page = String::from_utf8(reply.bytes.clone()).unwrap();
        assert!(page.contains("pocketpilot serve"), "{page}");
        assert!(!page.contains("<script") && !page.contains("style="));
    }
    assert!(app.audit("console_login", None).await.is_empty());
}

#[tokio::test]
async fn forged_sessions_are_refused() {
    let app = App::idle();
    for cookie in ["pp_session=forged", "pp_session=", "pp_session"] {
        let request = anonymous(Method::GET, "/api/tasks")
            .header("cookie", cookie)
            .body(Body::empty())
            .unwrap();
        app.send(request).await.expect(401, Some("unauthorized"));
    }
}

#[tokio::test]
async fn a_rotated_token_replaces_the_old_one() {
    let app = App::idle();
    app.state.set_token("the-new-token");
    app.call(Method::GET, "/api/tasks")
        .await
        .expect(401, Some("unauthorized"));
    let request = anonymous(Method::GET, "/api/tasks")
        .header("authorization", "Bearer the-new-token")
        .body(Body::empty())
        .unwrap();
    app.send(request).await.expect(200, None);
    // An empty token accepts nothing.
    app.state.set_token("");
    let request = anonymous(Method::GET, "/api/tasks")
        .header("authorization", "Bearer ")
        .body(Body::empty())
        .unwrap();
    app.send(request).await.expect(401, Some("unauthorized"));
    let request = anonymous(Method::GET, "/login?token=")
        .body(Body::empty())
        .unwrap();
    assert_eq!(app.send(request).await.status, StatusCode::UNAUTHORIZED);
}
