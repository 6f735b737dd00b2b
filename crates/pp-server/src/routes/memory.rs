//! The operator's memory: `GET /api/memory` and `PUT /api/memory` (a compare-and-swap on
//! the version through `If-Match`). Both go through `pp_knowledge::MemoryService`, which does
//! the file work through a jail on the data directory on the blocking pool and audits a
//! change with `actor = operator`. No approval card: the operator is the person
//! approvals ask.

use axum::Extension;
use axum::Json;
use axum::extract::State;
use axum::http::header::ETAG;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use pp_knowledge::{MemoryService, MemorySnapshot};
use serde::Deserialize;
use serde_json::json;

use crate::caller::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, optional_if_match};
use crate::state::AppState;

/// The body of `PUT /api/memory`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PutMemoryRequest {
    /// The whole new memory.
    content: String,
}

fn service(state: &AppState) -> ApiResult<MemoryService> {
    state
        .memory()
        .ok_or_else(|| ApiError::NotFound("memory is not configured on this server".into()))
}

/// `{content, version}` with the version as a strong `ETag`.
fn reply(snapshot: &MemorySnapshot) -> Response {
    let mut response =
        Json(json!({"content": snapshot.content, "version": snapshot.version})).into_response();
    if let Ok(etag) = HeaderValue::from_str(&format!("\"{}\"", snapshot.version)) {
        response.headers_mut().insert(ETAG, etag);
    }
    response
}

/// The version `If-Match` names: the quoted ETag (quotes optional). Missing is `428
/// precondition_required`.
fn if_match(headers: &HeaderMap) -> ApiResult<String> {
    optional_if_match(headers)?.ok_or_else(|| {
        ApiError::PreconditionRequired(
            "`If-Match` is required: send the ETag of `GET /api/memory` so an edit based on \
             an old memory cannot overwrite a newer one"
                .into(),
        )
    })
}

/// `GET /api/memory`: `{content, version}` and an `ETag`.
pub(crate) async fn show(State(state): State<AppState>) -> ApiResult<Response> {
    let snapshot = service(&state)?.get().await?;
    Ok(reply(&snapshot))
}

/// `PUT /api/memory` `{content}` with `If-Match`: replaces the memory if it is still that
/// version (`412 version_mismatch` otherwise, nothing written); `200 {content, version}`
/// with the new `ETag`.
pub(crate) async fn put(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<PutMemoryRequest>,
) -> ApiResult<Response> {
    let memory = service(&state)?.as_user(caller.user.as_deref());
    let expected = if_match(&headers)?;
    let snapshot = memory.put_if_version(&expected, request.content).await?;
    Ok(reply(&snapshot))
}
