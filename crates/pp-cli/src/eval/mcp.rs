//! A case's MCP server (`"mcp"` in a case file): an in-process server that lists the
//! case's tools and records every call it receives, behind the real resolution
//! (`pp_mcp::resolve`), the real `McpTool` (full schema validation, path arguments
//! through the jail) and the real "mcp" tool provider. `expect.mcp_calls` checks how many
//! calls reached it, so a path-escape case can show the server was never called.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use pp_agent::{BoxFuture, Interrupt};
use pp_mcp::config::defaults;
use pp_mcp::{
    Backend, CallOutput, ListedTool, McpError, ServerConfig, Start, ToolAnnotations, ToolConfig,
    Transport,
};
use serde::Deserialize;
use serde_json::Value;

/// `"mcp"`: one server and its tools.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
#[serde(deny_unknown_fields)]
pub(crate) struct McpCase {
    /// The server's name (the `<server>` of `<server>__<tool>`).
    pub(crate) server: String,
    /// `allow` (default `["*"]`).
    #[serde(default)]
    pub(crate) allow: Option<Vec<String>>,
    /// `default_action`.
    #[serde(default)]
    pub(crate) default_action: Option<String>,
    /// `trust_annotations`.
    #[serde(default)]
    pub(crate) trust_annotations: bool,
    /// The tools the server lists.
    pub(crate) tools: Vec<McpCaseTool>,
}

/// One listed tool and its `[mcp.server.tools.<tool>]` settings.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[cfg_attr(test, derive(serde::Serialize))]
#[serde(deny_unknown_fields)]
pub(crate) struct McpCaseTool {
    /// The tool's name on the server.
    pub(crate) name: String,
    /// Its description.
    #[serde(default)]
    pub(crate) description: Option<String>,
    /// Its input schema (default: any object).
    #[serde(default)]
    pub(crate) input_schema: Option<Value>,
    /// `readOnlyHint`, `destructiveHint`, `openWorldHint`.
    #[serde(default)]
    pub(crate) annotations: Option<BTreeMap<String, bool>>,
    /// P0: `action`.
    #[serde(default)]
    pub(crate) action: Option<String>,
    /// `path_args`.
    #[serde(default)]
    pub(crate) path_args: Vec<String>,
    /// What a call returns (default: the arguments it received, as JSON).
    #[serde(default)]
    pub(crate) answer: Option<String>,
}

/// The calls the case's server received.
pub(crate) type Received = Arc<Mutex<Vec<(String, Value)>>>;

/// The server's config and its in-process backend, recording into `received`.
pub(crate) fn server(case: &McpCase, received: &Received) -> (ServerConfig, Arc<dyn Backend>) {
    let tools = case
        .tools
        .iter()
        .filter(|tool| tool.action.is_some() || !tool.path_args.is_empty())
        .map(|tool| {
            (
                tool.name.clone(),
                ToolConfig {
                    action: tool.action.clone(),
                    path_args: tool.path_args.clone(),
                },
            )
        })
        .collect();
    let config = ServerConfig {
        name: case.server.clone(),
        transport: Transport::Stdio {
            command: "(in-process eval server)".to_owned(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
        },
        allow: case.allow.clone().unwrap_or_else(|| vec!["*".to_owned()]),
        default_action: case.default_action.clone(),
        trust_annotations: case.trust_annotations,
        start: Start::Lazy,
        call_timeout: defaults::CALL_TIMEOUT,
        max_output_bytes: defaults::MAX_OUTPUT_BYTES,
        include_instructions: false,
        tools,
        sandbox: pp_mcp::config::SandboxConfig::unconfined(),
    };
    let backend = EvalServer {
        name: case.server.clone(),
        tools: case.tools.clone(),
        received: Arc::clone(received),
    };
    (config, Arc::new(backend))
}

struct EvalServer {
    name: String,
    tools: Vec<McpCaseTool>,
    received: Received,
}

impl Backend for EvalServer {
    fn server(&self) -> &str {
        &self.name
    }

    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ListedTool>, McpError>> {
        let listed = self
            .tools
            .iter()
            .map(|tool| ListedTool {
                name: tool.name.clone(),
                description: tool.description.clone(),
                input_schema: tool
                    .input_schema
                    .clone()
                    .unwrap_or_else(|| serde_json::json!({"type": "object"})),
                annotations: tool.annotations.as_ref().map(|hints| ToolAnnotations {
                    read_only: hints.get("readOnlyHint").copied(),
                    destructive: hints.get("destructiveHint").copied(),
                    idempotent: hints.get("idempotentHint").copied(),
                    open_world: hints.get("openWorldHint").copied(),
                }),
            })
            .collect();
        Box::pin(async move { Ok(listed) })
    }

    fn instructions(&self) -> Option<String> {
        None
    }

    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Value,
        _interrupt: &'a Interrupt,
    ) -> BoxFuture<'a, Result<CallOutput, McpError>> {
        let answer = self
            .tools
            .iter()
            .find(|listed| listed.name == tool)
            .and_then(|listed| listed.answer.clone())
            .unwrap_or_else(|| arguments.to_string());
        if let Ok(mut received) = self.received.lock() {
            received.push((tool.to_owned(), arguments));
        }
        Box::pin(async move {
            Ok(CallOutput {
                text: answer,
                is_error: false,
            })
        })
    }
}
