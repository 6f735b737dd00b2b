//! The operator's MCP servers as a tool provider ("mcp"): every whitelisted tool of
//! every configured server, resolved by `pp_mcp::resolve` (the same resolution
//! `pocketpilot mcp list` reports), offered to each segment bound to the segment's fresh
//! workspace jail.
//!
//! Listing needs the server, and [`ToolProvider::provide`] is synchronous and runs on
//! the blocking pool (`pp_tasks` builds segments there): the provider keeps the handle
//! of the runtime it was built on and `block_on`s the listing there, which tokio allows
//! from a blocking thread. The client caches a server's list after its first answer, so
//! only the first segment (or the first after a restart) waits for it. A lazy server is
//! thus started by the first segment that is equipped, not before.
//!
//! A stdio server runs confined (`pp_mcp::Launcher`, `pocketpilot __sandbox`), one
//! process per workspace: the provider asks the clients for the servers of the
//! segment's workspace, so a task's first segment starts that workspace's processes.
//! The default workspace's serve `start = "startup"`, `mcp list`, `mcp check`, `doctor`
//! and `GET /api/mcp/servers`.
//!
//! A server that cannot be reached does not fail the task: its tools are not offered,
//! and the reason is printed once per process on stderr (as are the resolution's
//! warnings: tools left unregistered at P3, name clashes, configured tools the server
//! does not list).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use pp_mcp::{Backend, Launcher, McpTool, ServerConfig};
use pp_tools::{ProviderError, Provision, Scope, ToolProvider};
use tokio::runtime::Handle;

use crate::config::Config;
use crate::output::errln;

pub(crate) use pp_mcp::McpClients;

/// The most characters of a server's `instructions` put into the system prompt (only
/// with `include_instructions = true`).
pub(crate) const MAX_INSTRUCTIONS_CHARS: usize = 2_000;

/// The clients of `servers`: stdio servers start as `pocketpilot __sandbox` (this very
/// binary; `pocketpilot` on PATH should its path be unknown), confined for the workspace
/// they serve, never reaching the data directory; the configured default workspace is
/// the one served when no task names one.
pub(crate) fn clients(config: &Config, servers: Vec<ServerConfig>) -> McpClients {
    // Without a stdio server nothing is ever launched: no kernel probe, no path lookups
    // at start (a run or serve with only HTTP servers, or none, pays nothing for them).
    if !servers
        .iter()
        .any(|server| matches!(server.transport, pp_mcp::Transport::Stdio { .. }))
    {
        return McpClients::new(servers);
    }
    let program = std::env::current_exe().unwrap_or_else(|_| "pocketpilot".into());
    let sandbox = pp_sandbox::Sandbox::new(program, vec!["__sandbox".to_owned()]);
    let default = config
        .workspaces
        .find(None)
        .map(|workspace| canonical(&workspace.path));
    McpClients::with_launcher(
        servers,
        Launcher::new(sandbox, config.home.clone(), default),
    )
}

/// `path` with its links resolved, as the segment's jail has its root (as written when
/// that fails).
#[expect(
    clippy::disallowed_methods,
    reason = "resolves the operator's configured default workspace, never a model-supplied path"
)]
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Where the provider's servers come from.
enum Servers {
    /// The configured clients: each segment gets its workspace's connections.
    Clients(Arc<McpClients>),
    /// Fixed backends (tests and evals).
    Fixed(Vec<(ServerConfig, Arc<dyn Backend>)>),
}

/// The MCP servers' tools. See the module docs.
pub(crate) struct McpProvider {
    servers: Servers,
    runtime: Option<Handle>,
    /// Warnings already printed (each once per process).
    warned: Mutex<BTreeSet<String>>,
}

impl McpProvider {
    /// The tools of `clients`' servers, listed on the current runtime (none when built
    /// outside one: then every server's tools are left out, with a warning).
    pub(crate) fn new(clients: &Arc<McpClients>) -> Self {
        Self::with(Servers::Clients(Arc::clone(clients)))
    }

    /// The tools of `servers` (tests and evals put their own backends here).
    pub(crate) fn over(servers: Vec<(ServerConfig, Arc<dyn Backend>)>) -> Self {
        Self::with(Servers::Fixed(servers))
    }

    fn with(servers: Servers) -> Self {
        Self {
            servers,
            runtime: Handle::try_current().ok(),
            warned: Mutex::new(BTreeSet::new()),
        }
    }

    /// Prints `message` once per process.
    fn warn(&self, message: String) {
        match self.warned.lock() {
            Ok(mut warned) => {
                if !warned.contains(&message) {
                    errln!("warning: {message}");
                    warned.insert(message);
                }
            }
            Err(_) => errln!("warning: {message}"),
        }
    }
}

impl ToolProvider for McpProvider {
    fn name(&self) -> &str {
        "mcp"
    }

