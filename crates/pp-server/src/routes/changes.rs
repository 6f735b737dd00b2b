//! The change log: `GET /api/tasks/{id}/changes` and the operator's
//! `POST /api/changes/{id}/revert` (restores through a jail on the change's root, audited
//! `change_reverted`; refused with 409 when the file changed since the agent's write).

use axum::Json;
use axum::extract::{Extension, State};
use pp_tasks::{Action, RevertRefusal};
use pp_types::{Actor, ChangeId, TaskId};
use serde_json::{Value, json};

use crate::caller::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::state::AppState;

/// `{"changes": [...]}`, oldest first; 404 for an unknown task.
pub(crate) async fn task_changes(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    let task = caller.visible_task(&state, &TaskId(id)).await?;
    let changes = state.service().changes().of_task(&task.id).await?;
    Ok(Json(json!({ "changes": changes })))
}

/// `{"change": <the new change of kind reverted>}`; 409 `changed_since` (with `diff`)
/// or `not_revertible`; 404 for an unknown change; in team mode 403 unless the caller
/// is an owner or an approver of the change's workspace.
pub(crate) async fn revert(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<Value>> {
    let id = ChangeId(id);
    if caller.user.is_some() {
        let task = state.service().changes().task_of(&id).await?;
        caller.authorize(&state, Action::Revert(&task)).await?;
    }
    match state
        .service()
        .changes()
        .revert_as(&id, Actor::Operator, &caller)
        .await?
    {
        Ok(change) => Ok(Json(json!({ "change": change }))),
        Err(RevertRefusal::ChangedSince { message, diff }) => {
            Err(ApiError::ChangedSince { message, diff })
        }
        Err(RevertRefusal::NotRevertible(message)) => Err(ApiError::NotRevertible(message)),
    }
}
