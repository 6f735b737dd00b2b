//! The operator's MCP servers, as `pp-cli` reads them from `[[mcp.server]]` (never from
//! a workspace).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// One `[[mcp.server]]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The server's name: the `<server>` of its tools' capabilities and model names.
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// The whitelist: tool names the model may be offered (`"*"`: every tool the server
    /// lists). A tool with a `[mcp.server.tools.<tool>]` entry is whitelisted too.
    pub allow: Vec<String>,
    /// P1: the action of every whitelisted tool without its own (`read`, `write`, …).
    pub default_action: Option<String>,
    /// P2: whether the tools' MCP annotations may decide their action.
    pub trust_annotations: bool,
    /// When the server is started or connected to.
    pub start: Start,
    /// How long one call may take before it fails with a timeout.
    pub call_timeout: Duration,
    /// How much of a call's output the model sees (the rest is cut with a marker).
    pub max_output_bytes: usize,
    /// Whether the server's `instructions` go into the system prompt (off by default:
    /// they are untrusted text).
    pub include_instructions: bool,
    /// Per-tool settings, by the tool's name on the server.
    pub tools: BTreeMap<String, ToolConfig>,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its whole environment: the child starts with a cleared environment plus
        /// exactly these variables.
        env: BTreeMap<String, String>,
        /// Its working directory.
        cwd: Option<PathBuf>,
    },
    /// A streamable-HTTP server.
    Http {
        /// The endpoint URL.
        url: String,
        /// Headers sent with every request (for example an authorization header).
        headers: BTreeMap<String, String>,
    },
}

impl Transport {
    /// `stdio` or `http`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Stdio { .. } => "stdio",
            Self::Http { .. } => "http",
        }
    }
}

/// When a server is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Start {
    /// At its first use (the default).
    #[default]
    Lazy,
    /// When the process that uses it starts (`serve`, `run`).
    Startup,
}

/// `[mcp.server.tools.<tool>]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolConfig {
    /// P0: the tool's action word.
    pub action: Option<String>,
    /// The tool's path arguments as pointers: `"path"` (a top-level string) or
    /// `"paths[]"` (each element of a top-level array); checked by the jail before the
    /// call and passed to the server resolved.
    pub path_args: Vec<String>,
}

/// Defaults for the optional settings.
pub mod defaults {
    use std::time::Duration;

    /// `call_timeout_secs`.
    pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);
    /// `max_output_bytes`.
    pub const MAX_OUTPUT_BYTES: usize = 64 * 1024;
}
