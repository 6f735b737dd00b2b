//! `GET /api/mcp/servers`: the configured MCP servers, their tools with the name the
//! model sees, each tool's capability and the level that decided it, and the tools left
//! out with why — the data of `pocketpilot mcp list --json`. Read-only: the servers are
//! configured in the operator's config file, never through the API.

use axum::Json;
use axum::extract::State;
use pp_types::McpReport;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// `GET /api/mcp/servers`.
pub(crate) async fn servers(State(state): State<AppState>) -> ApiResult<Json<McpReport>> {
    let source = state
        .mcp_report()
        .ok_or_else(|| ApiError::NotFound("MCP is not configured on this server".into()))?;
    Ok(Json(source().await))
}
