//! `pocketpilot mcp [list|check|serve]`: the operator's MCP servers (`[[mcp.server]]`)
//! and PocketPilot's own gate served to MCP clients.

use std::path::PathBuf;

use clap::Subcommand;

use crate::config::{Config, Flags};
use crate::exit;
use crate::output::outln;

/// What to do.
#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// List the configured servers, their tools with the name the model sees, each
    /// tool's capability and the level that decided it, and the tools left out with why.
    List {
        /// Print one JSON object: `{"servers": [{"name", "tools": [{"name",
        /// "model_name", "capability", "decided_by"}], "unregistered": [{"name",
        /// "reason"}]}]}`.
        #[arg(long)]
        json: bool,
    },
    /// Start (or connect to) every configured server, or only NAME, and say whether it
    /// answers and lists its tools.
    Check {
        /// Only this server.
        name: Option<String>,
        /// Print the result as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Serve PocketPilot's workspace tools to an MCP client on stdin/stdout, through the
    /// jail, the policy and durable approvals.
    Serve {
        /// The workspace the client's calls may touch.
        #[arg(long, value_name = "DIR")]
        workspace: PathBuf,
        /// How long a write waits for a person's decision before the call returns
        /// `pending approval <id>` (the approval stays open); default 600 or
        /// `[mcp] approval_wait_secs`.
        #[arg(long, value_name = "SECS")]
        wait_limit: Option<u64>,
    },
}

/// Runs an `mcp` subcommand.
pub(crate) async fn run(flags: &Flags, command: McpCommand) -> anyhow::Result<u8> {
    match command {
        McpCommand::Serve {
            workspace,
            wait_limit,
        } => super::mcp_serve::run(flags, workspace, wait_limit).await,
        McpCommand::List { json } => {
            let config = Config::load(flags)?;
            if config.mcp.servers.is_empty() && !json {
                outln!(
                    "no MCP servers are configured ([[mcp.server]] in the config file; docs/mcp.md)"
                )?;
                return Ok(exit::OK);
            }
            super::mcp_list::list(&config, json).await
        }
        McpCommand::Check { name, json } => {
            let config = Config::load(flags)?;
            if config.mcp.servers.is_empty() {
                anyhow::bail!("no MCP servers are configured ([[mcp.server]] in the config file)");
            }
            super::mcp_list::check(&config, name, json).await
        }
    }
}
