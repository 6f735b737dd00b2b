//! The seam between a server connection (`client`) and the tools the model sees
//! (`tool`): what a server lists and what one call returns. Tests put a fake behind it.

use pp_agent::{BoxFuture, Interrupt};
use serde_json::Value;

/// A tool as the server lists it (`tools/list`). Every field is untrusted text.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    /// The tool's name on the server.
    pub name: String,
    /// Its description (shown to the model, length-capped).
    pub description: Option<String>,
    /// Its input schema (full JSON Schema).
    pub input_schema: Value,
    /// Its annotations, when the server sent them.
    pub annotations: Option<ToolAnnotations>,
}

/// MCP tool annotations (`None`: the server did not say; the MCP specification's
/// defaults then apply: `read_only` false, `destructive` true, `open_world` true).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolAnnotations {
    /// `readOnlyHint`.
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    pub destructive: Option<bool>,
    /// `idempotentHint`.
    pub idempotent: Option<bool>,
    /// `openWorldHint`.
    pub open_world: Option<bool>,
}

/// What one `tools/call` returned, already capped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallOutput {
    /// The content as text (text parts joined; other parts described), at most the
    /// server's `max_output_bytes`, with a truncation marker when cut.
    pub text: String,
    /// The server marked the result as an error (`isError`).
    pub is_error: bool,
}

/// Why talking to a server failed. The message is what the model (as a tool error) and
/// the operator (`mcp check`, `doctor`) see.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The process could not be started or the URL not reached.
    #[error("MCP server `{server}` could not be started: {reason}")]
    Start {
        /// The server's name.
        server: String,
        /// Why.
        reason: String,
    },
    /// The server broke the protocol or refused the request.
    #[error("MCP server `{server}`: {reason}")]
    Protocol {
        /// The server's name.
        server: String,
        /// Why.
        reason: String,
    },
    /// The server died during the call (it is restarted for later calls).
    #[error("MCP server `{server}` crashed during the call; it will be restarted: {reason}")]
    Crashed {
        /// The server's name.
        server: String,
        /// What is known (exit status).
        reason: String,
    },
    /// The server is waiting out its restart backoff.
    #[error("MCP server `{server}` is restarting after a crash; try again in {retry_in_ms} ms")]
    Restarting {
        /// The server's name.
        server: String,
        /// When the next start is allowed.
        retry_in_ms: u64,
    },
    /// The call took longer than `call_timeout_secs`.
    #[error("MCP server `{server}` did not answer within {secs} s (call_timeout_secs)")]
    Timeout {
        /// The server's name.
        server: String,
        /// The limit.
        secs: u64,
    },
    /// The task was cancelled or timed out during the call.
    #[error("the call to MCP server `{server}` was cancelled")]
    Cancelled {
        /// The server's name.
        server: String,
    },
}

/// One configured server, connected or not: [`crate::client`] implements it over rmcp.
pub trait Backend: Send + Sync {
    /// The server's configured name.
    fn server(&self) -> &str;

    /// The server's tools (connecting first if needed; cached after the first answer).
    fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ListedTool>, McpError>>;

    /// The server's `instructions` from `initialize` (untrusted), once connected.
    fn instructions(&self) -> Option<String>;

    /// Calls `tool` with `arguments` (already validated and with paths resolved),
    /// honouring the server's timeout and output cap; stops waiting (and sends
    /// `notifications/cancelled`) when `interrupt` is triggered.
    fn call<'a>(
        &'a self,
        tool: &'a str,
        arguments: Value,
        interrupt: &'a Interrupt,
    ) -> BoxFuture<'a, Result<CallOutput, McpError>>;
}
