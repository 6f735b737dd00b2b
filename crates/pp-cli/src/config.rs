//! Configuration: `pocketpilot.toml` < environment < flags, resolved into settings.
//!
//! Stage one reads the user's config file (never a file inside a workspace: a downloaded
//! folder must not be able to point the agent at another model or widen anything) into
//! `FileConfig`, whose fields are all optional; unknown keys are an error naming the key
//! and the file. Stage two merges the environment and the flags over it and resolves
//! everything into [`Config`], which has no optional knobs left.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use pp_knowledge::{MemorySettings, SkillsSettings};
use pp_tasks::{TaskSettings, Workspace, Workspaces};
use serde::Deserialize;

use crate::{Exit, env};

/// The `[tasks]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileTasks {
    workers: Option<usize>,
    timeout_secs: Option<u64>,
    max_steps: Option<u32>,
    max_denials: Option<u32>,
    lease_secs: Option<u64>,
    /// Tokens per task (prompt + completion of all its model calls); none by default.
    max_tokens: Option<u64>,
}

/// The `[approvals]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileApprovals {
    /// Largest file whose content is hashed into an approval's fingerprint.
    hash_max_bytes: Option<u64>,
    /// Waiting approvals older than this many seconds are rejected with reason
    /// `expired`, as `scheduler`, by `serve` (default: never).
    expire_after_secs: Option<u64>,
}

/// The `[notify]` table: a command told when something waits for a person.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileNotify {
    /// The argv (run without a shell; the summary goes to its stdin as JSON).
    command: Option<Vec<String>>,
    /// How long one run may take before it is killed (default 10).
    timeout_secs: Option<u64>,
    /// Add one approval `link` to each `approval_waiting` summary (default false;
    /// single-user mode only): a notifier given links can forward a way to approve.
    links: Option<bool>,
}

/// The `[telegram]` table: approval cards with buttons in Telegram (docs/remote.md).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileTelegram {
    /// The environment variable holding the bot's token.
    token_env: Option<String>,
    /// The chats cards are sent to.
    chat_ids: Option<Vec<i64>>,
    /// Single-user mode: the Telegram user ids whose taps count.
    user_ids: Option<Vec<i64>>,
    /// Team mode: Telegram user id → team user.
    users: Option<std::collections::BTreeMap<String, String>>,
    /// The Bot API's address (default the official one).
    api_url: Option<String>,
    /// Whether cards carry the diff or new content (default false).
    show_diff: Option<bool>,
    /// Taps that may have waited longer are not applied (default 600).
    tap_max_age_secs: Option<u64>,
}

/// `[telegram]`, checked: `serve` starts the poller only when this is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TelegramConfig {
    /// The name of the variable holding the token (read by `serve` only).
    pub(crate) token_env: String,
    /// The Bot API's address.
    pub(crate) api_url: String,
    /// Chats, who may decide, `show_diff`, the tap age limit.
    pub(crate) settings: pp_remote::RemoteSettings,
}

/// The `[telegram]` table: a token variable, chats, and `user_ids` in single-user mode
/// or `users` in team mode (never both).
fn resolve_telegram(
    file: Option<&FileTelegram>,
    team: bool,
) -> anyhow::Result<Option<TelegramConfig>> {
    let Some(file) = file else {
        return Ok(None);
    };
    let usage = |message: String| -> anyhow::Error { Exit::usage(message).into() };
    let token_env = file
        .token_env
        .clone()
        .filter(|name| !name.trim().is_empty())
        .ok_or_else(|| {
            usage(
                "`[telegram] token_env` must name the environment variable holding the bot's \
                 token, e.g. token_env = \"PP_TELEGRAM_TOKEN\""
                    .into(),
            )
        })?;
    let chat_ids: Vec<String> = file
        .chat_ids
        .clone()
        .unwrap_or_default()
        .iter()
        .map(ToString::to_string)
        .collect();
    if chat_ids.is_empty() {
        return Err(usage(
            "`[telegram] chat_ids` must list at least one chat id (where cards are sent)".into(),
        ));
    }
    let deciders = match (team, &file.user_ids, &file.users) {
        (false, _, Some(_)) => {
            return Err(usage(
                "`[telegram] users` maps Telegram users to team users and needs team mode \
                 ([team] enabled = true); in single-user mode list `user_ids`"
                    .into(),
            ));
        }
        (true, Some(_), _) => {
            return Err(usage(
                "`[telegram] user_ids` is for single-user mode; in team mode map each Telegram \
                 user id to a team user with `users = {\"123456\" = \"ann\"}`"
                    .into(),
            ));
        }
        (false, ids, None) => {
            let ids: Vec<String> = ids
                .clone()
                .unwrap_or_default()
                .iter()
                .map(ToString::to_string)
                .collect();
            if ids.is_empty() {
                return Err(usage(
                    "`[telegram] user_ids` must list the Telegram user ids whose taps count".into(),
                ));
            }
            pp_remote::Deciders::Users(ids)
        }
        (true, None, users) => {
            let users = users.clone().unwrap_or_default();
            if users.is_empty() {
                return Err(usage(
                    "`[telegram] users` must map at least one Telegram user id to a team user"
                        .into(),
                ));
            }
            if let Some(bad) = users.keys().find(|id| id.parse::<i64>().is_err()) {
                return Err(usage(format!(
                    "`[telegram] users`: `{bad}` is not a Telegram user id (a number)"
                )));
            }
            pp_remote::Deciders::Team(users)
        }
    };
    let api_url = file
        .api_url
        .clone()
        .unwrap_or_else(|| pp_remote::telegram::DEFAULT_API_URL.to_owned());
    if !(api_url.starts_with("https://") || api_url.starts_with("http://")) {
        return Err(usage(format!(
            "`[telegram] api_url` must be an http:// or https:// address, not `{api_url}`"
        )));
    }
    let tap_max_age = match file.tap_max_age_secs {
        Some(0) => {
            return Err(usage(
                "`[telegram] tap_max_age_secs` must be at least 1".into(),
            ));
        }
        Some(seconds) => Duration::from_secs(seconds),
        None => pp_remote::DEFAULT_TAP_MAX_AGE,
    };
    Ok(Some(TelegramConfig {
        token_env,
        api_url,
        settings: pp_remote::RemoteSettings {
            chat_ids,
            deciders,
            show_diff: file.show_diff.unwrap_or(false),
            tap_max_age,
        },
    }))
}

/// The `[server]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileServer {
    port: Option<u16>,
    /// The address `serve` listens on (default `127.0.0.1`; `0.0.0.0` for every
    /// interface, so that a form service on another machine can post to a webhook).
    bind: Option<String>,
    /// Host names accepted besides the loopback names (a reverse proxy's name, this
    /// machine's LAN name or address): `name` (any port) or `name:port`.
    allowed_hosts: Option<Vec<String>>,
    /// Believe `X-Forwarded-Proto: https` from a reverse proxy (default false).
    trust_forwarded_proto: Option<bool>,
    /// The address people reach this server at (`https://pp.example.org`): the base of
    /// approval links (docs/remote.md). Its host must be in `allowed_hosts`.
    public_url: Option<String>,
    /// Most connections open at once (default 4096); one more gets 503.
    max_connections: Option<usize>,
    /// Seconds a connection has to send a request's headers (default 10).
    header_timeout_secs: Option<u64>,
    /// Seconds a request body may send nothing while it is read (default 30).
    body_idle_timeout_secs: Option<u64>,
}

