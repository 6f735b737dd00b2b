//! `GET /api/workspaces`: the configured workspaces.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::state::AppState;

/// `{"workspaces": [{name, path, default}]}`.
pub(crate) async fn list(State(state): State<AppState>) -> Json<Value> {
    let workspaces = state.service().workspaces();
    let list: Vec<Value> = workspaces
        .list
        .iter()
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
