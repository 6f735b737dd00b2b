//! Operator skills: list, show, write `SKILL.md`, write a resource file, remove. Each
//! change goes through `pp_knowledge::SkillsService`, which validates it, does the file work
//! through the skill's jail on the blocking pool and audits it with `actor = operator`.

use axum::Extension;
use axum::Json;
use axum::extract::{Request, State};
use axum::http::header::ETAG;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use pp_knowledge::{SkillWritten, SkillsService};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::caller::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, optional_if_match, too_large};
use crate::state::AppState;

/// The body of `PUT /api/skills/{name}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PutSkillRequest {
    /// The whole `SKILL.md`: front matter and body.
    skill_md: String,
}

fn service(state: &AppState) -> ApiResult<SkillsService> {
    state
        .skills()
        .ok_or_else(|| ApiError::NotFound("skills are not configured on this server".into()))
}

fn status(written: SkillWritten) -> StatusCode {
    match written {
        SkillWritten::Created => StatusCode::CREATED,
        SkillWritten::Replaced => StatusCode::OK,
    }
}

/// `GET /api/skills`: `{"skills": [{name, description, valid, reason, source, read_only}]}`.
pub(crate) async fn list(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    let skills = service(&state)?.list().await?;
    Ok(Json(json!({ "skills": skills })))
}

/// The skill as JSON, with its version as the `ETag` (what `If-Match` names).
fn reply(status: StatusCode, view: &pp_knowledge::SkillView) -> Response {
    let mut response = (status, Json(json!(view))).into_response();
    if let Some(etag) = view
        .version
        .as_ref()
        .and_then(|version| HeaderValue::from_str(&format!("\"{version}\"")).ok())
    {
        response.headers_mut().insert(ETAG, etag);
    }
    response
}

/// `GET /api/skills/{name}`: the skill with its `SKILL.md`, files, ignored fields and
/// version (also the `ETag`).
pub(crate) async fn show(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Response> {
    let view = service(&state)?.show(&name).await?;
    Ok(reply(StatusCode::OK, &view))
}

/// `PUT /api/skills/{name}` `{skill_md}` (optional `If-Match`): creates (201) or
/// replaces (200) the skill's `SKILL.md`; an invalid one is `422 invalid_skill`, a skill
/// no longer the version `If-Match` names `412 version_mismatch`, and nothing is
/// written.
pub(crate) async fn put(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(name): ApiPath<String>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<PutSkillRequest>,
) -> ApiResult<Response> {
    let skills = service(&state)?.as_user(caller.user.as_deref());
    let if_match = optional_if_match(&headers)?;
    let written = skills
        .put_skill_md(&name, request.skill_md, if_match)
        .await?;
    let view = skills.show(&name).await?;
    Ok(reply(status(written), &view))
}

/// `PUT /api/skills/{name}/files/{path}` (raw body): writes one file of the skill through
/// its jail; `..`, absolute paths and links out of the folder are `403 forbidden`.
pub(crate) async fn put_file(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath((name, path)): ApiPath<(String, String)>,
    request: Request,
) -> ApiResult<Response> {
    let skills = service(&state)?.as_user(caller.user.as_deref());
    let if_match = optional_if_match(request.headers())?;
    let limit = state.settings().max_body_bytes;
    let body = axum::body::to_bytes(request.into_body(), limit)
        .await
        .map_err(|_| too_large(limit))?;
    let written = skills
        .put_file(&name, &path, body.to_vec(), if_match)
        .await?;
    let created = written == SkillWritten::Created;
    Ok((
        status(written),
        Json(json!({"name": name, "path": path, "created": created})),
    )
        .into_response())
}

/// `DELETE /api/skills/{name}` (optional `If-Match`): removes a skill of the data
/// directory or the team's (`409 read_only` for one from a `[skills] dirs` folder, `412
/// version_mismatch` for one no longer the version `If-Match` names).
pub(crate) async fn remove(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(name): ApiPath<String>,
    headers: HeaderMap,
) -> ApiResult<Json<Value>> {
    let if_match = optional_if_match(&headers)?;
    service(&state)?
        .as_user(caller.user.as_deref())
        .remove(&name, if_match)
        .await?;
    Ok(Json(json!({ "removed": name })))
}