/// How `serve` bounds its connections (`[server]`; docs/configuration.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConnectionLimits {
    /// `max_connections`: most connections open at once.
    pub(crate) max_connections: usize,
    /// `header_timeout_secs`: how long a request's headers may take.
    pub(crate) header_timeout: Duration,
    /// `body_idle_timeout_secs`: how long a request body may send nothing.
    pub(crate) body_idle_timeout: Duration,
}

impl ConnectionLimits {
    fn resolve(server: &FileServer) -> Result<Self, Exit> {
        let defaults = pp_server::ServerSettings::default();
        let at_least_one = |key: &str, value: Option<u64>| match value {
            Some(0) => Err(Exit::usage(format!("`[server] {key}` must be at least 1"))),
            value => Ok(value.map(Duration::from_secs)),
        };
        Ok(Self {
            max_connections: match server.max_connections {
                Some(0) => {
                    return Err(Exit::usage("`[server] max_connections` must be at least 1"));
                }
                value => value.unwrap_or(defaults.max_connections),
            },
            header_timeout: at_least_one("header_timeout_secs", server.header_timeout_secs)?
                .unwrap_or(defaults.header_read_timeout),
            body_idle_timeout: at_least_one(
                "body_idle_timeout_secs",
                server.body_idle_timeout_secs,
            )?
            .unwrap_or(defaults.body_idle_timeout),
        })
    }
}

/// The `[team]` table (docs/team.md).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileTeam {
    /// Team mode: team users with their own tokens and roles (default false).
    enabled: Option<bool>,
    /// The team's shared folder for `memory.md` and installed skills, the same files on
    /// every machine of the team (default: the data directory).
    shared_dir: Option<String>,
    /// The name of the environment variable holding the team key (64 hex characters)
    /// webhook channel secrets are sealed with on every `serve` of the team.
    key_env: Option<String>,
    /// A file (mode 0600) holding the team key, instead of `key_env`.
    key_file: Option<String>,
}

/// The `[store]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileStore {
    /// Prune the history of tasks finished more than this many days ago (default: keep
    /// everything).
    retain_days: Option<u32>,
    /// The database: `sqlite://PATH` or `postgres://…` (default: `pocketpilot.db` in the
    /// data directory).
    url: Option<String>,
}

/// The `[revert]` table: snapshots of what approved writes replace.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileRevert {
    /// Largest content kept for a revert (default 64 MiB); larger ones cannot be undone.
    max_bytes: Option<u64>,
    /// How many days snapshots are kept (default 30).
    retain_days: Option<u32>,
}

impl FileRevert {
    /// The `[revert]` table over the defaults; `retain_days` must be at least 1.
    fn resolve(file: Option<&Self>) -> anyhow::Result<pp_tasks::RevertSettings> {
        let defaults = pp_tasks::RevertSettings::default();
        let Some(file) = file else {
            return Ok(defaults);
        };
        let retain = match file.retain_days {
            Some(0) => return Err(Exit::usage("`[revert] retain_days` must be at least 1").into()),
            Some(days) => retain_window(days),
            None => defaults.retain,
        };
        Ok(pp_tasks::RevertSettings {
            max_bytes: file.max_bytes.unwrap_or(defaults.max_bytes),
            retain,
        })
    }
}

/// The `[remote]` table: what a link or a chat button may approve (docs/remote.md).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileRemote {
    /// Whole capabilities (`file:write`), not suffixes (default: `file:write`,
    /// `file:create`, `file:update`).
    approve_capabilities: Option<Vec<String>>,
}

impl FileRemote {
    /// The `[remote]` table over the defaults; every entry must be a whole capability
    /// (`family:action`, no spaces).
    fn resolve(file: Option<&Self>) -> anyhow::Result<pp_tasks::RemoteSettings> {
        let Some(capabilities) = file.and_then(|file| file.approve_capabilities.clone()) else {
            return Ok(pp_tasks::RemoteSettings::default());
        };
        for capability in &capabilities {
            let whole = capability
                .split(':')
                .all(|part| !part.is_empty() && !part.contains(char::is_whitespace));
            if !whole || !capability.contains(':') {
                return Err(Exit::usage(format!(
                    "`[remote] approve_capabilities`: `{capability}` is not a whole \
                     capability; write one such as \"file:write\" (suffixes and wildcards \
                     are not accepted)"
                ))
                .into());
            }
        }
        Ok(pp_tasks::RemoteSettings {
            approve_capabilities: capabilities,
        })
    }
}

/// The `[skills]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileSkills {
    /// Read-only folders of skills, after the data directory's `skills/`.
    dirs: Option<Vec<String>>,
    /// Largest `SKILL.md` body offered to the model (default 64 KiB).
    max_body_bytes: Option<u64>,
}

/// The `[memory]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileMemory {
    /// The most bytes of `memory.md` put into the system prompt (default 8 KiB).
    max_prompt_bytes: Option<usize>,
}

/// The `[docs]` table: the document tools' caps and the parser child's limits.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileDocs {
    /// The largest document read, in MiB (default 64).
    max_input_mb: Option<u64>,
    /// The most characters of text a call returns (default 100,000).
    max_output_chars: Option<usize>,
    /// CPU seconds one parse may use (default 20).
    parser_cpu_secs: Option<u64>,
    /// Address space of the parser child, in MiB (default 2048).
    parser_memory_mb: Option<u64>,
    /// Wall-clock seconds before the parser child is killed (default 30).
    parser_wall_secs: Option<u64>,
}

/// The resolved `[docs]` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DocsConfig {
    /// The largest document read, in bytes.
    pub(crate) max_input_bytes: u64,
    /// The most characters of text a call returns.
    pub(crate) max_output_chars: usize,
    /// The parser child's limits.
    pub(crate) parser: pp_docs::ParserLimits,
}

impl Default for DocsConfig {
    fn default() -> Self {
        let settings =
            pp_tools::docs::DocsSettings::new(pp_docs::Parser::new(PathBuf::new(), Vec::new()));
        Self {
            max_input_bytes: settings.max_input_bytes,
            max_output_chars: settings.max_output_chars,
            parser: pp_docs::ParserLimits::default(),
        }
    }
}

impl DocsConfig {
    /// The `[docs]` table over the defaults; every value is at least 1.
    fn resolve(file: Option<&FileDocs>) -> Self {
        let defaults = Self::default();
        let Some(file) = file else {
            return defaults;
        };
        let mib = |value: u64| value.max(1).saturating_mul(1 << 20);
        Self {
            max_input_bytes: file.max_input_mb.map_or(defaults.max_input_bytes, mib),
            max_output_chars: file
                .max_output_chars
                .map_or(defaults.max_output_chars, |chars| chars.max(1)),
            parser: pp_docs::ParserLimits {
                cpu_secs: file
                    .parser_cpu_secs
                    .map_or(defaults.parser.cpu_secs, |secs| secs.max(1)),
                memory_bytes: file
                    .parser_memory_mb
                    .map_or(defaults.parser.memory_bytes, mib),
                wall: file.parser_wall_secs.map_or(defaults.parser.wall, |secs| {
                    Duration::from_secs(secs.max(1))
                }),
                ..defaults.parser
            },
        }
    }
}

/// One `[[workspace]]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileWorkspace {
    name: String,
    path: String,
    #[serde(default)]
    default: bool,
}

