//! `GET /api/audit`: the audit ledger, newest first, with filters.

use axum::Json;
use axum::extract::State;
use pp_tasks::store::AuditFilter;
use pp_types::{Actor, TaskId};
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
    /// Only rows with an id below this one (paging backwards).
    before: Option<i64>,
    limit: Option<usize>,
}

/// `{"entries": […]}`.
pub(crate) async fn list(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> ApiResult<Json<Value>> {
    let actor = match query.actor.as_deref() {
        None => None,
        Some(text) => Some(Actor::parse(text).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "unknown actor `{text}`; expected one of agent, operator, scheduler, webhook"
            ))
        })?),
    };
    let filter = AuditFilter {
        actor,
        task_id: query.task_id.map(TaskId),
        action: query.action,
        before_id: query.before,
        limit: limit(query.limit, 100, 1000)?,
    };
    let entries = state.service().list_audit(filter).await?;
    Ok(Json(json!({ "entries": entries })))
}
