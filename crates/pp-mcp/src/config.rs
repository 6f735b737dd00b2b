//! The operator's MCP servers, as `pp-cli` reads them from `[[mcp.server]]` (never from
//! a workspace).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

pub use pp_sandbox::WorkspaceAccess;
use pp_types::McpSandbox;

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
    /// `[mcp.server.sandbox]`: how a stdio server's process is confined (ignored for an
    /// HTTP server).
    pub sandbox: SandboxConfig,
}

/// `[mcp.server.sandbox]`: what a stdio server's process may reach besides the system
/// locations and what it needs to start (see [`crate::client::Launcher`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxConfig {
    /// Whether it runs under the Landlock rules and the socket filter (default true).
    /// `false` is the only way to run it where Landlock is missing: its tools' cards
    /// then say "NOT confined".
    pub confined: bool,
    /// What it may do in the workspace of the task it serves; `None`: the default
    /// ([`ServerConfig::workspace_access`]).
    pub workspace: Option<WorkspaceAccess>,
    /// Absolute paths it may read (and execute) besides those.
    pub read: Vec<PathBuf>,
    /// Absolute paths it may read and write besides the workspace (never in the data
    /// directory: `pp-cli` refuses such a config).
    pub write: Vec<PathBuf>,
    /// Whether it may use the network (default false).
    pub network: bool,
}

impl Default for SandboxConfig {
    /// Confined, the workspace by the default rule, nothing else, no network.
    fn default() -> Self {
        Self {
            confined: true,
            workspace: None,
            read: Vec::new(),
            write: Vec::new(),
            network: false,
        }
    }
}

impl SandboxConfig {
    /// Not confined (`confined = false`), otherwise the defaults.
    pub fn unconfined() -> Self {
        Self {
            confined: false,
            ..Self::default()
        }
    }
}

impl ServerConfig {
    /// What the server's process may do in the workspace: the configured `workspace`,
    /// else `read` when the configuration alone makes every tool it may offer a `read` or
    /// `list` (a `read`/`list` `default_action`, or no `allow` and every configured
    /// tool's action `read`/`list`, and no tool's own action anything else), else
    /// `write`.
    pub fn workspace_access(&self) -> WorkspaceAccess {
        self.sandbox
            .workspace
            .unwrap_or_else(|| self.default_workspace_access())
    }

    /// [`ServerConfig::workspace_access`] without the configured `workspace`.
    pub fn default_workspace_access(&self) -> WorkspaceAccess {
        let reads = |action: &str| action == "read" || action == "list";
        let decided = self.default_action.is_some()
            || (self.allow.is_empty()
                && !self.tools.is_empty()
                && self.tools.values().all(|tool| tool.action.is_some()));
        let all_read = self.default_action.as_deref().is_none_or(reads)
            && self
                .tools
                .values()
                .all(|tool| tool.action.as_deref().is_none_or(reads));
        if decided && all_read {
            WorkspaceAccess::Read
        } else {
            WorkspaceAccess::Write
        }
    }

    /// The server's sandbox with its defaults filled in, as `mcp list` and `GET
    /// /api/mcp/servers` show it; `None` for an HTTP server.
    pub fn sandbox_report(&self) -> Option<McpSandbox> {
        let Transport::Stdio { .. } = self.transport else {
            return None;
        };
        let text = |paths: &[PathBuf]| {
            paths
                .iter()
                .map(|path| path.display().to_string())
                .collect::<Vec<_>>()
        };
        Some(McpSandbox {
            confined: self.sandbox.confined,
            workspace: self.workspace_access().as_str().to_owned(),
            read: text(&self.sandbox.read),
            write: text(&self.sandbox.write),
            network: self.sandbox.network,
        })
    }

    /// The sandbox a card shows: [`ServerConfig::sandbox_report`] when it is wider than
    /// the default (NOT confined, the network, extra paths, or a writable workspace
    /// where the default is read-only), else `None`.
    pub fn sandbox_card(&self) -> Option<McpSandbox> {
        let report = self.sandbox_report()?;
        let wider = !self.sandbox.confined
            || self.sandbox.network
            || !self.sandbox.read.is_empty()
            || !self.sandbox.write.is_empty()
            || (self.workspace_access() == WorkspaceAccess::Write
                && self.default_workspace_access() != WorkspaceAccess::Write);
        wider.then_some(report)
    }
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