/// The `[model]` table, as written (see `docs/configuration.md`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileModel {
    pub(crate) provider: Option<String>,
    pub(crate) base_url: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) api_key_env: Option<String>,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) temperature: Option<f32>,
    pub(crate) context_window: Option<u32>,
    pub(crate) timeout_secs: Option<u64>,
    pub(crate) max_retries: Option<u32>,
    pub(crate) stream: Option<bool>,
    /// First retry delay in milliseconds (doubles per retry, with jitter).
    pub(crate) retry_backoff_ms: Option<u64>,
    /// `[model.prices."<model>"]`: token prices for cost estimates (see `prices.rs`).
    pub(crate) prices: Option<std::collections::BTreeMap<String, crate::prices::FilePrice>>,
}

/// The `[discovery]` table: where zero-config discovery looks for local servers.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileDiscovery {
    /// Look for provider keys and local servers at all (default true).
    pub(crate) enabled: Option<bool>,
    /// Loopback ports to probe, in order (default 11434 Ollama, 8080 llama.cpp, 1234 LM Studio).
    pub(crate) local_ports: Option<Vec<u16>>,
    /// Per-probe timeout in milliseconds (default 500).
    pub(crate) probe_timeout_ms: Option<u64>,
}

/// `pocketpilot.toml` as written: every field optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileConfig {
    #[serde(default)]
    pub(crate) model: Option<FileModel>,
    #[serde(default)]
    pub(crate) discovery: Option<FileDiscovery>,
    #[serde(default)]
    tasks: Option<FileTasks>,
    #[serde(default)]
    approvals: Option<FileApprovals>,
    #[serde(default)]
    notify: Option<FileNotify>,
    #[serde(default)]
    telegram: Option<FileTelegram>,
    #[serde(default)]
    server: Option<FileServer>,
    #[serde(default)]
    store: Option<FileStore>,
    #[serde(default)]
    team: Option<FileTeam>,
    #[serde(default)]
    revert: Option<FileRevert>,
    #[serde(default)]
    remote: Option<FileRemote>,
    #[serde(default)]
    skills: Option<FileSkills>,
    #[serde(default)]
    memory: Option<FileMemory>,
    #[serde(default)]
    docs: Option<FileDocs>,
    #[serde(default)]
    shell: Option<crate::shell::FileShell>,
    #[serde(default)]
    mcp: Option<crate::mcp_config::FileMcp>,
    #[serde(default)]
    workspace: Vec<FileWorkspace>,
}

/// Flags that override the file and the environment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Flags {
    /// `--home DIR`.
    pub(crate) home: Option<PathBuf>,
    /// `--config FILE`.
    pub(crate) config: Option<PathBuf>,
    /// `--workspace DIR`: a one-off default workspace.
    pub(crate) workspace: Option<PathBuf>,
    /// `--port N`.
    pub(crate) port: Option<u16>,
    /// The command only acts on stored tasks (listing, approving, retrying), which carry
    /// their own workspace: the current directory is not taken as a default workspace,
    /// so running it from a folder that holds the data directory is fine.
    pub(crate) stored_tasks_only: bool,
    /// Leave the config file out (`doctor` runs its other checks on the defaults when the
    /// file cannot be used).
    pub(crate) without_config_file: bool,
}

/// The resolved configuration.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// The data directory (database, token), created with private permissions.
    pub(crate) home: PathBuf,
    /// The config file that was read, if any.
    pub(crate) file: Option<PathBuf>,
    /// Where tasks may run.
    pub(crate) workspaces: Workspaces,
    /// `[tasks]`.
    pub(crate) tasks: TaskSettings,
    /// The port `serve` listens on (0 picks a free one).
    pub(crate) port: u16,
    /// `[server] bind`: the address `serve` listens on (default `127.0.0.1`).
    pub(crate) bind: std::net::IpAddr,
    /// `[server] allowed_hosts`.
    pub(crate) allowed_hosts: Vec<String>,
    /// `[server] trust_forwarded_proto`.
    pub(crate) trust_forwarded_proto: bool,
    /// `[server] public_url`, without a trailing slash: the base of approval links.
    pub(crate) public_url: Option<String>,
    /// `[server] max_connections`, `header_timeout_secs`, `body_idle_timeout_secs`.
    pub(crate) connections: ConnectionLimits,
    /// `[team] enabled`: team users and roles (docs/team.md); off: single-user mode.
    pub(crate) team: bool,
    /// `[team] shared_dir`: the folder the team's memory and installed skills lived in
    /// before they moved into the database; read once, for the import into it, then
    /// refused (`app.rs`). `None`: not configured.
    pub(crate) team_dir: Option<PathBuf>,
    /// `[team] key_env` or `key_file`: where the team key is (team mode); `None`: not
    /// configured (`serve` and `channels` then refuse in team mode).
    pub(crate) team_key: Option<TeamKeySource>,
    /// The `[model]` table, resolved by `models.rs`.
    pub(crate) model: Option<FileModel>,
    /// The `[discovery]` table.
    pub(crate) discovery: FileDiscovery,
    /// `[store] retain_days`: how long the history of finished tasks is kept (`None`:
    /// forever).
    pub(crate) retain: Option<Duration>,
    /// `[store] url`: the database (default: `pocketpilot.db` in the data directory).
    pub(crate) store_url: pp_store::StoreUrl,
    /// `[skills]`: the data directory's `skills/` plus the read-only `dirs`.
    pub(crate) skills: SkillsSettings,
    /// `[memory]`: `memory.md` in the data directory and its prompt cap.
    pub(crate) memory: MemorySettings,
    /// `[docs]`: the document tools' caps and the parser child's limits.
    pub(crate) docs: DocsConfig,
    /// `[shell]`: `run_command`'s limits and whether it may run unconfined.
    pub(crate) shell: crate::shell::ShellConfig,
    /// `[mcp]`: the MCP servers and `mcp serve`'s approval wait.
    pub(crate) mcp: crate::mcp_config::McpConfig,
    /// `[notify] command`: run when an approval starts waiting and when an unattended
    /// task ends (by `serve`); `None` when not configured.
    pub(crate) notify: Option<pp_notify::Notifier>,
    /// `[approvals] expire_after_secs`: `serve` rejects approvals that waited longer
    /// (`None`: never).
    pub(crate) approvals_expire_after: Option<Duration>,
    /// `[telegram]`: approval cards in Telegram (`serve` polls only when set).
    pub(crate) telegram: Option<TelegramConfig>,
}

/// This machine's name for the worker registry (`localhost` when it cannot be read).
#[expect(
    clippy::disallowed_methods,
    reason = "reads the kernel's host name, not a model-supplied path"
)]
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// The default port of `pocketpilot serve`.
pub(crate) const DEFAULT_PORT: u16 = 7878;

