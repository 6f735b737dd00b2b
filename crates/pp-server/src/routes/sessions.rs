//! `/api/sessions`: chat sessions — create, list, show, send a message, delete.
//!
//! Each message starts a turn, which is a task: its events stream on
//! `/api/tasks/{id}/events` and its approvals appear in `/api/approvals` like any other.
//!
//! In team mode a session belongs to the user who created it (and each turn's task to
//! that user too): owners see every session, approvers and members only their own
//! (another user's answers 404), on workspaces granted to them.

use axum::Json;
use axum::extract::{Extension, State};
use axum::http::StatusCode;
use pp_chat::{NewSession, SessionRecord, SessionView};
use pp_tasks::Action;
use pp_types::Actor;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::caller::{Caller, hidden};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery, limit};
use crate::state::AppState;

/// `POST /api/sessions` body (`{}` for an untitled session in the default workspace).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateSessionRequest {
    /// A configured workspace's name; the default when absent.
    #[serde(default)]
    workspace: Option<String>,
    /// An optional title.
    #[serde(default)]
    title: Option<String>,
}

/// `POST /api/sessions/{id}/messages` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MessageRequest {
    /// The person's message.
    content: String,
}

/// Creates a session as the operator; `201` with the session.
pub(crate) async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiJson(request): ApiJson<CreateSessionRequest>,
) -> ApiResult<(StatusCode, Json<SessionRecord>)> {
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
    let session = state
        .sessions()
        .as_user(caller.user.as_deref())
        .create_session(NewSession {
            workspace: request.workspace,
            title: request.title,
            actor: Actor::Operator,
        })
        .await?;
    Ok((StatusCode::CREATED, Json(session)))
}

/// `GET /api/sessions` query.
#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    /// At most this many (default 100, at most 1000).
    limit: Option<usize>,
}

/// Lists sessions, most recently active first: `{"sessions": […]}`.
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<Value>> {
    let mut sessions = state
        .sessions()
        .sessions(limit(query.limit, 100, 1000)?)
        .await?;
    if caller.user.is_some() {
        let mut visible = Vec::with_capacity(sessions.len());
        for session in sessions {
            let creator = state.sessions().session_user(&session.id).await?;
            if caller.sees_session(creator.as_deref()) {
                visible.push(session);
            }
        }
        sessions = visible;
    }
    Ok(Json(json!({ "sessions": sessions })))
}

/// 404 unless the caller may see session `id` (team mode).
async fn check_session(state: &AppState, caller: &Caller, id: &str) -> ApiResult<()> {
    if caller.user.is_none() {
        return Ok(());
    }
    let creator = state.sessions().session_user(id).await?;
    if caller.sees_session(creator.as_deref()) {
        Ok(())
    } else {
        Err(hidden("session", id))
    }
}

/// One session with its turns and summary.
pub(crate) async fn show(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<SessionView>> {
    check_session(&state, &caller, &id).await?;
    Ok(Json(state.sessions().session(&id).await?))
}

/// Sends a message: `202 {"task_id"}` for the new turn's task; `409 session_busy` while
/// the previous turn is queued, running or waiting for approval; in team mode `403` once
/// the session's workspace is no longer granted to the caller (checked at every turn).
pub(crate) async fn send(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
    ApiJson(request): ApiJson<MessageRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    check_session(&state, &caller, &id).await?;
    if caller.user.is_some() {
        let session = state.sessions().session(&id).await?;
        let workspace = &session.session.workspace;
        caller.authorize(&state, Action::Work { workspace }).await?;
    }
    let task = state
        .sessions()
        .as_user(caller.user.as_deref())
        .send_message(
            &id,
            request.content,
            Actor::Operator,
            state.settings().default_script.clone(),
        )
        .await?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "task_id": task.id }))))
}

/// Deletes a session and its list of turns (the turns' tasks stay); `204`.
pub(crate) async fn delete(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    check_session(&state, &caller, &id).await?;
    state
        .sessions()
        .as_user(caller.user.as_deref())
        .delete_session(&id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
