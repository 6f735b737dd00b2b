//! `/api/approvals`: the inbox, one card, and resolving.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use pp_tasks::{ApprovalView, Decision, ResolveRequest};
use pp_types::{Actor, ApprovalId, ApprovalState, TaskRecord};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery, limit};
use crate::state::AppState;

/// `GET /api/approvals` query.
#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    state: Option<String>,
    limit: Option<usize>,
}

/// `POST /api/approvals/{id}/resolve` query.
#[derive(Debug, Deserialize)]
pub(crate) struct ResolveQuery {
    #[serde(default)]
    wait: bool,
}

/// `POST /api/approvals/{id}/resolve` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResolveBody {
    decision: Decision,
    #[serde(default)]
    edited_arguments: Option<Value>,
    #[serde(default)]
    reason: Option<String>,
}

/// Approval cards in `?state=` (pending by default), newest first.
pub(crate) async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<Value>> {
    let filter = match query.state.as_deref() {
        None => None,
        Some(text) => Some(ApprovalState::parse(text).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "unknown approval state `{text}`; expected one of pending, approved, \
                 rejected, stale, cancelled"
            ))
        })?),
    };
    let limit = limit(query.limit, 100, 1000)?;
    let approvals = state.service().approval_views(filter, limit).await?;
    Ok(Json(json!({ "approvals": approvals })))
}

/// One approval card; while pending, its target is checked again (`current`).
pub(crate) async fn show(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<ApprovalView>> {
    Ok(Json(
        state
            .service()
            .approval_view_checked(&ApprovalId(id))
            .await?,
    ))
}

/// Resolves an approval as the operator. `202` with the task once the decision is
/// durable (the resumed run continues in the background); with `?wait=true`, `200`
/// with the task once it finishes or pauses again.
pub(crate) async fn resolve(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<ResolveQuery>,
    ApiJson(body): ApiJson<ResolveBody>,
) -> ApiResult<(StatusCode, Json<TaskRecord>)> {
    let request = ResolveRequest {
        decision: body.decision,
        edited_arguments: body.edited_arguments,
        reason: body.reason,
        actor: Actor::Operator,
        wait: query.wait,
    };
    let task = state.service().resolve(&ApprovalId(id), request).await?;
    let status = if query.wait {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    Ok((status, Json(task)))
}