impl Config {
    /// Loads the file, merges environment and flags, resolves.
    pub(crate) fn load(flags: &Flags) -> anyhow::Result<Self> {
        let (file_config, file) = read_file(flags)?;
        let home = flags
            .home
            .clone()
            .or_else(env::data_home_override)
            .or_else(env::default_data_dir)
            .ok_or_else(|| {
                Exit::usage("cannot find a data directory: set POCKETPILOT_HOME or pass --home")
            })?;
        let home = absolute_path(&home)?;
        let tasks_file = file_config.tasks.clone().unwrap_or_default();
        let defaults = TaskSettings::default();
        let team = file_config
            .team
            .as_ref()
            .and_then(|team| team.enabled)
            .unwrap_or(false);
        let mut tasks = TaskSettings {
            workers: tasks_file.workers.unwrap_or(defaults.workers).max(1),
            timeout: tasks_file
                .timeout_secs
                .map_or(defaults.timeout, Duration::from_secs),
            max_steps: tasks_file.max_steps.unwrap_or(defaults.max_steps),
            max_denials: tasks_file.max_denials.unwrap_or(defaults.max_denials),
            poll_interval: defaults.poll_interval,
            lease: tasks_file
                .lease_secs
                .map_or(defaults.lease, |secs| Duration::from_secs(secs.max(1))),
            context_window: file_config
                .model
                .as_ref()
                .and_then(|model| model.context_window)
                .map(u64::from),
            hash_max_bytes: file_config
                .approvals
                .as_ref()
                .and_then(|approvals| approvals.hash_max_bytes)
                .unwrap_or(defaults.hash_max_bytes),
            revert: FileRevert::resolve(file_config.revert.as_ref())?,
            max_tokens: match tasks_file.max_tokens {
                Some(0) => {
                    return Err(Exit::usage("`[tasks] max_tokens` must be at least 1").into());
                }
                tokens => tokens,
            },
            prices: crate::prices::resolve(
                file_config
                    .model
                    .as_ref()
                    .and_then(|model| model.prices.as_ref()),
            )?,
            // In team mode this process is one worker among several sharing the database.
            team: team.then(|| pp_tasks::TeamWorker { host: host_name() }),
            remote: FileRemote::resolve(file_config.remote.as_ref())?,
            command_snapshot: pp_tasks::CommandSnapshot::default(),
        };
        // `[shell]`'s snapshot keys and `[revert] max_bytes` go to both the card's
        // measure (the shell provider) and the snapshot (the task service).
        let mut shell = crate::shell::ShellConfig::resolve(file_config.shell.as_ref())?;
        shell.revert_max_bytes = tasks.revert.max_bytes;
        tasks.command_snapshot = pp_tasks::CommandSnapshot {
            max_bytes: shell.snapshot_max_bytes,
            ignore: shell.snapshot_ignore.clone(),
        };
        let port = flags
            .port
            .or(file_config.server.as_ref().and_then(|server| server.port))
            .unwrap_or(DEFAULT_PORT);
        let server = file_config.server.clone().unwrap_or_default();
        let bind = match server.bind.as_deref() {
            None => std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            Some(text) => text.trim().parse().map_err(|_| {
                Exit::usage(format!(
                    "`[server] bind` must be an IP address such as 127.0.0.1 or 0.0.0.0, not \
                     `{text}`"
                ))
            })?,
        };
        let connections = ConnectionLimits::resolve(&server)?;
        let allowed_hosts = server.allowed_hosts.unwrap_or_default();
        if let Some(bad) = allowed_hosts
            .iter()
            .find(|host| host.trim().is_empty() || host.contains(['/', '@', ' ', ',']))
        {
            return Err(Exit::usage(format!(
                "`[server] allowed_hosts` entries are host names or addresses with an optional \
                 port, not `{bad}`"
            ))
            .into());
        }
        let trust_forwarded_proto = server.trust_forwarded_proto.unwrap_or(false);
        let public_url = server
            .public_url
            .as_deref()
            .map(|url| check_public_url(url, &allowed_hosts))
            .transpose()?;
        let retain = match file_config
            .store
            .as_ref()
            .and_then(|store| store.retain_days)
        {
            Some(0) => return Err(Exit::usage("`[store] retain_days` must be at least 1").into()),
            days => days.map(retain_window),
        };
        let store_url = match file_config
            .store
            .as_ref()
            .and_then(|store| store.url.as_deref())
        {
            // A relative SQLite path is relative to the config file's folder, so every
            // command finds the same database from any directory.
            Some(url) => match pp_store::StoreUrl::parse(url)
                .map_err(|error| Exit::usage(format!("`[store] url`: {error}")))?
            {
                pp_store::StoreUrl::Sqlite(path) if path.is_relative() => {
                    let base = file.as_deref().and_then(Path::parent);
                    pp_store::StoreUrl::Sqlite(match base {
                        Some(base) => base.join(path),
                        None => absolute_path(&path)?,
                    })
                }
                url => url,
            },
            None => pp_store::StoreUrl::Sqlite(home.join("pocketpilot.db")),
        };
        let mut notify = resolve_notify(file_config.notify.as_ref())?;
        if file_config
            .notify
            .as_ref()
            .is_some_and(|notify| notify.links == Some(true))
        {
            if team {
                return Err(Exit::usage(
                    "`[notify] links = true` is for single-user mode: in team mode a link \
                     acts as the user who made it, and a notifier is no user (docs/remote.md)",
                )
                .into());
            }
            if let Some(notifier) = notify.as_mut() {
                let base = public_url.clone().unwrap_or_else(|| local_base(port));
                notifier.links = Some(base);
            }
        }
        let telegram = resolve_telegram(file_config.telegram.as_ref(), team)?;
        let approvals_expire_after = match file_config
            .approvals
            .as_ref()
            .and_then(|approvals| approvals.expire_after_secs)
        {
            Some(0) => {
                return Err(
                    Exit::usage("`[approvals] expire_after_secs` must be at least 1").into(),
                );
            }
            seconds => seconds.map(Duration::from_secs),
        };
        let workspaces = resolve_workspaces(
            &file_config.workspace,
            flags.workspace.as_deref(),
            !flags.stored_tasks_only,
        )?;
        let config_dir = file.as_deref().and_then(Path::parent);
        refuse_private_inside_workspaces(&workspaces, &home, config_dir)?;
        let team_dir = resolve_team_dir(file_config.team.as_ref())?;
        let team_key = resolve_team_key(file_config.team.as_ref(), config_dir)?;
        if let Some(dir) = &team_dir {
            refuse_private_inside_workspaces(&workspaces, dir, None)?;
        }
        // In team mode memory and installed skills are the team's, in the database; these
        // are the data directory's, which `app.rs` replaces with the team's then.
        let skills = resolve_skills(file_config.skills.as_ref(), &home)?;
        refuse_skills_inside_workspaces(&workspaces, &skills.dirs)?;
        let memory = MemorySettings {
            max_prompt_bytes: file_config
                .memory
                .as_ref()
                .and_then(|memory| memory.max_prompt_bytes)
                .unwrap_or(MemorySettings::DEFAULT_MAX_PROMPT_BYTES),
            ..MemorySettings::new(&home)
        };
        // No MCP server's sandbox may reach PocketPilot's own data.
        let private: Vec<&Path> = [Some(home.as_path()), team_dir.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        let mcp = crate::mcp_config::McpConfig::resolve(file_config.mcp.as_ref(), &private)?;
        Ok(Self {
            home,
            file,
            workspaces,
            tasks,
            port,
            bind,
            allowed_hosts,
            trust_forwarded_proto,
            public_url,
            connections,
            team,
            team_dir,
            team_key,
            model: file_config.model,
            discovery: file_config.discovery.unwrap_or_default(),
            retain,
            store_url,
            skills,
            memory,
            docs: DocsConfig::resolve(file_config.docs.as_ref()),
            shell,
            mcp,
            notify,
            approvals_expire_after,
            telegram,
        })
    }

    /// The API token file.
    pub(crate) fn token_file(&self) -> PathBuf {
        self.home.join("token")
    }

    /// The key file webhook channel secrets are sealed with (outside the database).
    pub(crate) fn channel_key_file(&self) -> PathBuf {
        self.home.join("channels.key")
    }

    /// The base URL of this machine's `serve` as a local client reaches it.
    pub(crate) fn local_base_url(&self) -> String {
        let host = if self.bind.is_unspecified() || self.bind.is_loopback() {
            "127.0.0.1".to_owned()
        } else if self.bind.is_ipv6() {
            format!("[{}]", self.bind)
        } else {
            self.bind.to_string()
        };
        format!("http://{host}:{}", self.port)
    }

    /// Refuses to resume a stored task whose workspace contains the data directory, the
    /// config file's directory or a `[skills] dirs` folder (moved there since the task
    /// was created).
    pub(crate) fn refuse_private_inside(&self, workspace: Workspace) -> anyhow::Result<()> {
        let workspaces = Workspaces {
            list: vec![workspace],
            default: None,
        };
        let config_dir = self.file.as_deref().and_then(Path::parent);
        refuse_private_inside_workspaces(&workspaces, &self.home, config_dir)?;
        refuse_skills_inside_workspaces(&workspaces, &self.skills.dirs)
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "reads the operator's own config file, never one inside a workspace"
)]
fn read_file(flags: &Flags) -> anyhow::Result<(FileConfig, Option<PathBuf>)> {
    if flags.without_config_file {
        return Ok((FileConfig::default(), None));
    }
    let explicit = flags.config.clone().or_else(env::config_override);
    let path = match explicit {
        Some(path) => {
            let path = absolute_path(&path)?;
            if !path.is_file() {
                return Err(
                    Exit::usage(format!("config file {} does not exist", path.display())).into(),
                );
            }
            path
        }
        None => match env::default_config_file() {
            Some(path) if path.is_file() => path,
            _ => return Ok((FileConfig::default(), None)),
        },
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read config file {}", path.display()))?;
    let config = parse_file(&path, &text)?;
    Ok((config, Some(path)))
}

/// Parses the text of the config file at `path`; the error names the file (and, for an
/// unknown key, the key).
pub(crate) fn parse_file(path: &Path, text: &str) -> Result<FileConfig, Exit> {
    parse(text)
        .map_err(|error| Exit::usage(format!("invalid config file {}: {error}", path.display())))
}

/// Parses a config file's text.
pub(crate) fn parse(text: &str) -> Result<FileConfig, String> {
    toml::from_str(text).map_err(|error| error.to_string().trim().replace('\n', " "))
}

impl Config {
    /// The base of approval links, and whether it is `[server] public_url` (`false`:
    /// this machine's loopback address, which works only here).
    pub(crate) fn link_base(&self) -> (String, bool) {
        match &self.public_url {
            Some(url) => (url.clone(), true),
            None => (local_base(self.port), false),
        }
    }

    /// The `[notify]` notifier of a `serve` listening on `port`. With `links = true` and
    /// no `[server] public_url` its links name this machine's loopback address and the
    /// port the server got: under `--port 0` the configured port is 0.
    pub(crate) fn notify_on(&self, port: u16) -> Option<pp_notify::Notifier> {
        let mut notifier = self.notify.clone()?;
        if notifier.links.is_some() && self.public_url.is_none() {
            notifier.links = Some(local_base(port));
        }
        Some(notifier)
    }
}

/// `http://127.0.0.1:{port}`: where `serve` answers on this machine.
fn local_base(port: u16) -> String {
    format!("http://127.0.0.1:{port}")
}

/// `[server] public_url`: an `http` or `https` URL with a host (and no user, query or
/// fragment) that `allowed_hosts` lists, or a loopback name; returned without a
/// trailing slash.
fn check_public_url(url: &str, allowed_hosts: &[String]) -> Result<String, Exit> {
    let bad = |why: &str| {
        Exit::usage(format!(
            "`[server] public_url` {why}: `{url}` (docs/remote.md)"
        ))
    };
    let trimmed = url.trim().trim_end_matches('/');
    let rest = trimmed
        .strip_prefix("https://")
        .or_else(|| trimmed.strip_prefix("http://"))
        .ok_or_else(|| bad("must start with https:// or http://"))?;
    if rest.contains(['?', '#', '@', ' ', '\\']) {
        return Err(bad("must have no user, query or fragment"));
    }
    let host = rest.split('/').next().unwrap_or_default();
    if host.is_empty() {
        return Err(bad("must name a host"));
    }
    if !pp_server::host_allowed(host, allowed_hosts) {
        return Err(bad(&format!(
            "names the host `{host}`, which `[server] allowed_hosts` does not list (the \
             server would refuse the link's requests); add it there"
        )));
    }
    Ok(trimmed.to_owned())
}

/// The `[notify]` table: an argv whose first element names a program, and a timeout of
/// at least one second.
fn resolve_notify(file: Option<&FileNotify>) -> anyhow::Result<Option<pp_notify::Notifier>> {
    let Some(file) = file else {
        return Ok(None);
    };
    let Some(command) = file.command.clone() else {
        return Ok(None);
    };
    let Some(mut notifier) = pp_notify::Notifier::new(command) else {
        return Err(Exit::usage(
            "`[notify] command` must be a list whose first element names a program, \
             e.g. [\"notify-send\", \"PocketPilot\"]",
        )
        .into());
    };
    match file.timeout_secs {
        Some(0) => return Err(Exit::usage("`[notify] timeout_secs` must be at least 1").into()),
        Some(seconds) => notifier.timeout = Duration::from_secs(seconds),
        None => {}
    }
    Ok(Some(notifier))
}

/// The configured workspaces plus the one-off `--workspace` (or, when nothing is
/// configured and `current_dir_default` holds, the current directory) as the default.
fn resolve_workspaces(
    configured: &[FileWorkspace],
    flag: Option<&Path>,
    current_dir_default: bool,
) -> anyhow::Result<Workspaces> {
    let mut workspaces = Workspaces::default();
    for entry in configured {
        if workspaces.list.iter().any(|w| w.name == entry.name) {
            return Err(
                Exit::usage(format!("workspace `{}` is configured twice", entry.name)).into(),
            );
        }
        workspaces.list.push(Workspace {
            name: entry.name.clone(),
            path: absolute_path(Path::new(&entry.path))?,
        });
        if entry.default {
            if workspaces.default.is_some() {
                return Err(Exit::usage("more than one workspace is marked default").into());
            }
            workspaces.default = Some(entry.name.clone());
        }
    }
    let one_off = match flag {
        Some(path) => Some(absolute_path(path)?),
        None if workspaces.list.is_empty() && current_dir_default => {
            Some(std::env::current_dir().context("cannot read the current directory")?)
        }
        None => None,
    };
    if let Some(path) = one_off {
        if !path.is_dir() {
            return Err(
                Exit::usage(format!("workspace {} is not a directory", path.display())).into(),
            );
        }
        let mut name = path.file_name().map_or_else(
            || "workspace".to_owned(),
            |n| n.to_string_lossy().into_owned(),
        );
        if workspaces.list.iter().any(|w| w.name == name) {
            name = format!("{name}-cli");
        }
        workspaces.list.push(Workspace {
            name: name.clone(),
            path,
        });
        workspaces.default = Some(name);
    } else if workspaces.default.is_none() {
        workspaces.default = workspaces.list.first().map(|w| w.name.clone());
    }
    Ok(workspaces)
}

/// Refuses a workspace that contains PocketPilot's own data directory (the API token,
/// the database) or the directory of the config file: reads need no approval, so the
/// model could read the token, and one approved write could rewrite the configuration.
fn refuse_private_inside_workspaces(
    workspaces: &Workspaces,
    home: &Path,
    config_dir: Option<&Path>,
) -> anyhow::Result<()> {
    let private = [
        Some((home, "data directory (API token, database)")),
        config_dir.map(|dir| (dir, "config directory")),
    ];
    for workspace in &workspaces.list {
        let root = real_path(&workspace.path);
        for (path, what) in private.iter().flatten() {
            if real_path(path).starts_with(&root) {
                return Err(Exit::usage(format!(
                    "workspace `{}` ({}) contains PocketPilot's {what} {}: the agent could \
                     read or change it. Choose a narrower folder, or move the data directory \
                     with --home / POCKETPILOT_HOME",
                    workspace.name,
                    workspace.path.display(),
                    path.display()
                ))
                .into());
            }
        }
    }
    Ok(())
}

/// `[team] shared_dir` resolved (absolute); it needs `[team] enabled = true`.
fn resolve_team_dir(team: Option<&FileTeam>) -> anyhow::Result<Option<PathBuf>> {
    let Some(team) = team else {
        return Ok(None);
    };
    let Some(dir) = team.shared_dir.as_deref() else {
        return Ok(None);
    };
    if !team.enabled.unwrap_or(false) {
        return Err(Exit::usage("`[team] shared_dir` needs `[team] enabled = true`").into());
    }
    if dir.trim().is_empty() {
        return Err(Exit::usage("`[team] shared_dir` must name a folder").into());
    }
    Ok(Some(absolute_path(Path::new(dir))?))
}

/// Where the team key is: `[team] key_env` or `[team] key_file`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TeamKeySource {
    /// The environment variable of this name.
    Env(String),
    /// This file (absolute; mode 0600).
    File(PathBuf),
}

/// `[team] key_env` / `key_file` resolved (a relative file is relative to the config
/// file's folder); they need `[team] enabled = true`, and only one of them may be set.
fn resolve_team_key(
    team: Option<&FileTeam>,
    config_dir: Option<&Path>,
) -> anyhow::Result<Option<TeamKeySource>> {
    let Some(team) = team else {
        return Ok(None);
    };
    let source = match (team.key_env.as_deref(), team.key_file.as_deref()) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => {
            return Err(Exit::usage(
                "`[team] key_env` and `[team] key_file` are two ways to give the same key: \
                 set one of them",
            )
            .into());
        }
        (Some(name), None) => {
            let name = name.trim();
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(Exit::usage(
                    "`[team] key_env` is the name of an environment variable, such as \
                     POCKETPILOT_TEAM_KEY",
                )
                .into());
            }
            TeamKeySource::Env(name.to_owned())
        }
        (None, Some(file)) => {
            if file.trim().is_empty() {
                return Err(Exit::usage("`[team] key_file` must name a file").into());
            }
            let path = Path::new(file);
            TeamKeySource::File(match config_dir {
                Some(dir) if path.is_relative() => dir.join(path),
                _ => absolute_path(path)?,
            })
        }
    };
    if !team.enabled.unwrap_or(false) {
        return Err(Exit::usage(
            "`[team] key_env` and `[team] key_file` need `[team] enabled = true` (outside team \
             mode channel secrets are sealed with `channels.key` in the data directory)",
        )
        .into());
    }
    Ok(Some(source))
}

