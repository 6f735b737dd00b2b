//! The `[mcp]` table and its `[[mcp.server]]` entries, read from the operator's config
//! file only (never from a workspace), resolved into `pp_mcp::ServerConfig`s.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use pp_mcp::config::defaults;
use pp_mcp::{SandboxConfig, ServerConfig, Start, ToolConfig, Transport, WorkspaceAccess};
use serde::Deserialize;

/// The action words a tool may be given (`action`, `default_action`).
pub(crate) const ACTIONS: &[&str] = &[
    "read", "list", "write", "create", "update", "delete", "execute", "network",
];

/// The `[mcp]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileMcp {
    /// How long `mcp serve` holds a write call open waiting for a decision (default 600).
    approval_wait_secs: Option<u64>,
    /// The servers whose whitelisted tools the model may be offered.
    #[serde(default)]
    server: Vec<FileMcpServer>,
}

/// One `[[mcp.server]]` entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileMcpServer {
    name: String,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    allow: Vec<String>,
    default_action: Option<String>,
    #[serde(default)]
    trust_annotations: bool,
    start: Option<String>,
    call_timeout_secs: Option<u64>,
    max_output_bytes: Option<usize>,
    #[serde(default)]
    include_instructions: bool,
    #[serde(default)]
    tools: BTreeMap<String, FileMcpTool>,
    sandbox: Option<FileMcpSandbox>,
}

/// `[mcp.server.sandbox]`: how a stdio server's process is confined.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileMcpSandbox {
    /// `read`, `write` or `none` (default: `read` when every tool it may offer is a read
    /// or list by the config, else `write`).
    workspace: Option<String>,
    /// Absolute paths it may read besides the system locations and its start needs.
    #[serde(default)]
    read: Vec<PathBuf>,
    /// Absolute paths it may write besides the workspace.
    #[serde(default)]
    write: Vec<PathBuf>,
    /// Whether it may use the network (default false).
    network: Option<bool>,
    /// Whether it runs confined at all (default true).
    confined: Option<bool>,
}

/// `[mcp.server.tools.<tool>]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileMcpTool {
    action: Option<String>,
    #[serde(default)]
    path_args: Vec<String>,
}

/// The resolved `[mcp]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct McpConfig {
    /// `approval_wait_secs`.
    pub(crate) approval_wait: Duration,
    /// The servers, in file order.
    pub(crate) servers: Vec<ServerConfig>,
}

/// The default of `[mcp] approval_wait_secs`.
pub(crate) const DEFAULT_APPROVAL_WAIT: Duration = Duration::from_secs(600);

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            approval_wait: DEFAULT_APPROVAL_WAIT,
            servers: Vec::new(),
        }
    }
}

impl McpConfig {
    /// Checks and resolves the table; every error names the server and the key. No
    /// server's `read` or `write` path may lie in one of the `private` folders (the data
    /// directory, the team directory).
    pub(crate) fn resolve(file: Option<&FileMcp>, private: &[&Path]) -> anyhow::Result<Self> {
        let Some(file) = file else {
            return Ok(Self::default());
        };
        let mut names = BTreeSet::new();
        let mut servers = Vec::with_capacity(file.server.len());
        for server in &file.server {
            let resolved = resolve_server(server, private)?;
            if !names.insert(resolved.name.clone()) {
                anyhow::bail!("[[mcp.server]] `{}` is configured twice", resolved.name);
            }
            servers.push(resolved);
        }
        let approval_wait = match file.approval_wait_secs {
            None => DEFAULT_APPROVAL_WAIT,
            Some(0) => anyhow::bail!("[mcp] approval_wait_secs must be at least 1"),
            Some(secs) => Duration::from_secs(secs),
        };
        Ok(Self {
            approval_wait,
            servers,
        })
    }
}

