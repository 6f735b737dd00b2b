//! What PocketPilot knows about its configured MCP servers: each server's tools with
//! the name the model sees, the capability the gate reads and which priority level
//! decided it, and the tools left unregistered with why. `pocketpilot mcp list --json`,
//! `GET /api/mcp/servers` and the console all show this one shape.

use serde::{Deserialize, Serialize};

/// Every configured MCP server, in config order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpReport {
    /// The servers.
    pub servers: Vec<McpServerReport>,
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerReport {
    /// The configured name (`[[mcp.server]] name`).
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// Why the server could not be reached or listed, if it could not (then `tools` and
    /// `unregistered` are empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The tools offered to the model.
    pub tools: Vec<McpToolReport>,
    /// The tools the server lists that are not offered, with the reason.
    pub unregistered: Vec<McpUnregistered>,
    /// How a stdio server's process is confined (`[mcp.server.sandbox]` with its
    /// defaults filled in); `null` for an HTTP server, whose process is not ours.
    #[serde(default)]
    pub sandbox: Option<McpSandbox>,
}

/// How a stdio MCP server's process is confined: what `[mcp.server.sandbox]` declares,
/// with the defaults filled in. Besides this it may always read the system locations
/// and what it needs to start (docs/mcp.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpSandbox {
    /// Whether it runs under the Landlock rules and the socket filter (`false`: NOT
    /// confined, the operator's `confined = false`).
    pub confined: bool,
    /// What it may do in the workspace of the task it serves: `read`, `write` or `none`.
    pub workspace: String,
    /// Paths it may read besides those (absolute).
    pub read: Vec<String>,
    /// Paths it may write besides the workspace (absolute).
    pub write: Vec<String>,
    /// Whether it may use the network.
    pub network: bool,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpToolReport {
    /// The tool's name on the server.
    pub name: String,
    /// The name the model sees: `<server>__<tool>`, cleaned to `^[A-Za-z0-9_-]{1,64}$`.
    pub model_name: String,
    /// `mcp:<server>:<tool>:<action>`.
    pub capability: String,
    /// The priority level that decided the action: `P0` (the tool's explicit action),
    /// `P1` (the server's `default_action`) or `P2` (the tool's trusted annotations).
    pub decided_by: String,
}

/// A tool the server lists that the model is not offered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpUnregistered {
    /// The tool's name on the server.
    pub name: String,
    /// Why: not in the whitelist, no usable action (P3), a name clash, a bad schema.
    pub reason: String,
}

/// What an approval card shows of a call to an MCP server's tool, next to its arguments
/// ([`crate::EffectPreview::mcp`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpCallPreview {
    /// The configured server's name.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// The action the call was resolved to (`write`, `network`, …): the last word of its
    /// capability.
    pub action: String,
    /// The server's sandbox, only when it is wider than the default (network, extra
    /// paths, a writable workspace where the default is read-only, or NOT confined):
    /// every card of its tools shows it then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<McpSandbox>,
}
