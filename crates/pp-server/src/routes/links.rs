//! Approval links (`docs/remote.md`): `GET /d/{token}` (the phone-first page with the
//! one card), `GET /api/links/{token}` (its card, read-only) and `POST
//! /api/links/{token}/resolve` (the one decision). No login: the token is the
//! credential, and it unlocks these three routes only — no other route accepts it, the
//! page sets no cookie, and [`redact`] keeps it out of every log line.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use pp_tasks::{Decision, LinkView};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;

/// The page's route.
pub(crate) const PAGE_ROUTE: &str = "/d/{token}";

/// `POST /api/links/{token}/resolve` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResolveBody {
    decision: Decision,
    #[serde(default)]
    reason: Option<String>,
}

/// `GET /d/{token}`: the link page (`assets/link.html`), the same for every token: it
/// reads its card with `GET /api/links/{token}`. Never decides or consumes anything.
pub(crate) async fn page(headers: HeaderMap) -> ApiResult<Response> {
    super::console::page("link.html", &headers)
        .ok_or_else(|| ApiError::NotFound("the link page is not built in".into()))
}

/// `GET /api/links/{token}`: the link's card (`200`), read-only; `410 gone` (saying by
/// whom and how it was decided) once the link no longer decides; `404` for an unknown
/// token.
pub(crate) async fn show(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
) -> ApiResult<Json<LinkView>> {
    Ok(Json(state.service().link_card(&token).await?))
}

/// `POST /api/links/{token}/resolve`: decides the link's approval, exactly once
/// (`202` with the task); `409 changed_since_seen` (nothing ran; the link ends), `410
/// gone`, `403` (the bound user may no longer decide: the link ends;
/// `not_remotely_approvable`: the link may only reject).
pub(crate) async fn resolve(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
    ApiJson(body): ApiJson<ResolveBody>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let task = state
        .service()
        .resolve_link(&token, body.decision, body.reason)
        .await?;
    Ok((StatusCode::ACCEPTED, Json(json!(task))))
}

/// Whether `path` carries a link token (`/d/…`, `/api/links/…`).
pub(crate) fn is_link_path(path: &str) -> bool {
    path.starts_with("/d/") || path.starts_with("/api/links/")
}

/// `path` fit for a log line: a link path's token replaced by `…`.
pub(crate) fn redact(path: &str) -> String {
    if let Some(rest) = path.strip_prefix("/d/") {
        let tail = rest.find('/').map_or("", |at| &rest[at..]);
        return format!("/d/…{tail}");
    }
    if let Some(rest) = path.strip_prefix("/api/links/") {
        let tail = rest.find('/').map_or("", |at| &rest[at..]);
        return format!("/api/links/…{tail}");
    }
    path.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_paths_are_redacted() {
        let token = "ab".repeat(32);
        assert_eq!(redact(&format!("/d/{token}")), "/d/…");
        assert_eq!(
            redact(&format!("/api/links/{token}/resolve")),
            "/api/links/…/resolve"
        );
        assert_eq!(redact("/api/tasks"), "/api/tasks");
        assert!(is_link_path("/d/x") && is_link_path("/api/links/x"));
        assert!(!is_link_path("/api/approvals/x"));
    }
}
