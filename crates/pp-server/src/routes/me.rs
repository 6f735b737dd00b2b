//! `GET /api/me`: who is logged in, with which role and workspaces, so the console can
//! show the user and hide what the role may not do.

use axum::Json;
use axum::extract::{Extension, State};
use serde_json::{Value, json};

use crate::caller::Caller;
use crate::state::AppState;

/// `{"user": NAME | null, "role": ROLE, "workspaces": [names]}`; single-user mode:
/// `{"user": null, "role": "owner", "workspaces": [every configured one]}`, and an owner
/// is listed with every configured workspace too.
pub(crate) async fn show(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Json<Value> {
    let workspaces: Vec<&str> = state
        .service()
        .workspaces()
        .list
        .iter()
        .map(|workspace| workspace.name.as_str())
        .filter(|name| caller.has_workspace(name))
        .collect();
    Json(json!({
        "user": caller.user,
        "role": caller.role.as_str(),
        "workspaces": workspaces,
    }))
}