fn resolve_server(file: &FileMcpServer, private: &[&Path]) -> anyhow::Result<ServerConfig> {
    let name = file.name.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        anyhow::bail!(
            "[[mcp.server]] name `{}` must be letters, digits, `-` or `_` (it becomes part \
             of capabilities and tool names)",
            file.name
        );
    }
    if name.contains("__") {
        anyhow::bail!(
            "[[mcp.server]] name `{name}` must not contain `__` (it separates the server from the tool in the model's tool names)"
        );
    }
    let transport = match (&file.command, &file.url) {
        (Some(command), None) => {
            if !file.headers.is_empty() {
                anyhow::bail!("[[mcp.server]] `{name}`: `headers` go with `url`, not `command`");
            }
            Transport::Stdio {
                command: command.clone(),
                args: file.args.clone(),
                env: file.env.clone(),
                cwd: file.cwd.clone(),
            }
        }
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                anyhow::bail!(
                    "[[mcp.server]] `{name}`: url `{url}` must start with http:// or https://"
                );
            }
            if !file.args.is_empty() || !file.env.is_empty() || file.cwd.is_some() {
                anyhow::bail!(
                    "[[mcp.server]] `{name}`: `args`, `env` and `cwd` go with `command`, not `url`"
                );
            }
            Transport::Http {
                url: url.clone(),
                headers: file.headers.clone(),
            }
        }
        (Some(_), Some(_)) => {
            anyhow::bail!("[[mcp.server]] `{name}`: give either `command` or `url`, not both")
        }
        (None, None) => {
            anyhow::bail!(
                "[[mcp.server]] `{name}`: give `command` (a stdio server) or `url` (an HTTP server)"
            )
        }
    };
    let action = |key: &str, word: &Option<String>| -> anyhow::Result<Option<String>> {
        match word {
            None => Ok(None),
            Some(word) if ACTIONS.contains(&word.as_str()) => Ok(Some(word.clone())),
            Some(word) => anyhow::bail!(
                "[[mcp.server]] `{name}`: {key} `{word}` is not one of {}",
                ACTIONS.join(", ")
            ),
        }
    };
    let default_action = action("default_action", &file.default_action)?;
    let start = match file.start.as_deref() {
        None | Some("lazy") => Start::Lazy,
        Some("startup") => Start::Startup,
        Some(other) => {
            anyhow::bail!("[[mcp.server]] `{name}`: start `{other}` is not `lazy` or `startup`")
        }
    };
    let call_timeout = match file.call_timeout_secs {
        None => defaults::CALL_TIMEOUT,
        Some(0) => anyhow::bail!("[[mcp.server]] `{name}`: call_timeout_secs must be at least 1"),
        Some(secs) => Duration::from_secs(secs),
    };
    let max_output_bytes = match file.max_output_bytes {
        None => defaults::MAX_OUTPUT_BYTES,
        Some(0) => anyhow::bail!("[[mcp.server]] `{name}`: max_output_bytes must be at least 1"),
        Some(bytes) => bytes,
    };
    let mut tools = BTreeMap::new();
    for (tool, settings) in &file.tools {
        let key = format!("tools.{tool}.action");
        for pointer in &settings.path_args {
            let property = pointer.strip_suffix("[]").unwrap_or(pointer);
            if property.is_empty() || property.contains(['/', '[', ']', '.']) {
                anyhow::bail!(
                    "[[mcp.server]] `{name}`: tools.{tool}.path_args entry `{pointer}` must be \
                     a top-level argument name, optionally followed by `[]` (an array of paths)"
                );
            }
        }
        tools.insert(
            tool.clone(),
            ToolConfig {
                action: action(&key, &settings.action)?,
                path_args: settings.path_args.clone(),
            },
        );
    }
    let sandbox = resolve_sandbox(name, &transport, file.sandbox.as_ref(), private)?;
    Ok(ServerConfig {
        name: name.to_owned(),
        transport,
        allow: file.allow.clone(),
        default_action,
        trust_annotations: file.trust_annotations,
        start,
        call_timeout,
        max_output_bytes,
        include_instructions: file.include_instructions,
        tools,
        sandbox,
    })
}

