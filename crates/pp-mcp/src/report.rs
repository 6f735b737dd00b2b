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
        sandbox: config.sandbox_report(),
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use pp_agent::{BoxFuture, Interrupt};
    use serde_json::{Value, json};

    use super::*;
    use crate::backend::{CallOutput, ListedTool};
    use crate::config::{Start, Transport, defaults};

    struct Fake(Result<Vec<ListedTool>, McpError>);

    impl Backend for Fake {
        fn server(&self) -> &str {
            "fake"
        }

        fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ListedTool>, McpError>> {
            let answer = self.0.clone();
            Box::pin(async move { answer })
        }

        fn instructions(&self) -> Option<String> {
            None
        }

        fn call<'a>(
            &'a self,
            _tool: &'a str,
            _arguments: Value,
            _interrupt: &'a Interrupt,
        ) -> BoxFuture<'a, Result<CallOutput, McpError>> {
            Box::pin(async {
                Err(McpError::Cancelled {
                    server: "fake".to_owned(),
                })
            })
        }
    }

    fn config(name: &str) -> ServerConfig {
        ServerConfig {
            name: name.to_owned(),
            transport: Transport::Http {
                url: "http://127.0.0.1:9/mcp".to_owned(),
                headers: BTreeMap::new(),
            },
            allow: vec!["echo".to_owned(), "add".to_owned()],
            default_action: None,
            trust_annotations: true,
            start: Start::Lazy,
            call_timeout: defaults::CALL_TIMEOUT,
            max_output_bytes: defaults::MAX_OUTPUT_BYTES,
            include_instructions: false,
            tools: BTreeMap::new(),
            sandbox: crate::config::SandboxConfig::default(),
        }
    }

    fn tool(name: &str) -> ListedTool {
        ListedTool {
            name: name.to_owned(),
            description: None,
            input_schema: json!({"type": "object"}),
            annotations: None,
        }
    }

    #[test]
    fn a_stdio_servers_row_shows_its_sandbox_with_the_defaults_filled_in() {
        let mut stdio = config("local");
        stdio.transport = Transport::Stdio {
            command: "x".to_owned(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        };
        stdio.default_action = Some("read".to_owned());
        stdio.sandbox.write = vec!["/var/cache/x".into()];
        let row = server_report(&stdio, Ok(crate::resolve(&stdio, &[])));
        assert_eq!(
            serde_json::to_value(row.sandbox).unwrap(),
            json!({"confined": true, "workspace": "read", "read": [],
                   "write": ["/var/cache/x"], "network": false})
        );
    }

    #[test]
    fn the_report_serialises_to_the_documented_shape() {
        let servers: Vec<(ServerConfig, Arc<dyn Backend>)> = vec![
            (
                config("up"),
                Arc::new(Fake(Ok(vec![tool("echo"), tool("rm")]))),
            ),
            (
                config("down"),
                Arc::new(Fake(Err(McpError::Start {
                    server: "down".to_owned(),
                    reason: "refused".to_owned(),
                }))),
            ),
        ];
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (report, warnings) = runtime.block_on(report_with_warnings(&servers));
        assert_eq!(
            serde_json::to_value(&report).unwrap(),
            json!({"servers": [
                {"name": "up", "transport": "http",
                 "tools": [{"name": "echo", "model_name": "up__echo",
                            "capability": "mcp:up:echo:network", "decided_by": "P2"}],
                 "unregistered": [{"name": "rm", "reason": crate::resolve::NOT_WHITELISTED}],
                 "sandbox": null},
                {"name": "down", "transport": "http",
                 "error": "MCP server `down` could not be started: refused",
                 "tools": [], "unregistered": [], "sandbox": null}
            ]})
        );
        assert_eq!(
            warnings,
            vec!["MCP server `up`: `allow` names `add` but the server does not list it"]
        );
    }
}