/// `[skills]` resolved: `skills/` in the data directory, the `dirs` made absolute.
fn resolve_skills(file: Option<&FileSkills>, home: &Path) -> anyhow::Result<SkillsSettings> {
    let mut settings = SkillsSettings::new(home.join("skills"));
    if let Some(file) = file {
        for dir in file.dirs.iter().flatten() {
            settings.dirs.push(absolute_path(Path::new(dir))?);
        }
        if let Some(max) = file.max_body_bytes {
            settings.max_body_bytes = max;
        }
    }
    Ok(settings)
}

/// Refuses a `[skills] dirs` folder inside a workspace: the model could write a skill
/// there (with approval) and have it offered, as instructions, in the next run.
fn refuse_skills_inside_workspaces(
    workspaces: &Workspaces,
    dirs: &[PathBuf],
) -> anyhow::Result<()> {
    for workspace in &workspaces.list {
        let root = real_path(&workspace.path);
        for dir in dirs {
            if real_path(dir).starts_with(&root) {
                return Err(Exit::usage(format!(
                    "skills folder {} (`[skills] dirs`) is inside workspace `{}` ({}): nothing \
                     in a workspace is loaded as a skill. Choose a folder outside every workspace",
                    dir.display(),
                    workspace.name,
                    workspace.path.display()
                ))
                .into());
            }
        }
    }
    Ok(())
}