/// `[mcp.server.sandbox]` over the defaults: only for a stdio server, paths absolute and
/// never in a `private` folder.
fn resolve_sandbox(
    name: &str,
    transport: &Transport,
    file: Option<&FileMcpSandbox>,
    private: &[&Path],
) -> anyhow::Result<SandboxConfig> {
    let Some(file) = file else {
        return Ok(SandboxConfig::default());
    };
    if let Transport::Http { .. } = transport {
        anyhow::bail!(
            "[[mcp.server]] `{name}`: `[mcp.server.sandbox]` goes with `command` (a stdio \
             server); an HTTP server's process is not PocketPilot's to confine"
        );
    }
    let workspace = match file.workspace.as_deref() {
        None => None,
        Some("read") => Some(WorkspaceAccess::Read),
        Some("write") => Some(WorkspaceAccess::Write),
        Some("none") => Some(WorkspaceAccess::None),
        Some(other) => anyhow::bail!(
            "[[mcp.server]] `{name}`: sandbox.workspace `{other}` is not `read`, `write` or `none`"
        ),
    };
    for (key, paths) in [("read", &file.read), ("write", &file.write)] {
        for path in paths {
            if !path.is_absolute() {
                anyhow::bail!(
                    "[[mcp.server]] `{name}`: sandbox.{key} path `{}` must be absolute",
                    path.display()
                );
            }
            if let Some(folder) = private.iter().find(|folder| {
                pp_sandbox::is_within(path, folder) || pp_sandbox::is_within(folder, path)
            }) {
                anyhow::bail!(
                    "[[mcp.server]] `{name}`: sandbox.{key} path `{}` reaches {}, PocketPilot's \
                     own data, which no MCP server may reach",
                    path.display(),
                    folder.display()
                );
            }
        }
    }
    Ok(SandboxConfig {
        confined: file.confined.unwrap_or(true),
        workspace,
        read: file.read.clone(),
        write: file.write.clone(),
        network: file.network.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> anyhow::Result<McpConfig> {
        #[derive(Deserialize)]
        struct Top {
            mcp: FileMcp,
        }
        let top: Top = toml::from_str(text)?;
        McpConfig::resolve(Some(&top.mcp), &[Path::new("/srv/pp-data")])
    }

    #[test]
    fn a_stdio_and_an_http_server_resolve_with_defaults() {
        let config = parse(
            r#"
            [mcp]
            approval_wait_secs = 30
            [[mcp.server]]
            name = "fs"
            command = "node"
            args = ["server.js", "/tmp"]
            env = { NODE_ENV = "production" }
            trust_annotations = true
            [mcp.server.tools.read_text_file]
            action = "read"
            path_args = ["path"]
            [mcp.server.tools.read_multiple_files]
            path_args = ["paths[]"]
            [[mcp.server]]
            name = "remote"
            url = "http://127.0.0.1:9/mcp"
            headers = { Authorization = "Bearer x" }
            allow = ["*"]
            default_action = "network"
            start = "startup"
            call_timeout_secs = 5
            max_output_bytes = 100
            "#,
        )
        .unwrap();
        assert_eq!(config.approval_wait, Duration::from_secs(30));
        let [fs, remote] = config.servers.as_slice() else {
            panic!("two servers: {config:?}");
        };
        assert_eq!(fs.transport.kind(), "stdio");
        assert!(fs.trust_annotations);
        assert_eq!(fs.start, Start::Lazy);
        assert_eq!(fs.call_timeout, defaults::CALL_TIMEOUT);
        assert_eq!(fs.tools["read_text_file"].action.as_deref(), Some("read"));
        assert_eq!(fs.tools["read_multiple_files"].path_args, ["paths[]"]);
        assert_eq!(remote.transport.kind(), "http");
        assert_eq!(remote.allow, ["*"]);
        assert_eq!(remote.default_action.as_deref(), Some("network"));
        assert_eq!(remote.start, Start::Startup);
        assert_eq!(remote.call_timeout, Duration::from_secs(5));
        assert_eq!(remote.max_output_bytes, 100);
    }

    #[test]
    fn bad_entries_are_refused_with_the_server_and_the_key() {
        for (text, needle) in [
            ("name = \"a\"", "give `command`"),
            (
                "name = \"a\"\ncommand = \"x\"\nurl = \"http://h\"",
                "not both",
            ),
            ("name = \"a b\"\ncommand = \"x\"", "letters, digits"),
            ("name = \"a__b\"\ncommand = \"x\"", "must not contain `__`"),
            ("name = \"a\"\nurl = \"ftp://h\"", "must start with http"),
            (
                "name = \"a\"\ncommand = \"x\"\ndefault_action = \"admin\"",
                "default_action `admin`",
            ),
            (
                "name = \"a\"\ncommand = \"x\"\nstart = \"now\"",
                "start `now`",
            ),
            (
                "name = \"a\"\ncommand = \"x\"\ncall_timeout_secs = 0",
                "call_timeout_secs",
            ),
            (
                "name = \"a\"\ncommand = \"x\"\n[mcp.server.tools.t]\naction = \"sudo\"",
                "tools.t.action `sudo`",
            ),
            (
                "name = \"a\"\ncommand = \"x\"\n[mcp.server.tools.t]\npath_args = [\"a/b\"]",
                "path_args entry `a/b`",
            ),
        ] {
            let error = parse(&format!("[[mcp.server]]\n{text}"))
                .unwrap_err()
                .to_string();
            assert!(error.contains(needle), "{text}: {error}");
        }
        let twice = parse("[[mcp.server]]\nname = \"a\"\ncommand = \"x\"\n[[mcp.server]]\nname = \"a\"\ncommand = \"y\"")
            .unwrap_err()
            .to_string();
        assert!(twice.contains("configured twice"), "{twice}");
        let unknown = parse("[[mcp.server]]\nname = \"a\"\ncommand = \"x\"\ninherit_env = true")
            .unwrap_err()
            .to_string();
        assert!(unknown.contains("inherit_env"), "{unknown}");
    }

    #[test]
    fn the_sandbox_table_resolves_over_the_defaults() {
        let config = parse(
            r#"
            [[mcp.server]]
            name = "reader"
            command = "x"
            default_action = "read"
            [[mcp.server]]
            name = "writer"
            command = "x"
            [mcp.server.tools.put]
            action = "write"
            [[mcp.server]]
            name = "web"
            command = "x"
            default_action = "read"
            [mcp.server.sandbox]
            workspace = "none"
            read = ["/opt/models"]
            write = ["/var/cache/web"]
            network = true
            confined = false
            "#,
        )
        .unwrap();
        let [reader, writer, web] = config.servers.as_slice() else {
            panic!("three servers: {config:?}");
        };
        assert_eq!(reader.sandbox, SandboxConfig::default());
        assert_eq!(reader.workspace_access(), WorkspaceAccess::Read);
        assert_eq!(writer.workspace_access(), WorkspaceAccess::Write);
        assert_eq!(
            reader.sandbox_card(),
            None,
            "the default is not shown on cards"
        );
        assert_eq!(
            writer.sandbox_card(),
            None,
            "the default is not shown on cards"
        );
        assert_eq!(web.workspace_access(), WorkspaceAccess::None);
        assert!(!web.sandbox.confined);
        assert!(web.sandbox.network);
        assert_eq!(web.sandbox.read, [PathBuf::from("/opt/models")]);
        assert_eq!(web.sandbox.write, [PathBuf::from("/var/cache/web")]);
        let card = web.sandbox_card().unwrap();
        assert!(card.network && !card.confined);
        assert_eq!(card.workspace, "none");
    }

    #[test]
    fn bad_sandbox_tables_are_refused_with_the_server_and_the_key() {
        for (table, needle) in [
            ("workspace = \"all\"", "sandbox.workspace `all`"),
            (
                "read = [\"relative/dir\"]",
                "sandbox.read path `relative/dir` must be absolute",
            ),
            (
                "write = [\"/srv/pp-data/cache\"]",
                "sandbox.write path `/srv/pp-data/cache` reaches /srv/pp-data",
            ),
            (
                "read = [\"/srv/pp-data\"]",
                "sandbox.read path `/srv/pp-data` reaches",
            ),
            (
                "read = [\"/srv\"]",
                "sandbox.read path `/srv` reaches /srv/pp-data",
            ),
            ("network = \"yes\"", "network"),
            ("inherit_home = true", "inherit_home"),
        ] {
            let text = format!(
                "[[mcp.server]]\nname = \"a\"\ncommand = \"x\"\n[mcp.server.sandbox]\n{table}"
            );
            let error = format!("{:#}", parse(&text).unwrap_err());
            assert!(error.contains(needle), "{table}: {error}");
            assert!(
                error.contains("`a`") || !needle.starts_with("sandbox"),
                "{table}: {error}"
            );
        }
        let http = parse("[[mcp.server]]\nname = \"h\"\nurl = \"http://127.0.0.1:9/mcp\"\n[mcp.server.sandbox]\nnetwork = true")
            .unwrap_err()
            .to_string();
        assert!(http.contains("goes with `command`"), "{http}");
    }
}
