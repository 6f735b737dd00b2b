//! axum's extractors with their rejections turned into [`ApiError`]s, so malformed or
//! mistyped input gets the same `{"error": …}` shape as everything else.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::IF_MATCH;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use serde::de::DeserializeOwned;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// A JSON body (`Content-Type: application/json`), capped at
/// [`crate::ServerSettings::max_body_bytes`].
#[derive(Debug)]
pub(crate) struct ApiJson<T>(pub(crate) T);

/// A query string.
#[derive(Debug)]
pub(crate) struct ApiQuery<T>(pub(crate) T);

/// Path parameters.
#[derive(Debug)]
pub(crate) struct ApiPath<T>(pub(crate) T);

/// `413 payload_too_large` for a body over `limit` bytes.
pub(crate) fn too_large(limit: usize) -> ApiError {
    ApiError::PayloadTooLarge(format!(
        "the request body is larger than the limit of {limit} bytes"
    ))
}

impl<T: DeserializeOwned> FromRequest<AppState> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(request, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(json_rejection(&rejection, state.settings().max_body_bytes)),
        }
    }
}

fn json_rejection(rejection: &JsonRejection, limit: usize) -> ApiError {
    match rejection {
        JsonRejection::MissingJsonContentType(_) => ApiError::BadRequest(
            "expected a JSON body with `Content-Type: application/json`".into(),
        ),
        _ if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => too_large(limit),
        _ => ApiError::BadRequest(rejection.body_text()),
    }
}

impl<T: DeserializeOwned + Send> FromRequestParts<AppState> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|query| Self(query.0))
            .map_err(|rejection: QueryRejection| ApiError::BadRequest(rejection.body_text()))
    }
}

impl<T: DeserializeOwned + Send> FromRequestParts<AppState> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|path| Self(path.0))
            .map_err(|rejection: PathRejection| ApiError::BadRequest(rejection.body_text()))
    }
}

/// Parses an optional `limit` query parameter: default `default`, at most `max`.
pub(crate) fn limit(value: Option<usize>, default: usize, max: usize) -> Result<usize, ApiError> {
    match value {
        None => Ok(default),
        Some(0) => Err(ApiError::BadRequest("limit must be at least 1".into())),
        Some(limit) if limit > max => {
            Err(ApiError::BadRequest(format!("limit must be at most {max}")))
        }
        Some(limit) => Ok(limit),
    }
}

/// The version `If-Match` names, if the header is there: the quoted ETag (quotes
/// optional).
pub(crate) fn optional_if_match(headers: &HeaderMap) -> ApiResult<Option<String>> {
    let Some(value) = headers.get(IF_MATCH) else {
        return Ok(None);
    };
    let text = value
        .to_str()
        .map_err(|_| ApiError::BadRequest("`If-Match` must be ASCII".into()))?
        .trim();
    Ok(Some(
        text.strip_prefix('"')
            .and_then(|rest| rest.strip_suffix('"'))
            .unwrap_or(text)
            .to_owned(),
    ))
}
