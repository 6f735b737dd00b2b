//! `/api/schedules`: schedules that create tasks at cron times — create, list, show,
//! edit, remove, run now, and the tasks a schedule created.
//!
//! The scheduler only creates tasks (created by `scheduler`, their `origin` the
//! schedule's name); their writes stop in `waiting_approval` like anyone's.

use axum::Json;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use pp_schedules::{
    Overlap, ScheduleEventView, ScheduleRequest, ScheduleView, Scheduler, SchedulerError,
};
use pp_types::{Actor, TaskRecord};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::caller::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery, limit};
use crate::state::AppState;

/// `POST /api/schedules` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateScheduleRequest {
    name: String,
    cron: String,
    #[serde(default)]
    time_zone: Option<String>,
    prompt: String,
    /// A configured workspace's name; the default when absent.
    #[serde(default)]
    workspace: Option<String>,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    overlap: Option<String>,
    #[serde(default)]
    enabled: Option<bool>,
}

/// `PUT /api/schedules/{id}` body: fields left out keep their value.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditScheduleRequest {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    cron: Option<String>,
    #[serde(default)]
    time_zone: Option<String>,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    workspace: Option<String>,
    /// `null` keeps the session; `""` stops continuing one.
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    overlap: Option<String>,
    #[serde(default)]
    enabled: Option<bool>,
}

/// The server's scheduler (the CLI sets it, attaching `serve --script`'s script); 404
/// without one.
fn scheduler(state: &AppState) -> ApiResult<Scheduler> {
    state
        .scheduler()
        .ok_or_else(|| ApiError::NotFound("schedules are not configured on this server".into()))
}

fn parse_overlap(text: Option<&str>) -> ApiResult<Overlap> {
    match text {
        None => Ok(Overlap::default()),
        Some(text) => Overlap::parse(text).ok_or_else(|| {
            ApiError::BadRequest(format!("overlap must be `skip` or `queue`, not `{text}`"))
        }),
    }
}

impl From<SchedulerError> for ApiError {
    fn from(error: SchedulerError) -> Self {
        let message = error.to_string();
        match error {
            SchedulerError::InvalidCron { field, token, .. } => Self::InvalidCron {
                message,
                field,
                token,
            },
            SchedulerError::UnknownTimeZone { .. } => Self::UnknownTimeZone(message),
            SchedulerError::BadRequest(_) => Self::BadRequest(message),
            SchedulerError::NotFound { .. } => Self::NotFound(message),
            SchedulerError::SessionBusy { .. } => Self::SessionBusy(message),
            SchedulerError::NameTaken(_) => Self::Exists(message),
            SchedulerError::Store(_) | SchedulerError::Internal(_) => Self::internal(message),
        }
    }
}

/// Creates a schedule as the operator; `201` with it.
pub(crate) async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiJson(request): ApiJson<CreateScheduleRequest>,
) -> ApiResult<(StatusCode, Json<ScheduleView>)> {
    let request = ScheduleRequest {
        name: request.name,
        cron: request.cron,
        time_zone: request.time_zone.filter(|zone| !zone.trim().is_empty()),
        prompt: request.prompt,
        workspace: request.workspace.filter(|name| !name.is_empty()),
        session: request.session.filter(|id| !id.is_empty()),
        overlap: parse_overlap(request.overlap.as_deref())?,
        enabled: request.enabled.unwrap_or(true),
    };
    if let Some(session) = &request.session {
        // Refused now (404), not paused at the first fire.
        state.sessions().session(session).await?;
    }
    let schedule = scheduler(&state)?
        .as_user(caller.user.as_deref())
        .create(request, Actor::Operator)
        .await?;
    Ok((StatusCode::CREATED, Json(ScheduleView::from(&schedule))))
}

/// Every schedule, by name: `{"schedules": […]}`.
pub(crate) async fn list(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    let schedules = scheduler(&state)?.list().await?;
    let schedules: Vec<ScheduleView> = schedules.iter().map(ScheduleView::from).collect();
    Ok(Json(json!({ "schedules": schedules })))
}