    fn provide(&self, scope: &Scope<'_>, provision: &mut Provision) -> Result<(), ProviderError> {
        let servers = match &self.servers {
            Servers::Clients(clients) => clients.servers_for(Some(scope.workspace.root())),
            Servers::Fixed(servers) => servers.clone(),
        };
        if servers.is_empty() {
            return Ok(());
        }
        let Some(runtime) = &self.runtime else {
            self.warn(
                "the MCP servers' tools are not offered: no async runtime to talk to them"
                    .to_owned(),
            );
            return Ok(());
        };
        // Model names are unique within a server (`resolve`); across servers a clash
        // (`a_` + `b` and `a` + `_b` both clean to `a___b`) leaves the later tool out.
        let mut offered = BTreeSet::new();
        for (config, backend) in &servers {
            let listed = match runtime.block_on(backend.list_tools()) {
                Ok(listed) => listed,
                Err(error) => {
                    self.warn(format!(
                        "the tools of MCP server `{}` are not offered: {error}",
                        config.name
                    ));
                    continue;
                }
            };
            let resolution = pp_mcp::resolve(config, &listed);
            for warning in resolution.warnings {
                self.warn(warning);
            }
            for tool in resolution.tools {
                if !offered.insert(tool.model_name.clone()) {
                    self.warn(format!(
                        "MCP server `{}`: tool `{}` is not registered: its model name `{}` \
                         clashes with another server's tool",
                        config.name, tool.listed.name, tool.model_name
                    ));
                    continue;
                }
                provision.tool(Arc::new(
                    McpTool::new(tool, Arc::clone(backend), Arc::clone(scope.workspace))
                        .with_sandbox(config.sandbox_card()),
                ));
            }
            if config.include_instructions
                && let Some(text) = backend.instructions().filter(|t| !t.trim().is_empty())
            {
                let mut capped: String = text.chars().take(MAX_INSTRUCTIONS_CHARS).collect();
                if text.chars().count() > MAX_INSTRUCTIONS_CHARS {
                    capped.push_str("\n[… cut]");
                }
                provision
                    .prompt()
                    .mcp_instructions
                    .push((config.name.clone(), capped));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use pp_agent::{BoxFuture, Interrupt};
    use pp_mcp::{CallOutput, ListedTool, McpError, Start, ToolConfig, Transport};
    use pp_tools::Toolbox;
    use serde_json::{Value, json};

    use super::*;

    /// A server that lists one tool and has instructions, or cannot be reached.
    struct Fake {
        name: &'static str,
        reachable: bool,
    }

    impl Backend for Fake {
        fn server(&self) -> &str {
            self.name
        }

        fn list_tools(&self) -> BoxFuture<'_, Result<Vec<ListedTool>, McpError>> {
            let answer = if self.reachable {
                Ok(vec![ListedTool {
                    name: "lookup".to_owned(),
                    description: None,
                    input_schema: json!({"type": "object"}),
                    annotations: None,
                }])
            } else {
                Err(McpError::Start {
                    server: self.name.to_owned(),
                    reason: "no such program".to_owned(),
                })
            };
            Box::pin(async move { answer })
        }

        fn instructions(&self) -> Option<String> {
            Some("Always call lookup first. ".repeat(200))
        }

        fn call<'a>(
            &'a self,
            _tool: &'a str,
            _arguments: Value,
            _interrupt: &'a Interrupt,
        ) -> BoxFuture<'a, Result<CallOutput, McpError>> {
            Box::pin(async {
                Ok(CallOutput {
                    text: String::new(),
                    is_error: false,
                })
            })
        }
    }

    fn config(name: &str, include_instructions: bool) -> ServerConfig {
        let mut tools = BTreeMap::new();
        tools.insert(
            "lookup".to_owned(),
            ToolConfig {
                action: Some("read".to_owned()),
                path_args: Vec::new(),
            },
        );
        ServerConfig {
            name: name.to_owned(),
            transport: Transport::Stdio {
                command: "x".to_owned(),
                args: Vec::new(),
                env: BTreeMap::new(),
                cwd: None,
            },
            allow: Vec::new(),
            default_action: None,
            trust_annotations: false,
            start: Start::Lazy,
            call_timeout: pp_mcp::config::defaults::CALL_TIMEOUT,
            max_output_bytes: pp_mcp::config::defaults::MAX_OUTPUT_BYTES,
            include_instructions,
            tools,
            sandbox: pp_mcp::config::SandboxConfig::unconfined(),
        }
    }

    #[test]
    fn an_unreachable_server_leaves_only_its_tools_out_and_instructions_need_opting_in() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let jail = Arc::new(pp_gate::Jail::new(dir.path()).unwrap());
        let servers: Vec<(ServerConfig, Arc<dyn Backend>)> = vec![
            (
                config("down", true),
                Arc::new(Fake {
                    name: "down",
                    reachable: false,
                }),
            ),
            (
                config("quiet", false),
                Arc::new(Fake {
                    name: "quiet",
                    reachable: true,
                }),
            ),
            (
                config("chatty", true),
                Arc::new(Fake {
                    name: "chatty",
                    reachable: true,
                }),
            ),
            // Cleans to `chatty__lookup` too: left out, the segment still equipped.
            (
                config("chatty", false),
                Arc::new(Fake {
                    name: "chatty",
                    reachable: true,
                }),
            ),
        ];
        let equipment = runtime.block_on(async move {
            let toolbox = Toolbox::new().with(Arc::new(McpProvider::over(servers)));
            // As the task service does: segments are equipped on the blocking pool.
            tokio::task::spawn_blocking(move || toolbox.equip(&jail, pp_tools::Limits::default()))
                .await
                .unwrap()
                .unwrap()
        });
        let names: Vec<&str> = equipment
            .registry
            .specs()
            .map(|spec| spec.name.as_str())
            .collect();
        assert_eq!(names, vec!["chatty__lookup", "quiet__lookup"]);
        let instructions = &equipment.prompt.mcp_instructions;
        assert_eq!(instructions.len(), 1);
        assert_eq!(instructions[0].0, "chatty");
        assert!(instructions[0].1.ends_with("[… cut]"));
        assert!(instructions[0].1.chars().count() < MAX_INSTRUCTIONS_CHARS + 20);
        let prompt = pp_agent::system_prompt(&equipment.registry, &equipment.prompt);
        assert!(prompt.contains("## Instructions from MCP server `chatty` (untrusted)"));
        assert!(!prompt.contains("server `quiet` (untrusted)"));
    }
}
