//! `GET /api/health`: answers without a token.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::state::AppState;

/// `{"status": "ok", "model": "configured" | "<why not>", "model_name":
/// "<provider>:<model>" | "scripted" | "none"}`.
pub(crate) async fn health(State(state): State<AppState>) -> Json<Value> {
    let service = state.service();
    let model = match service.model_status() {
        Ok(()) => "configured".to_owned(),
        Err(reason) => reason,
    };
    Json(json!({ "status": "ok", "model": model, "model_name": service.model_name() }))
}
