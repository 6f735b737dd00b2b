//! `GET /api/mcp/servers`: 404 until the CLI sets a source; then the source's report,
//! exactly as `pocketpilot mcp list --json` prints it (a stdio server's sandbox, `null`
//! for an HTTP server); never without authentication.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Method;
use pp_types::{McpReport, McpSandbox, McpServerReport, McpToolReport, McpUnregistered};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{App, anonymous};

fn report() -> McpReport {
    McpReport {
        servers: vec![
            McpServerReport {
                name: "fs".into(),
                transport: "stdio".into(),
                error: None,
                tools: vec![McpToolReport {
                    name: "read_text_file".into(),
                    model_name: "fs__read_text_file".into(),
                    capability: "mcp:fs:read_text_file:read".into(),
                    decided_by: "P0".into(),
                }],
                unregistered: vec![McpUnregistered {
                    name: "move_file".into(),
                    reason: "not in the whitelist".into(),
                }],
                sandbox: Some(McpSandbox {
                    confined: true,
                    workspace: "read".into(),
                    read: Vec::new(),
                    write: vec!["/var/cache/fs".into()],
                    network: false,
                }),
            },
            McpServerReport {
                name: "remote".into(),
                transport: "http".into(),
                error: Some("MCP server `remote` could not be started: refused".into()),
                tools: Vec::new(),
                unregistered: Vec::new(),
                sandbox: None,
            },
        ],
    }
}

#[tokio::test]
async fn without_a_source_the_route_says_mcp_is_not_configured() {
    let app = App::idle();
    let reply = app.call(Method::GET, "/api/mcp/servers").await;
    reply.expect(404, Some("not_found"));
    assert!(
        reply.json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("MCP is not configured")
    );
}

#[tokio::test]
async fn the_report_comes_back_in_the_documented_shape() {
    let app = App::idle();
    app.state
        .set_mcp_report(Arc::new(|| Box::pin(async { report() })));
    let reply = app.call(Method::GET, "/api/mcp/servers").await;
    reply.expect(200, None);
    assert_eq!(
        reply.json,
        json!({"servers": [
            {"name": "fs", "transport": "stdio",
             "tools": [{"name": "read_text_file", "model_name": "fs__read_text_file",
                        "capability": "mcp:fs:read_text_file:read", "decided_by": "P0"}],
             "unregistered": [{"name": "move_file", "reason": "not in the whitelist"}],
             "sandbox": {"confined": true, "workspace": "read", "read": [],
                         "write": ["/var/cache/fs"], "network": false}},
            {"name": "remote", "transport": "http",
             "error": "MCP server `remote` could not be started: refused",
             "tools": [], "unregistered": [], "sandbox": null}
        ]})
    );
    let anonymous = app
        .send(
            anonymous(Method::GET, "/api/mcp/servers")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    anonymous.expect(401, Some("unauthorized"));
}
