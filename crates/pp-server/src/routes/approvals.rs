//! `/api/approvals`: the inbox, one card, and resolving.

use axum::Json;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use pp_tasks::{ApprovalView, Decision, ResolveRequest};
use pp_types::{Actor, ApprovalId, ApprovalState, TaskRecord};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::caller::{Caller, Visibility, hidden};
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
    Extension(caller): Extension<Caller>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<Value>> {
    let filter = match query.state.as_deref() {
        None => None,
        Some(text) => Some(ApprovalState::parse(text).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "unknown approval state `{text}`; expected one of {}",
                ApprovalState::NAMES.join(", ")
            ))
        })?),
    };
    let limit = limit(query.limit, 100, 1000)?;
    let mut approvals = state.service().approval_views(filter, limit).await?;
    let mut visibility = Visibility::new(caller);
    if !visibility.sees_all() {
        let mut visible = Vec::with_capacity(approvals.len());
        for approval in approvals {
            if visibility.sees(&state, &approval.task_id).await {
                visible.push(approval);
            }
        }
        approvals = visible;
    }
    Ok(Json(json!({ "approvals": approvals })))
}

/// One approval card; while pending, its target is checked again (`current`).
pub(crate) async fn show(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<ApprovalView>> {
    let id = ApprovalId(id);
    let view = state.service().approval_view_checked(&id).await?;
    if !Visibility::new(caller).sees(&state, &view.task_id).await {
        return Err(hidden("approval", id.as_str()));
    }
    Ok(Json(view))
}

/// Resolves an approval as the operator. `202` with the task once the decision is
/// durable (the resumed run continues in the background); with `?wait=true`, `200`
/// with the task once it finishes or pauses again.
///
/// In team mode only an owner, or an approver of the task's workspace as granted at this
/// moment, may decide (403 otherwise, also for an approver of another workspace), and
/// the approval and its audit row record the user.
pub(crate) async fn resolve(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<ResolveQuery>,
    ApiJson(body): ApiJson<ResolveBody>,
) -> ApiResult<(StatusCode, Json<TaskRecord>)> {
    let id = ApprovalId(id);
    let request = ResolveRequest {
        decision: body.decision,
        edited_arguments: body.edited_arguments,
        reason: body.reason,
        actor: Actor::Operator,
        wait: query.wait,
    };
    let task = state.service().resolve_for(&id, request, &caller).await?;
    let status = if query.wait {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    Ok((status, Json(task)))
}
