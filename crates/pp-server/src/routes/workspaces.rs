//! `GET /api/workspaces`: the configured workspaces.

use axum::Json;
use axum::extract::{Extension, State};
use serde_json::{Value, json};

use crate::caller::Caller;
use crate::state::AppState;

/// `{"workspaces": [{name, path, default}]}`; in team mode only those granted to the
/// caller (owners: all).
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Json<Value> {
    let workspaces = state.service().workspaces();
    let list: Vec<Value> = workspaces
        .list
        .iter()
        .filter(|workspace| caller.has_workspace(&workspace.name))
        .map(|workspace| {
            json!({
                "name": workspace.name,
                "path": workspace.path.display().to_string(),
                "default": workspaces.default.as_deref() == Some(workspace.name.as_str()),
            })
        })
        .collect();
    Json(json!({ "workspaces": list }))
}