/// The canonical form of `path`, or of its nearest existing ancestor joined with the
/// rest, so a data directory that does not exist yet is compared correctly.
#[expect(
    clippy::disallowed_methods,
    reason = "canonicalises the operator's own configured paths to compare them, opens nothing"
)]
pub(crate) fn real_path(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut current = path.to_path_buf();
    loop {
        if let Ok(real) = std::fs::canonicalize(&current) {
            return missing.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        match (current.file_name().map(ToOwned::to_owned), current.parent()) {
            (Some(name), Some(parent)) => {
                missing.push(name);
                current = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Expands a leading `~` with `HOME` and makes the path absolute (relative to the
/// current directory), so a stored task resumes in the same place from any directory.
pub(crate) fn absolute_path(path: &Path) -> anyhow::Result<PathBuf> {
    let expanded = match path.strip_prefix("~") {
        Ok(rest) => {
            let home =
                env::home().ok_or_else(|| Exit::usage("cannot expand `~`: HOME is not set"))?;
            PathBuf::from(home).join(rest)
        }
        Err(_) => path.to_path_buf(),
    };
    std::path::absolute(&expanded).with_context(|| format!("cannot resolve {}", expanded.display()))
}

/// `retain_days` as a duration.
pub(crate) fn retain_window(days: u32) -> Duration {
    Duration::from_secs(u64::from(days) * 24 * 60 * 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn telegram(text: &str, team: bool) -> Result<Option<TelegramConfig>, String> {
        let file = parse(text)?;
        resolve_telegram(file.telegram.as_ref(), team).map_err(|error| error.to_string())
    }

    #[test]
    fn telegram_is_checked_for_each_mode() {
        assert_eq!(telegram("", false), Ok(None));
        let single = telegram(
            "[telegram]\ntoken_env = \"TG\"\nchat_ids = [-100]\nuser_ids = [7, 8]\n",
            false,
        )
        .unwrap()
        .unwrap();
        assert_eq!(single.token_env, "TG");
        assert_eq!(single.api_url, "https://api.telegram.org");
        assert_eq!(single.settings.chat_ids, ["-100"]);
        assert_eq!(
            single.settings.deciders,
            pp_remote::Deciders::Users(vec!["7".into(), "8".into()])
        );
        assert!(!single.settings.show_diff);
        assert_eq!(single.settings.tap_max_age, pp_remote::DEFAULT_TAP_MAX_AGE);
        let team = telegram(
            "[telegram]\ntoken_env = \"TG\"\nchat_ids = [1]\nusers = { \"7\" = \"ann\" }\n\
             show_diff = true\napi_url = \"http://127.0.0.1:9\"\n",
            true,
        )
        .unwrap()
        .unwrap();
        assert!(team.settings.show_diff);
        assert_eq!(team.api_url, "http://127.0.0.1:9");
        assert!(
            matches!(team.settings.deciders, pp_remote::Deciders::Team(users) if users["7"] == "ann")
        );
        for (text, team, wanted) in [
            (
                "[telegram]\nchat_ids = [1]\nuser_ids = [7]\n",
                false,
                "token_env",
            ),
            (
                "[telegram]\ntoken_env = \"TG\"\nuser_ids = [7]\n",
                false,
                "chat_ids",
            ),
            (
                "[telegram]\ntoken_env = \"TG\"\nchat_ids = [1]\n",
                false,
                "user_ids",
            ),
            (
                "[telegram]\ntoken_env = \"TG\"\nchat_ids = [1]\nusers = { \"7\" = \"ann\" }\n",
                false,
                "needs team mode",
            ),
            (
                "[telegram]\ntoken_env = \"TG\"\nchat_ids = [1]\nuser_ids = [7]\n",
                true,
                "single-user mode",
            ),
            (
                "[telegram]\ntoken_env = \"TG\"\nchat_ids = [1]\n",
                true,
                "`[telegram] users`",
            ),
            (
                "[telegram]\ntoken_env = \"TG\"\nchat_ids = [1]\nusers = { \"ann\" = \"ann\" }\n",
                true,
                "not a Telegram user id",
            ),
            (
                "[telegram]\ntoken_env = \"TG\"\nchat_ids = [1]\nuser_ids = [7]\napi_url = \"ftp://x\"\n",
                false,
                "api_url",
            ),
            (
                "[telegram]\ntoken_env = \"TG\"\nchat_ids = [1]\nuser_ids = [7]\ntap_max_age_secs = 0\n",
                false,
                "tap_max_age_secs",
            ),
        ] {
            let error = telegram(text, team).unwrap_err();
            assert!(error.contains(wanted), "{text}: {error}");
        }
        assert!(
            telegram("[telegram]\ntoken = \"x\"\n", false)
                .unwrap_err()
                .contains("unknown field")
        );
    }

    #[test]
    fn parses_a_full_file() {
        let config = parse(
            r#"
            [model]
            provider = "openai"
            model = "gpt-4o-mini"
            api_key_env = "OPENAI_API_KEY"

            [tasks]
            workers = 4
            timeout_secs = 60

            [server]
            port = 9000

            [[workspace]]
            name = "notes"
            path = "~/notes"
            default = true
            "#,
        )
        .unwrap();
        assert_eq!(config.tasks.unwrap().workers, Some(4));
        assert_eq!(config.server.unwrap().port, Some(9000));
        assert_eq!(config.workspace[0].name, "notes");
        assert_eq!(config.model.unwrap().model.as_deref(), Some("gpt-4o-mini"));
    }

    #[test]
    fn store_retain_days_parses_and_defaults_to_forever() {
        let config = parse("[store]\nretain_days = 30\n").unwrap();
        assert_eq!(config.store.unwrap().retain_days, Some(30));
        assert!(parse("").unwrap().store.is_none());
        let error = parse("[store]\nretain_dayz = 3\n").unwrap_err();
        assert!(error.contains("retain_dayz"), "{error}");
        assert!(parse("[store]\nretain_days = -1\n").is_err());
    }

    #[test]
    fn revert_defaults_and_limits() {
        let defaults = FileRevert::resolve(None).unwrap();
        assert_eq!(defaults, pp_tasks::RevertSettings::default());
        assert_eq!(defaults.max_bytes, 64 * 1024 * 1024);
        assert_eq!(defaults.retain, Duration::from_secs(30 * 86_400));
        let config = parse(
            "[revert]
max_bytes = 1024
retain_days = 2
",
        )
        .unwrap();
        let revert = FileRevert::resolve(config.revert.as_ref()).unwrap();
        assert_eq!(
            (revert.max_bytes, revert.retain),
            (1024, Duration::from_secs(2 * 86_400))
        );
        let zero = parse(
            "[revert]
retain_days = 0
",
        )
        .unwrap();
        assert!(FileRevert::resolve(zero.revert.as_ref()).is_err());
        assert!(
            parse(
                "[revert]
max_byte = 1
"
            )
            .is_err()
        );
    }

    #[test]
    fn the_team_folder_is_named_only_in_team_mode() {
        let team = |text: &str| parse(text).unwrap().team;
        assert_eq!(resolve_team_dir(None).unwrap(), None);
        assert_eq!(
            resolve_team_dir(team("[team]\nenabled = true\n").as_ref()).unwrap(),
            None
        );
        assert_eq!(
            resolve_team_dir(team("[team]\nenabled = true\nshared_dir = \"/srv/team\"\n").as_ref())
                .unwrap(),
            Some(PathBuf::from("/srv/team"))
        );
        let alone = resolve_team_dir(team("[team]\nshared_dir = \"/srv/team\"\n").as_ref())
            .unwrap_err()
            .to_string();
        assert!(alone.contains("enabled = true"), "{alone}");
        assert!(
            parse("[team]\nshared_dirz = \"x\"\n")
                .unwrap_err()
                .contains("shared_dirz")
        );
    }

    #[test]
    fn the_team_key_comes_from_one_variable_or_one_file_in_team_mode_only() {
        let team = |text: &str| parse(text).unwrap().team;
        let dir = Some(Path::new("/etc/pocketpilot"));
        assert_eq!(
            resolve_team_key(team("[team]\nenabled = true\n").as_ref(), dir).unwrap(),
            None
        );
        assert_eq!(
            resolve_team_key(
                team("[team]\nenabled = true\nkey_env = \"PP_TEAM_KEY\"\n").as_ref(),
                dir
            )
            .unwrap(),
            Some(TeamKeySource::Env("PP_TEAM_KEY".into()))
        );
        assert_eq!(
            resolve_team_key(
                team("[team]\nenabled = true\nkey_file = \"team.key\"\n").as_ref(),
                dir
            )
            .unwrap(),
            Some(TeamKeySource::File(PathBuf::from(
                "/etc/pocketpilot/team.key"
            ))),
            "relative to the config file's folder"
        );
        for (text, says) in [
            (
                "[team]\nenabled = true\nkey_env = \"A\"\nkey_file = \"/k\"\n",
                "set one of them",
            ),
            ("[team]\nkey_env = \"A\"\n", "enabled = true"),
            (
                "[team]\nenabled = true\nkey_env = \"\"\n",
                "name of an environment",
            ),
            (
                "[team]\nenabled = true\nkey_file = \" \"\n",
                "must name a file",
            ),
        ] {
            let error = resolve_team_key(team(text).as_ref(), dir)
                .unwrap_err()
                .to_string();
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn skills_dirs_resolve_and_are_refused_inside_a_workspace() {
        let config = parse("[skills]\ndirs = [\"/srv/skills\"]\nmax_body_bytes = 100\n").unwrap();
        let skills = resolve_skills(config.skills.as_ref(), Path::new("/data")).unwrap();
        assert_eq!(skills.home, Path::new("/data/skills"));
        assert_eq!(skills.dirs, [PathBuf::from("/srv/skills")]);
        assert_eq!(skills.max_body_bytes, 100);
        let defaults = resolve_skills(None, Path::new("/data")).unwrap();
        assert_eq!(defaults.max_body_bytes, 64 * 1024);
        assert!(parse("[skills]\ndirz = []\n").unwrap_err().contains("dirz"));

        let dir = tempfile::tempdir().unwrap();
        let workspaces = Workspaces::single("w", dir.path());
        let inside = refuse_skills_inside_workspaces(&workspaces, &[dir.path().join("skills")])
            .unwrap_err()
            .to_string();
        assert!(inside.contains("is inside workspace `w`"), "{inside}");
        let outside = tempfile::tempdir().unwrap();
        refuse_skills_inside_workspaces(&workspaces, &[outside.path().to_path_buf()]).unwrap();
    }

    #[test]
    fn the_docs_table_sets_caps_and_parser_limits_over_the_defaults() {
        let config = parse("[docs]\nmax_input_mb = 8\nparser_wall_secs = 0\n").unwrap();
        let docs = DocsConfig::resolve(config.docs.as_ref());
        let defaults = DocsConfig::default();
        assert_eq!(docs.max_input_bytes, 8 << 20);
        assert_eq!(docs.parser.wall, Duration::from_secs(1));
        assert_eq!(docs.max_output_chars, defaults.max_output_chars);
        assert_eq!(docs.parser.cpu_secs, defaults.parser.cpu_secs);
        assert_eq!(DocsConfig::resolve(None), defaults);
        assert!(
            parse("[docs]\nmax_mb = 1\n")
                .unwrap_err()
                .contains("max_mb")
        );
    }

    #[test]
    fn memory_max_prompt_bytes_parses_and_unknown_keys_are_refused() {
        let config = parse("[memory]\nmax_prompt_bytes = 100\n").unwrap();
        assert_eq!(config.memory.and_then(|m| m.max_prompt_bytes), Some(100));
        assert!(
            parse("[memory]\nmax_bytes = 1\n")
                .unwrap_err()
                .contains("max_bytes")
        );
    }

    #[test]
    fn unknown_keys_are_named() {
        let error = parse("[tasks]\nworkerz = 3\n").unwrap_err();
        assert!(error.contains("workerz"), "{error}");
        let error = parse("[modle]\n").unwrap_err();
        assert!(error.contains("modle"), "{error}");
    }

    #[test]
    fn workspaces_resolve_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let configured = vec![
            FileWorkspace {
                name: "a".into(),
                path: dir.path().display().to_string(),
                default: false,
            },
            FileWorkspace {
                name: "b".into(),
                path: dir.path().display().to_string(),
                default: true,
            },
        ];
        let workspaces = resolve_workspaces(&configured, None, true).unwrap();
        assert_eq!(workspaces.default.as_deref(), Some("b"));
        let with_flag = resolve_workspaces(&configured, Some(dir.path()), true).unwrap();
        assert_eq!(with_flag.list.len(), 3);
        assert_eq!(
            with_flag.find(None).unwrap().path,
            dir.path().to_path_buf(),
            "--workspace is the one-off default"
        );
        let twice = vec![configured[0].clone(), configured[0].clone()];
        assert!(resolve_workspaces(&twice, None, true).is_err());
    }

    mod generated {
        use proptest::prelude::*;

        use super::super::*;

        /// Every key the file format knows, per table (`""` is the top level,
        /// `"[workspace]"` an entry of the `[[workspace]]` array).
        const KNOWN: &[(&str, &[&str])] = &[
            (
                "",
                &[
                    "model",
                    "discovery",
                    "tasks",
                    "server",
                    "workspace",
                    "skills",
                    "memory",
                    "docs",
                    "shell",
                    "mcp",
                ],
            ),
            ("skills", &["dirs", "max_body_bytes"]),
            ("memory", &["max_prompt_bytes"]),
            (
                "shell",
                &[
                    "allow_unconfined",
                    "timeout_secs",
                    "max_timeout_secs",
                    "cpu_secs",
                    "memory_mb",
                    "processes",
                    "file_size_mb",
                    "output_bytes",
                    "snapshot_max_bytes",
                    "snapshot_ignore",
                ],
            ),
            (
                "docs",
                &[
                    "max_input_mb",
                    "max_output_chars",
                    "parser_cpu_secs",
                    "parser_memory_mb",
                    "parser_wall_secs",
                ],
            ),
            (
                "model",
                &[
                    "provider",
                    "base_url",
                    "model",
                    "api_key_env",
                    "max_tokens",
                    "temperature",
                    "context_window",
                    "timeout_secs",
                    "max_retries",
                    "stream",
                    "retry_backoff_ms",
                ],
            ),
            ("discovery", &["enabled", "local_ports", "probe_timeout_ms"]),
            (
                "tasks",
                &[
                    "workers",
                    "timeout_secs",
                    "max_steps",
                    "max_denials",
                    "lease_secs",
                ],
            ),
            (
                "server",
                &[
                    "port",
                    "bind",
                    "allowed_hosts",
                    "trust_forwarded_proto",
                    "max_connections",
                    "header_timeout_secs",
                    "body_idle_timeout_secs",
                ],
            ),
            ("team", &["enabled", "shared_dir", "key_env", "key_file"]),
            ("mcp", &["approval_wait_secs", "server"]),
            ("[workspace]", &["name", "path", "default"]),
        ];

        /// TOML-looking lines: tables, known and unknown keys, assorted values.
        fn toml_like() -> impl Strategy<Value = String> {
            let key = prop_oneof![
                prop::sample::select(
                    KNOWN
                        .iter()
                        .flat_map(|(_, keys)| keys.iter().copied())
                        .collect::<Vec<_>>()
                )
                .prop_map(str::to_owned),
                "[a-z_]{1,10}",
            ];
            let value = prop_oneof![
                any::<i64>().prop_map(|n| n.to_string()),
                any::<bool>().prop_map(|b| b.to_string()),
                any::<String>().prop_map(|s| format!("{s:?}")),
                Just("[1, 2, 70000]".to_owned()),
                Just("{ a = 1 }".to_owned()),
                Just("1.5e3".to_owned()),
            ];
            let line = prop_oneof![
                (key.clone(), value).prop_map(|(key, value)| format!("{key} = {value}")),
                key.clone().prop_map(|key| format!("[{key}]")),
                Just("[[workspace]]".to_owned()),
                any::<String>(),
            ];
            prop::collection::vec(line, 0..8).prop_map(|lines| lines.join("\n"))
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            #[test]
            fn arbitrary_text_never_panics(text in any::<String>()) {
                let _ = parse_file(Path::new("/cfg/pocketpilot.toml"), &text);
            }

            #[test]
            fn toml_like_text_never_panics(text in toml_like()) {
                let _ = parse_file(Path::new("/cfg/pocketpilot.toml"), &text);
            }

            #[test]
            fn an_unknown_key_is_an_error_naming_the_key_and_the_file(
                table in 0..KNOWN.len(),
                key in "[a-z][a-z_]{0,11}",
            ) {
                let (name, known) = KNOWN[table];
                prop_assume!(!known.contains(&key.as_str()));
                let text = match name {
                    "" => format!("{key} = 1\n"),
                    "[workspace]" => format!("[[workspace]]\nname = \"a\"\npath = \"/a\"\n{key} = 1\n"),
                    table => format!("[{table}]\n{key} = 1\n"),
                };
                let error = parse_file(Path::new("/cfg/pocketpilot.toml"), &text)
                    .unwrap_err()
                    .to_string();
                prop_assert!(error.contains(&format!("`{key}`")), "{}", error);
                prop_assert!(error.contains("/cfg/pocketpilot.toml"), "{}", error);
            }
        }
    }
}
