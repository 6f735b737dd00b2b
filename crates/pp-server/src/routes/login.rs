//! `GET /login?token=…` exchanges the API token (team mode: the user's own token) for a
//! console session cookie; `POST /logout` ends it.
//!
//! The cookie is `HttpOnly` (scripts cannot read it) and `SameSite=Strict` (other sites
//! cannot make the browser send it), and the login answers with a redirect to `/` so the
//! token leaves the address bar and the history. In team mode the login remembers its
//! user and the cookie is always `Secure` (the team server sits behind a TLS proxy).

use axum::extract::State;
use axum::http::header::{CONTENT_TYPE, LOCATION, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use pp_types::{Actor, AuditAction, NewAudit};
use serde::Deserialize;

use crate::auth::{SESSION_COOKIE, session_cookie};
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::state::AppState;

/// The login query.
#[derive(Debug, Deserialize)]
pub(crate) struct LoginQuery {
    token: Option<String>,
}

/// The page shown for a wrong or missing token.
fn refused_page(port: Option<u16>, team: bool) -> String {
    if team {
        return "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
                <title>PocketPilot: not logged in</title></head><body>\
                <h1>Not logged in</h1>\
                <p>This is not a valid user token (it is wrong, was rotated, or its user \
                was removed).</p>\
                <p>Open <code>/login?token=</code> followed by your user token: the one \
                <code>pocketpilot users add</code> or <code>pocketpilot users rotate</code> \
                printed for you. Ask an owner for a new one if you no longer have it.</p>\
                </body></html>\n"
            .to_owned();
    }
    let link = match port {
        Some(port) => format!("http://127.0.0.1:{port}/login?token=…"),
        None => "http://127.0.0.1:PORT/login?token=…".to_owned(),
    };
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>PocketPilot: not logged in</title></head><body>\
         <h1>Not logged in</h1>\
         <p>This login link is not valid (the token is wrong or was rotated).</p>\
         <p>Run <code>pocketpilot serve</code> and open the login link it prints \
         (<code>{link}</code>).</p></body></html>\n"
    )
}

/// `GET /login?token=…`: `303` to `/` with the session cookie, or a `401` page.
pub(crate) async fn login(
    State(state): State<AppState>,
    headers: HeaderMap,
    ApiQuery(query): ApiQuery<LoginQuery>,
) -> Response {
    // `None`: refused; `Some(None)`: the single-user token; `Some(Some(user))`: team.
    let who: Option<Option<String>> = match query.token {
        Some(token) if state.settings().team => state
            .users()
            .by_token(token)
            .await
            .ok()
            .flatten()
            .map(|user| Some(user.name)),
        Some(token) => state.token_matches(&token).then_some(None),
        None => None,
    };
    let Some(user) = who else {
        let page = refused_page(state.settings().port, state.settings().team);
        let content_type = HeaderValue::from_static("text/html; charset=utf-8");
        return (
            StatusCode::UNAUTHORIZED,
            [(CONTENT_TYPE, content_type)],
            page,
        )
            .into_response();
    };
    let ttl = state.settings().session_ttl;
    let created = state.users().create_login(user.clone(), ttl).await;
    let session = match created {
        Ok(session) => session,
        Err(error) => return ApiError::internal(error).into_response(),
    };
    // The login itself is an operator action worth a ledger row; failing to write it
    // must not lock the person out, so its error is only logged.
    let entry = NewAudit {
        actor: Some(Actor::Operator),
        user,
        ..NewAudit::new(AuditAction::ConsoleLogin)
    };
    if let Err(error) = state.service().append_audit(entry).await {
        state.log(&format!("pp-server: cannot audit a console login: {error}"));
    }
    let secure = if state.settings().team || crate::security::is_https(state.settings(), &headers) {
        "; Secure"
    } else {
        ""
    };
    let cookie = format!(
        "{SESSION_COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}{secure}",
        ttl.as_secs()
    );
    match HeaderValue::from_str(&cookie) {
        Ok(cookie) => (
            StatusCode::SEE_OTHER,
            [
                (LOCATION, HeaderValue::from_static("/")),
                (SET_COOKIE, cookie),
            ],
        )
            .into_response(),
        Err(error) => ApiError::internal(error).into_response(),
    }
}

/// `POST /logout`: deletes the session and clears the cookie; `303` to `/`.
pub(crate) async fn logout(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(session) = session_cookie(&headers)
        && let Err(error) = state.users().end_login(session).await
    {
        return ApiError::internal(error).into_response();
    }
    let secure = if state.settings().team || crate::security::is_https(state.settings(), &headers) {
        "; Secure"
    } else {
        ""
    };
    let cleared =
        format!("{SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0{secure}");
    match HeaderValue::from_str(&cleared) {
        Ok(cleared) => (
            StatusCode::SEE_OTHER,
            [
                (LOCATION, HeaderValue::from_static("/")),
                (SET_COOKIE, cleared),
            ],
        )
            .into_response(),
        Err(error) => ApiError::internal(error).into_response(),
    }
}
