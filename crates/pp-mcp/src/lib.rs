//! MCP both ways, and the only crate that knows the MCP SDK (`rmcp`).
//!
//! As a client it starts or connects to the MCP servers the operator whitelisted
//! (`[[mcp.server]]`, [`config`]), decides each tool's action by the priority levels of
//! SPEC §4.4 and offers the allowed tools to the loop as ordinary [`pp_agent::Tool`]s
//! named `<server>__<tool>`, so every call passes the same gate as a built-in tool: path
//! arguments through the workspace jail, the capability `mcp:<server>:<tool>:<action>`
//! through the policy. As a server it offers PocketPilot's own workspace tools to an MCP
//! client; the task service behind it is wired in by `pp-cli` (this crate depends on
//! types, gate and agent only).

pub mod backend;
pub mod client;
pub mod config;
pub mod report;
pub mod resolve;
pub mod server;
pub mod testing;
pub mod tool;

pub use backend::{Backend, CallOutput, ListedTool, McpError, ToolAnnotations};
pub use client::{Connection, Launcher, McpClients};
pub use config::{SandboxConfig, ServerConfig, Start, ToolConfig, Transport, WorkspaceAccess};
pub use report::report;
pub use resolve::{Level, Resolution, ResolvedTool, Unregistered, resolve};
pub use tool::McpTool;
