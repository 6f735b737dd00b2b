//! Settings of the task service and the named workspaces tasks run in.

use std::path::PathBuf;
use std::time::Duration;

use pp_agent::Limits;

/// `[tasks]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSettings {
    /// Runs at once (queued tasks and resumed approvals share the limit).
    pub workers: usize,
    /// Running time per task; time waiting for a person does not count.
    pub timeout: Duration,
    /// Model calls per task.
    pub max_steps: u32,
    /// Denials before a task fails with `policy_violation`.
    pub max_denials: u32,
    /// How often to look for work and changes made by other processes.
    pub poll_interval: Duration,
    /// The model's context window in tokens (from `[model] context_window`).
    pub context_window: Option<u64>,
    /// A running task whose process sent no heartbeat for this long is `interrupted`
    /// (checked at start-up and while the workers run). Heartbeats go out every third of it.
    pub lease: Duration,
    /// Largest file whose content is hashed into an approval's fingerprint
    /// (`[approvals] hash_max_bytes`, default 64 MiB); larger files are fingerprinted by
    /// their metadata (device, inode, size, mtime, ctime) only.
    pub hash_max_bytes: u64,
    /// `[revert]`: what approved writes keep for a revert, and for how long.
    pub revert: RevertSettings,
    /// `[tasks] max_tokens`: tokens per task (prompt + completion over all its model
    /// calls); the task fails with `token_budget` before a call that would pass it.
    pub max_tokens: Option<u64>,
    /// `[model] prices`: each model call's cost estimate.
    pub prices: pp_types::Prices,
    /// Team mode (`[team] enabled`, docs/team.md): this process is one of several
    /// workers sharing the database. It registers itself with the workspace names it
    /// has, claims only tasks of those, and runs a task at its own path for the task's
    /// workspace name. `None`: one person's machine, tasks run at their stored path.
    pub team: Option<TeamWorker>,
    /// `[remote]`: what a link or a chat button may approve.
    pub remote: RemoteSettings,
    /// `[shell] snapshot_max_bytes` and `snapshot_ignore`: what the snapshot taken
    /// before an approved `run_command` keeps (with `[revert] max_bytes` per file).
    pub command_snapshot: CommandSnapshot,
}

/// What an approved command's snapshot of the workspace keeps (docs/revert.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSnapshot {
    /// `[shell] snapshot_max_bytes`: contents kept in all (default 256 MiB).
    pub max_bytes: u64,
    /// `[shell] snapshot_ignore`: paths neither kept nor watched.
    pub ignore: pp_tools::shell::IgnoreRules,
}

impl Default for CommandSnapshot {
    fn default() -> Self {
        Self {
            max_bytes: 256 * 1024 * 1024,
            ignore: pp_tools::shell::IgnoreRules::default(),
        }
    }
}

/// `[remote]` settings (docs/remote.md): decisions made away from the console and the
/// terminal — an approval link or a chat app's button — may reject anything but approve
/// only calls of these capabilities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteSettings {
    /// Whole capabilities (`file:write`), not suffixes: `memory:write` and MCP tools are
    /// approvable remotely only when named here.
    pub approve_capabilities: Vec<String>,
}

impl Default for RemoteSettings {
    fn default() -> Self {
        Self {
            approve_capabilities: ["file:write", "file:create", "file:update"]
                .map(String::from)
                .to_vec(),
        }
    }
}

/// How this process takes part in a team server's pool of workers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamWorker {
    /// This machine's name, shown in the worker registry.
    pub host: String,
}

/// `[revert]` settings: snapshots of what approved writes replace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RevertSettings {
    /// Largest content kept (`[revert] max_bytes`, default 64 MiB); a call that would
    /// replace more keeps nothing and cannot be undone (its card says so beforehand).
    pub max_bytes: u64,
    /// How long snapshots are kept (`[revert] retain_days`, default 30 days); older
    /// changes can no longer be reverted.
    pub retain: Duration,
}

impl Default for RevertSettings {
    fn default() -> Self {
        Self {
            max_bytes: 64 * 1024 * 1024,
            retain: Duration::from_secs(30 * 86_400),
        }
    }
}

impl Default for TaskSettings {
    fn default() -> Self {
        Self {
            workers: 2,
            timeout: Duration::from_secs(600),
            max_steps: 24,
            max_denials: 3,
            poll_interval: Duration::from_millis(250),
            context_window: None,
            lease: Duration::from_secs(30),
            hash_max_bytes: pp_tools::Limits::default().hash_max_bytes,
            revert: RevertSettings::default(),
            max_tokens: None,
            prices: pp_types::Prices::default(),
            team: None,
            remote: RemoteSettings::default(),
            command_snapshot: CommandSnapshot::default(),
        }
    }
}

impl TaskSettings {
    /// The rules of an approved command's snapshot: `[shell]`'s budget and ignore
    /// patterns, `[revert] max_bytes` per file (the card's `uncovered` is measured with
    /// the same, from the shell provider's settings).
    pub(crate) fn snapshot_rules(&self) -> pp_tools::shell::SnapshotRules {
        pp_tools::shell::SnapshotRules {
            max_total_bytes: self.command_snapshot.max_bytes,
            max_file_bytes: self.revert.max_bytes,
            ignore: self.command_snapshot.ignore.clone(),
        }
    }

    /// What one call of a built-in tool may read or return.
    pub(crate) fn tool_limits(&self) -> pp_tools::Limits {
        pp_tools::Limits {
            hash_max_bytes: self.hash_max_bytes,
            ..pp_tools::Limits::default()
        }
    }

    /// The loop limits these settings imply.
    pub fn limits(&self) -> Limits {
        Limits {
            max_steps: self.max_steps,
            max_denials: self.max_denials,
            token_budget: self.max_tokens,
            context_window: self.context_window,
        }
    }
}

/// A named workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// The name tasks refer to it by.
    pub name: String,
    /// Its root directory (`~` already expanded).
    pub path: PathBuf,
}

/// The configured workspaces and which one is the default.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Workspaces {
    /// Every workspace, in configuration order.
    pub list: Vec<Workspace>,
    /// The default's name.
    pub default: Option<String>,
}

impl Workspaces {
    /// A single workspace that is also the default.
    pub fn single(name: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        let name = name.into();
        Self {
            list: vec![Workspace {
                name: name.clone(),
                path: path.into(),
            }],
            default: Some(name),
        }
    }

    /// Finds a workspace by name, or the default when `name` is `None`.
    pub fn find(&self, name: Option<&str>) -> Option<&Workspace> {
        let wanted = name.or(self.default.as_deref())?;
        self.list.iter().find(|workspace| workspace.name == wanted)
    }
}
