//! `/api/approvals`: the inbox, one card, and resolving.

use axum::Json;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use pp_tasks::{ApprovalRow, ApprovalView, Decision, Precheck, ResolveRequest};
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
    pub(crate) wait: bool,
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
    #[serde(default)]
    seen_fingerprint: Option<String>,
}

/// `POST /api/approvals/{id}/precheck` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PrecheckBody {
    #[serde(default)]
    edited_arguments: Option<Value>,
}

/// Approval rows ([`ApprovalRow`]: no arguments, diff or content — the card has them) in
/// `?state=` (pending by default), newest first.
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
    let views = state
        .service()
        .approval_views_checked(filter, limit)
        .await?;
    let mut approvals: Vec<ApprovalRow> = Vec::with_capacity(views.len());
    let mut visibility = Visibility::new(caller);
    for mut view in views {
        if !visibility.sees_all() {
            if !visibility.sees(&state, &view.task_id).await {
                continue;
            }
            if !visibility.reads_workspace(&state, &view.task_id).await {
                not_granted(&mut view);
            }
        }
        approvals.push(view.into());
    }
    Ok(Json(json!({ "approvals": approvals })))
}

/// One approval card; while pending, its target is checked now (`precheck`).
pub(crate) async fn show(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<ApprovalView>> {
    let id = ApprovalId(id);
    let mut view = state.service().approval_view_checked(&id).await?;
    let mut visibility = Visibility::new(caller);
    if !visibility.sees(&state, &view.task_id).await {
        return Err(hidden("approval", id.as_str()));
    }
    if !visibility.reads_workspace(&state, &view.task_id).await {
        not_granted(&mut view);
    }
    Ok(Json(view))
}

/// A card for a caller who sees the task but no longer has its workspace: the target as
/// it is now is not theirs to read.
pub(crate) fn not_granted(view: &mut ApprovalView) {
    if view.precheck.is_some() {
        view.precheck = Some(Precheck::unavailable(
            "the task's workspace is not granted to you: its files cannot be checked".into(),
        ));
        view.current = None;
    }
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
) -> ApiResult<(StatusCode, Json<Value>)> {
    let id = ApprovalId(id);
    let request = ResolveRequest {
        decision: body.decision,
        edited_arguments: body.edited_arguments,
        reason: body.reason,
        seen_fingerprint: body.seen_fingerprint,
        actor: Actor::Operator,
        wait: query.wait,
        via: Some(caller.via()),
        remote_user: None,
    };
    let task = state.service().resolve_for(&id, request, &caller).await?;
    Ok(resolved(&task, query.wait))
}

/// A resolve's answer: `202` with the task (`200` once it finished or paused with
/// `?wait=true`). A task back in `queued` was handed to a worker that has its
/// workspace (team mode, decided on a server without it): `202` with `"checked_on":
/// "worker"` — that worker checks the target and runs the call.
fn resolved(task: &TaskRecord, wait: bool) -> (StatusCode, Json<Value>) {
    let handed = task.state == pp_types::TaskState::Queued;
    let mut body = json!(task);
    if handed && let Some(object) = body.as_object_mut() {
        object.insert("checked_on".to_owned(), json!("worker"));
    }
    let status = if wait && !handed {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    (status, Json(body))
}

/// The precheck of a pending card for an edited call (`edited_arguments`), or for the
/// call as it is (no body fields): the same object `GET /api/approvals/{id}` carries,
/// `null` for a tool that reports no target. Invalid edits answer `422`, a decided
/// approval `409`.
pub(crate) async fn precheck(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<PrecheckBody>,
) -> ApiResult<Json<Value>> {
    let id = ApprovalId(id);
    let approval = state.service().approval_view(&id).await?;
    let mut visibility = Visibility::new(caller);
    if !visibility.sees(&state, &approval.task_id).await {
        return Err(hidden("approval", id.as_str()));
    }
    if !visibility.reads_workspace(&state, &approval.task_id).await {
        return Err(ApiError::Forbidden(
            "the task's workspace is not granted to you: its files cannot be checked".into(),
        ));
    }
    let precheck = state
        .service()
        .precheck(&id, body.edited_arguments.as_ref())
        .await?;
    Ok(Json(json!(precheck)))
}

/// How many approvals are pending among those the caller may see: `{"pending": N}`,
/// for the inbox badge (no card is read).
pub(crate) async fn count(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> ApiResult<Json<Value>> {
    let tasks = state.service().pending_approval_tasks().await?;
    let mut visibility = Visibility::new(caller);
    let pending = if visibility.sees_all() {
        tasks.len()
    } else {
        let mut visible = 0;
        for task in &tasks {
            if visibility.sees(&state, task).await {
                visible += 1;
            }
        }
        visible
    };
    Ok(Json(json!({ "pending": pending })))
}
