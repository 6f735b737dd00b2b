//! Who may call the API: the bearer token (constant-time compare) or a console session
//! cookie created at `/login`. In team mode ([`crate::ServerSettings::team`]) the token
//! is a team user's and the session a login made with it; the single server token is
//! refused. Either way the request carries a [`Caller`] from here on.

use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::http::header::{AUTHORIZATION, COOKIE};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use pp_types::Via;
use pp_users::LoginOwner;

use crate::caller::Caller;
use crate::error::ApiError;
use crate::state::AppState;

/// The console's session cookie.
pub(crate) const SESSION_COOKIE: &str = "pp_session";

/// The bearer token of an `Authorization` header, if it has one.
fn bearer(headers: &HeaderMap) -> Option<Option<String>> {
    let value = headers.get(AUTHORIZATION)?;
    let text = value.to_str().ok();
    Some(text.and_then(|text| {
        let (scheme, token) = text.trim().split_once(' ')?;
        scheme
            .eq_ignore_ascii_case("bearer")
            .then(|| token.trim().to_owned())
    }))
}

/// The value of the `pp_session` cookie, if the request carries one.
pub(crate) fn session_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

/// Whether the request proves it may use the API.
///
/// An `Authorization` header decides on its own (a wrong token is refused even with a
/// valid cookie); without one, the session cookie must name a live session.
/// The session lookup runs on the blocking pool (it is a SQLite read).
pub(crate) async fn is_authorized(state: &AppState, headers: &HeaderMap) -> bool {
    if let Some(token) = bearer(headers) {
        return token.is_some_and(|token| state.token_matches(&token));
    }
    match session_cookie(headers) {
        Some(session) => state.users().login_valid(session).await.unwrap_or(false),
        None => false,
    }
}

/// Who the request is from; `None` without valid credentials.
///
/// Single-user mode: the operator, as [`is_authorized`] decides. Team mode: the user
/// whose token the `Authorization` header carries (it decides on its own, as above), or
/// the user behind the session cookie; the single server token and its logins are
/// refused. The lookups run on the blocking pool (SQLite reads).
pub(crate) async fn caller(state: &AppState, headers: &HeaderMap) -> Option<Caller> {
    let via = match bearer(headers) {
        Some(_) => Via::Api,
        None => Via::Console,
    };
    Some(who(state, headers).await?.deciding_via(via))
}

/// [`caller`], before where they decide from is known.
async fn who(state: &AppState, headers: &HeaderMap) -> Option<Caller> {
    if !state.settings().team {
        return is_authorized(state, headers).await.then(Caller::operator);
    }
    let users = state.users();
    if let Some(token) = bearer(headers) {
        let user = users.by_token(token?).await.ok().flatten()?;
        return Some(Caller::from_user(user));
    }
    let session = session_cookie(headers)?;
    match users.login_owner(session).await.ok().flatten()? {
        LoginOwner::User(name) => users.get(&name).await.ok().map(Caller::from_user),
        LoginOwner::Server => None,
    }
}

/// Middleware on every `/api` route but health and webhooks: `401 unauthorized`
/// without a valid token or session; otherwise the [`Caller`] joins the request's
/// extensions.
pub(crate) async fn require_auth(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    match caller(&state, request.headers()).await {
        Some(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        None if state.settings().team => ApiError::TeamUnauthorized.into_response(),
        None => ApiError::Unauthorized.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn cookie_and_bearer_parsing() {
        let mut headers = HeaderMap::new();
        headers.insert(
            COOKIE,
            HeaderValue::from_static("a=1; pp_session=abc ; b=2"),
        );
        assert_eq!(session_cookie(&headers).as_deref(), Some("abc"));
        headers.insert(AUTHORIZATION, HeaderValue::from_static("bearer  tok "));
        assert_eq!(bearer(&headers), Some(Some("tok".into())));
        headers.insert(AUTHORIZATION, HeaderValue::from_static("Basic xyz"));
        assert_eq!(bearer(&headers), Some(None));
    }
}