/// One schedule (by id or name) with its latest history rows (`history`, newest first).
pub(crate) async fn show(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    let scheduler = scheduler(&state)?;
    let schedule = scheduler.find(&id).await?;
    let history = scheduler.history(&schedule.id, 50).await?;
    let mut body = json!(ScheduleView::from(&schedule));
    body["history"] = json!(
        history
            .iter()
            .map(ScheduleEventView::from)
            .collect::<Vec<_>>()
    );
    Ok(Json(body))
}

/// Changes a schedule: the definition fields given replace the stored ones (its next
/// occurrence is recomputed from now); `enabled` enables (clearing a pause) or disables.
pub(crate) async fn edit(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<EditScheduleRequest>,
) -> ApiResult<Json<ScheduleView>> {
    let scheduler = scheduler(&state)?.as_user(caller.user.as_deref());
    let mut schedule = scheduler.find(&id).await?;
    let overlap = request.overlap.as_deref().map(Some).map(parse_overlap);
    let overlap = overlap.transpose()?;
    let changes_spec = request.name.is_some()
        || request.cron.is_some()
        || request.time_zone.is_some()
        || request.prompt.is_some()
        || request.workspace.is_some()
        || request.session.is_some()
        || overlap.is_some();
    if changes_spec {
        let spec = &schedule.spec;
        let edited = ScheduleRequest {
            name: request.name.unwrap_or_else(|| spec.name.clone()),
            cron: request.cron.unwrap_or_else(|| spec.cron.clone()),
            time_zone: Some(
                request
                    .time_zone
                    .filter(|zone| !zone.trim().is_empty())
                    .unwrap_or_else(|| spec.time_zone.clone()),
            ),
            prompt: request.prompt.unwrap_or_else(|| spec.prompt.clone()),
            workspace: Some(
                request
                    .workspace
                    .filter(|name| !name.is_empty())
                    .unwrap_or_else(|| spec.workspace.clone()),
            ),
            session: match request.session {
                Some(session) if session.is_empty() => None,
                Some(session) => Some(session),
                None => spec.session.clone(),
            },
            overlap: overlap.unwrap_or(spec.overlap),
            enabled: schedule.enabled,
        };
        if let Some(session) = &edited.session {
            state.sessions().session(session).await?;
        }
        schedule = scheduler.edit(&schedule.id, edited).await?;
    }
    if let Some(enabled) = request.enabled
        && (enabled != schedule.enabled || schedule.paused_reason.is_some())
    {
        schedule = scheduler.set_enabled(&schedule.id, enabled).await?;
    }
    Ok(Json(ScheduleView::from(&schedule)))
}

/// Removes a schedule and its history (its tasks stay); `204`.
pub(crate) async fn remove(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    scheduler(&state)?
        .as_user(caller.user.as_deref())
        .remove(&id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Fires a schedule now (outside its timetable); `202 {"task_id", "task"}`.
pub(crate) async fn run(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let task = scheduler(&state)?
        .as_user(caller.user.as_deref())
        .run_now(&id, Actor::Operator)
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({ "task_id": task.id, "task": task })),
    ))
}

/// `GET /api/schedules/{id}/tasks` query.
#[derive(Debug, Deserialize)]
pub(crate) struct TasksQuery {
    /// At most this many (default 20, at most 200).
    limit: Option<usize>,
}

/// The tasks the schedule's fires created, newest first: `{"tasks": […]}` (team mode:
/// only those of workspaces granted to the caller).
pub(crate) async fn tasks(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(query): ApiQuery<TasksQuery>,
) -> ApiResult<Json<Value>> {
    let limit = limit(query.limit, 20, 200)?;
    let mut tasks: Vec<TaskRecord> = scheduler(&state)?.tasks(&id, limit).await?;
    tasks.retain(|task| caller.sees_task(task));
    Ok(Json(json!({ "tasks": tasks })))
}
