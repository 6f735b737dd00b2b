//! `/api/tasks`: create, list, show, cancel, retry.

use axum::Json;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use pp_tasks::TaskFilter;
use pp_tasks::{Action, CreateTask};
use pp_types::{Actor, TaskId, TaskRecord, TaskState};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::caller::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery, limit};
use crate::state::AppState;

/// `POST /api/tasks` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateTaskRequest {
    /// What the person wants done.
    prompt: String,
    /// A configured workspace's name; the default when absent.
    #[serde(default)]
    workspace: Option<String>,
}

/// `GET /api/tasks` query.
#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    /// Case-insensitive text in the prompt.
    q: Option<String>,
    state: Option<String>,
    /// A configured workspace's name.
    workspace: Option<String>,
    /// Who started the task: `operator`, `scheduler`, `webhook`, `mcp_client`, …
    created_by: Option<String>,
    /// Only tasks created before this task id (paging: the previous `next_before`).
    before: Option<String>,
    limit: Option<usize>,
}

/// Parses a task state filter.
pub(crate) fn parse_state(text: &str) -> ApiResult<TaskState> {
    TaskState::parse(text).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "unknown task state `{text}`; expected one of {}",
            TaskState::NAMES.join(", ")
        ))
    })
}

/// Parses a `created_by` filter.
pub(crate) fn parse_actor(text: &str) -> ApiResult<Actor> {
    Actor::parse(text).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "unknown actor `{text}`; expected one of {}",
            Actor::NAMES.join(", ")
        ))
    })
}

/// Creates a task as the operator (in team mode: as the calling user, on a workspace
/// granted to them, else 403); `201` with the stored task.
pub(crate) async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiJson(request): ApiJson<CreateTaskRequest>,
) -> ApiResult<(StatusCode, Json<TaskRecord>)> {
    if let Some(workspace) = state
        .service()
        .workspaces()
        .find(request.workspace.as_deref())
        && !caller.has_workspace(&workspace.name)
    {
        return Err(ApiError::Forbidden(format!(
            "workspace `{}` is not granted to you",
            workspace.name
        )));
    }
    let request = CreateTask {
        prompt: request.prompt,
        workspace: request.workspace,
        actor: Actor::Operator,
        script: state.settings().default_script.clone(),
    };
    let task = state
        .service()
        .create_as_user(request, caller.user.clone())
        .await?;
    Ok((StatusCode::CREATED, Json(task)))
}

/// Lists tasks, newest first, searched and filtered:
/// `{"tasks": […], "next_before": "t_…" | null}`.
///
/// In team mode only the tasks the caller may see are listed (a page may then hold
/// fewer than `limit`; `next_before` still pages through every task).
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<Value>> {
    let filter = TaskFilter {
        query: query.q.filter(|text| !text.is_empty()),
        state: query.state.as_deref().map(parse_state).transpose()?,
        workspace: query.workspace.filter(|name| !name.is_empty()),
        created_by: query
            .created_by
            .as_deref()
            .filter(|name| !name.is_empty())
            .map(parse_actor)
            .transpose()?,
        before: query.before.filter(|id| !id.is_empty()).map(TaskId),
        limit: limit(query.limit, 50, 1000)?,
    };
    let mut page = state.service().search_tasks(filter).await?;
    page.tasks.retain(|task| caller.sees_task(task));
    Ok(Json(
        json!({ "tasks": page.tasks, "next_before": page.next_before }),
    ))
}

/// One task (404 for one the caller may not see).
pub(crate) async fn show(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    let task = caller.visible_task(&state, &TaskId(id)).await?;
    // Team mode: a queued task no live worker can run says so (`waiting_for`).
    let waiting = state.service().waiting_reason(&task).await?;
    let requested = state.service().cancel_requested(&task);
    let mut value = task_view(&task, requested)?;
    if let (Some(reason), Some(object)) = (waiting, value.as_object_mut()) {
        object.insert("waiting_for".to_owned(), Value::String(reason));
    }
    Ok(Json(value))
}

/// A task as one task's routes show it: with `cancel_requested` (a cancel asked for
/// while its running call has not stopped yet).
fn task_view(task: &TaskRecord, cancel_requested: bool) -> ApiResult<Value> {
    let mut value = serde_json::to_value(task).map_err(ApiError::internal)?;
    if let Some(object) = value.as_object_mut() {
        object.insert("cancel_requested".to_owned(), Value::Bool(cancel_requested));
    }
    Ok(value)
}

/// Cancels a task that has not ended (404 for one the caller may not see, 403 for one
/// of a workspace no longer granted): 200 with the task `cancelled` (also when it
/// already was), or 202 with the task still `running` and `cancel_requested: true`
/// when its running call has not stopped yet.
pub(crate) async fn cancel(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let task = caller.visible_task(&state, &TaskId(id)).await?;
    caller.authorize(&state, Action::Cancel(&task)).await?;
    let task = state.service().cancel_as(&task.id, &caller).await?;
    // The service answers `running` only for a cancel under way.
    let pending = task.state == TaskState::Running;
    let status = if pending {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(task_view(&task, pending)?)))
}

/// Retries an interrupted task (404 for one the caller may not see, 403 for one of a
/// workspace no longer granted).
pub(crate) async fn retry(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<TaskRecord>> {
    let task = caller.visible_task(&state, &TaskId(id)).await?;
    caller.authorize(&state, Action::Retry(&task)).await?;
    Ok(Json(state.service().retry_as(&task.id, &caller).await?))
}
