//! Webhook channels: `/api/channels` (list, create, show, edit, remove, rotate, the
//! delivery log) for the operator, and `POST /api/channels/{name}/webhook` for the
//! program that posts: no token and no Origin check, authenticated by the HMAC
//! signature instead (`pp_channels`). Every refusal there is the same `401
//! unauthorized` body; the reason goes to the channel's delivery log only.

use axum::body::Body;
use axum::extract::State;
use axum::http::header::HOST;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use pp_channels::{
    ChannelsService, CreateChannel, Delivery, DeliveryOutcome, EditChannel, Refusal,
    SIGNATURE_HEADER, TIMESTAMP_HEADER, WithSecret, webhook_path,
};
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use crate::caller::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::security::is_https;
use crate::state::AppState;

/// Most deliveries `GET /api/channels/{name}/deliveries` returns.
const MAX_DELIVERIES: usize = 500;

fn service(state: &AppState) -> ApiResult<ChannelsService> {
    state
        .channels()
        .ok_or_else(|| ApiError::NotFound("channels are not configured on this server".into()))
}

/// The service for a change by `caller`: audited `channel_*` as the operator, naming the
/// team user in team mode.
fn acting(state: &AppState, caller: &Caller) -> ApiResult<ChannelsService> {
    Ok(service(state)?.acting_as(caller.user.clone()))
}

/// The body of `POST /api/channels`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateRequest {
    name: String,
    #[serde(default)]
    template: Option<String>,
    #[serde(default)]
    workspace: Option<String>,
}

/// Absent: `None`; `null`: `Some(None)`; a value: `Some(Some(value))`.
fn double<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}

/// The body of `PUT /api/channels/{name}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditRequest {
    #[serde(default, deserialize_with = "double")]
    template: Option<Option<String>>,
    #[serde(default, deserialize_with = "double")]
    workspace: Option<Option<String>>,
    #[serde(default)]
    enabled: Option<bool>,
}

/// The query of `GET /api/channels/{name}/deliveries`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeliveriesQuery {
    #[serde(default)]
    limit: Option<usize>,
}

/// The URL a channel's deliveries go to, as this request reached the server.
fn webhook_url(state: &AppState, headers: &HeaderMap, name: &str) -> String {
    let host = headers
        .get(HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("127.0.0.1");
    let scheme = if is_https(state.settings(), headers) {
        "https"
    } else {
        "http"
    };
    format!("{scheme}://{host}{}", webhook_path(name))
}

/// `{name, secret, url, channel}`: creation's and rotation's answer.
fn with_secret(state: &AppState, headers: &HeaderMap, created: &WithSecret) -> Value {
    json!({
        "name": created.channel.name,
        "secret": created.secret,
        "url": webhook_url(state, headers, &created.channel.name),
        "channel": created.channel,
    })
}

/// `GET /api/channels`: `{"channels": [...]}`, by name.
pub(crate) async fn list(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    let channels = service(&state)?.list().await?;
    Ok(Json(json!({ "channels": channels })))
}

/// `POST /api/channels` `{name, template?, workspace?}`: 201 `{name, secret, url,
/// channel}`, the only time the secret is shown.
pub(crate) async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    ApiJson(request): ApiJson<CreateRequest>,
) -> ApiResult<Response> {
    let created = acting(&state, &caller)?
        .create(CreateChannel {
            name: request.name,
            template: request.template,
            workspace: request.workspace,
        })
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(with_secret(&state, &headers, &created)),
    )
        .into_response())
}

/// `GET /api/channels/{name}`.
pub(crate) async fn show(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    let channel = service(&state)?.show(&name).await?;
    Ok(Json(json!(channel)))
}

/// `PUT /api/channels/{name}` `{template?, workspace?, enabled?}` (`null`: the default).
pub(crate) async fn edit(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(name): ApiPath<String>,
    ApiJson(request): ApiJson<EditRequest>,
) -> ApiResult<Json<Value>> {
    let channel = acting(&state, &caller)?
        .edit(
            &name,
            EditChannel {
                template: request.template,
                workspace: request.workspace,
                enabled: request.enabled,
            },
        )
        .await?;
    Ok(Json(json!(channel)))
}

/// `DELETE /api/channels/{name}`: `{"removed": name}`.
pub(crate) async fn remove(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    acting(&state, &caller)?.remove(&name).await?;
    Ok(Json(json!({ "removed": name })))
}

/// `POST /api/channels/{name}/rotate`: a new secret, shown this once; the old one stops
/// working at once.
pub(crate) async fn rotate(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    let rotated = acting(&state, &caller)?.rotate(&name).await?;
    Ok(Json(with_secret(&state, &headers, &rotated)))
}

/// `GET /api/channels/{name}/deliveries?limit=N`: the newest deliveries, newest first.
pub(crate) async fn deliveries(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiQuery(query): ApiQuery<DeliveriesQuery>,
) -> ApiResult<Json<Value>> {
    let limit = query.limit.unwrap_or(100).clamp(1, MAX_DELIVERIES);
    let rows = service(&state)?.deliveries(&name, limit).await?;
    let rows: Vec<Value> = rows
        .into_iter()
        .map(|row| {
            json!({
                "id": row.id,
                "at": row.at,
                "status": row.status.as_str(),
                "reason": row.reason,
                "task_id": row.task_id,
            })
        })
        .collect();
    Ok(Json(json!({ "deliveries": rows })))
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    // Two of either header are ambiguous: treated as malformed.
    if values.next().is_some() {
        return None;
    }
    first.to_str().ok().map(str::to_owned)
}

/// `POST /api/channels/{name}/webhook`: no token, no Origin check. 202 `{"task_id"}`
/// for a delivery signed with the channel's secret; `401 unauthorized` (one body for
/// every reason) or `429 rate_limited` otherwise.
pub(crate) async fn webhook(
    State(state): State<AppState>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    // The name as it appears in the path, not percent-decoded: valid names need no
    // escaping, so anything else is an unknown channel (the same 401), never a 400.
    let name = uri
        .path()
        .strip_prefix("/api/channels/")
        .and_then(|rest| rest.strip_suffix("/webhook"))
        .unwrap_or_default()
        .to_owned();
    let Some(channels) = state.channels() else {
        return ApiError::DeliveryRefused.into_response();
    };
    let cap = channels.settings().max_body_bytes;
    let declared_too_big = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok())
        .is_some_and(|length| length > u64::try_from(cap).unwrap_or(u64::MAX));
    let body = if declared_too_big {
        None
    } else {
        axum::body::to_bytes(body, cap)
            .await
            .ok()
            .map(|bytes| bytes.to_vec())
    };
    let delivery = Delivery {
        channel: name,
        timestamp: header(&headers, TIMESTAMP_HEADER),
        signature: header(&headers, SIGNATURE_HEADER),
        body,
        script: state.settings().default_script.clone(),
    };
    match channels.deliver(delivery).await {
        Ok(DeliveryOutcome::Accepted(task)) => {
            (StatusCode::ACCEPTED, Json(json!({ "task_id": task.id }))).into_response()
        }
        Ok(DeliveryOutcome::Refused(refusal @ Refusal::SecretUnopenable(_))) => {
            // The operator's mistake, not the sender's: said on the server too.
            state.log(&format!("webhook delivery refused: {refusal}"));
            ApiError::DeliveryRefused.into_response()
        }
        Ok(DeliveryOutcome::Refused(_)) => ApiError::DeliveryRefused.into_response(),
        Ok(DeliveryOutcome::RateLimited) => ApiError::RateLimited.into_response(),
        Err(error) => ApiError::from(error).into_response(),
    }
}
