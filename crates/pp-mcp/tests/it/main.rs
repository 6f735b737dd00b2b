//! pp-mcp's integration tests, one binary (STYLE T2): the client against real MCP servers
//! started as child processes (`client`), and `McpTool` over the real filesystem server
//! (`tools`).
#![allow(
    clippy::unwrap_used,
    clippy::disallowed_methods,
    reason = "test fixtures and helpers read /proc, write fixtures with std::fs and panic on setup failure"
)]

mod client;
mod tools;
