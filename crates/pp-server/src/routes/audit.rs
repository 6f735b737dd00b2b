//! `GET /api/audit`: the audit ledger, newest first, with filters.

use axum::Json;
use axum::extract::State;
use pp_tasks::AuditFilter;
use pp_types::{AuditAction, TaskId};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiQuery, limit};
use crate::state::AppState;

/// The audit query.
#[derive(Debug, Deserialize)]
pub(crate) struct AuditQuery {
    actor: Option<String>,
    task_id: Option<String>,
    action: Option<String>,
    /// Comma-separated actions to leave out (`console_login`).
    exclude: Option<String>,
    /// Only rows with an id below this one (paging backwards).
    before: Option<i64>,
    limit: Option<usize>,
}

/// The actions named in `exclude` (comma-separated, each once); an unknown name is a
/// bad request, so a typo never silently shows the rows it meant to hide.
fn excluded(exclude: Option<&str>) -> ApiResult<Vec<AuditAction>> {
    let mut actions = Vec::new();
    for name in exclude.unwrap_or_default().split(',').map(str::trim) {
        if name.is_empty() {
            continue;
        }
        let action = AuditAction::parse(name).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "unknown audit action `{name}` in exclude; expected some of {}",
                AuditAction::NAMES.join(", ")
            ))
        })?;
        if !actions.contains(&action) {
            actions.push(action);
        }
    }
    Ok(actions)
}

/// `{"entries": […]}`; a row whose task has an origin carries it (`origin`).
pub(crate) async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> ApiResult<Json<Value>> {
    let actor = query
        .actor
        .as_deref()
        .map(crate::routes::tasks::parse_actor)
        .transpose()?;
    let filter = AuditFilter {
        actor,
        task_id: query.task_id.map(TaskId),
        action: query.action,
        exclude: excluded(query.exclude.as_deref())?,
        before_id: query.before,
        limit: limit(query.limit, 100, 1000)?,
    };
    let entries = state.service().list_audit(filter).await?;
    // Where the row's task came from (a schedule, webhook channel or MCP client).
    let ids = entries
        .iter()
        .filter_map(|entry| entry.task_id.clone())
        .collect();
    let origins = state.service().task_origins(ids).await?;
    let entries: Vec<Value> = entries
        .into_iter()
        .map(|entry| {
            let origin = entry
                .task_id
                .as_ref()
                .and_then(|id| origins.get(id))
                .cloned();
            let mut value = json!(entry);
            if let Some(origin) = origin {
                value["origin"] = json!(origin);
            }
            value
        })
        .collect();
    Ok(Json(json!({ "entries": entries })))
}
