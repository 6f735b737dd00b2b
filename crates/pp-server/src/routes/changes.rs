//! The change log: `GET /api/tasks/{id}/changes` and the operator's
//! `POST /api/changes/{id}/revert` (restores through a jail on the change's root, audited
//! `change_reverted`; refused with 409 when the file changed since the agent's write).

use axum::Json;
use axum::extract::State;
use pp_tasks::RevertRefusal;
use pp_types::{Actor, ChangeId, TaskId};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::state::AppState;

/// `{"changes": [...]}`, oldest first; 404 for an unknown task.
pub(crate) async fn task_changes(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    let changes = state.service().task_changes(&TaskId(id)).await?;
    Ok(Json(json!({ "changes": changes })))
}

/// `{"change": <the new change of kind reverted>}`; 409 `changed_since` (with `diff`)
/// or `not_revertible`; 404 for an unknown change.
pub(crate) async fn revert(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    match state
        .service()
        .revert_change(&ChangeId(id), Actor::Operator)
        .await?
    {
        Ok(change) => Ok(Json(json!({ "change": change }))),
        Err(RevertRefusal::ChangedSince { message, diff }) => {
            Err(ApiError::ChangedSince { message, diff })
        }
        Err(RevertRefusal::NotRevertible(message)) => Err(ApiError::NotRevertible(message)),
    }
}
