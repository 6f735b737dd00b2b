//! What `pocketpilot mcp list`, `GET /api/mcp/servers` and the console show: every
//! configured server with the tools the model is offered (model-facing name, capability,
//! the level that decided it) and the listed tools it is not offered, with why. Built
//! from the same [`resolve`] the tool provider uses, so the report and the toolbox
//! cannot disagree.

use std::sync::Arc;

use pp_types::{McpReport, McpServerReport, McpToolReport, McpUnregistered};

use crate::backend::{Backend, McpError};
use crate::config::ServerConfig;
use crate::resolve::{Resolution, resolve};

/// Lists every server's tools (connecting first where needed) and reports what each
/// tool resolves to. A server that cannot be listed has its `error` set.
pub async fn report(servers: &[(ServerConfig, Arc<dyn Backend>)]) -> McpReport {
    report_with_warnings(servers).await.0
}

/// [`report`] plus the resolution's warnings (P3 tools, clashes, configured tools the
/// server does not list), each naming its server and tool.
pub async fn report_with_warnings(
    servers: &[(ServerConfig, Arc<dyn Backend>)],
) -> (McpReport, Vec<String>) {
    let mut report = McpReport::default();
    let mut warnings = Vec::new();
    for (config, backend) in servers {
        let resolution = backend
            .list_tools()
            .await
            .map(|tools| resolve(config, &tools));
        if let Ok(resolution) = &resolution {
            warnings.extend(resolution.warnings.iter().cloned());
        }
        report.servers.push(server_report(config, resolution));
    }
    (report, warnings)
}

/// One server's row: its resolution, or the error that kept it from being listed.
pub fn server_report(
    config: &ServerConfig,
    resolution: Result<Resolution, McpError>,
) -> McpServerReport {
    let mut row = McpServerReport {
        name: config.name.clone(),
        transport: config.transport.kind().to_owned(),
        error: None,
        tools: Vec::new(),
        unregistered: Vec::new(),
    };
    match resolution {
        Err(error) => row.error = Some(error.to_string()),
        Ok(resolution) => {
            row.tools = resolution
                .tools
                .iter()
                .map(|tool| McpToolReport {
                    name: tool.listed.name.clone(),
                    model_name: tool.model_name.clone(),
                    capability: tool.capability.as_str().to_owned(),
                    decided_by: tool.decided_by.as_str().to_owned(),
                })
                .collect();
            row.unregistered = resolution
                .unregistered
                .into_iter()
                .map(|unregistered| McpUnregistered {
                    name: unregistered.name,
                    reason: unregistered.reason,
                })
                .collect();
        }
    }
    row
}
