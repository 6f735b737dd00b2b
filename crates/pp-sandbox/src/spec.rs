//! What the sandbox child is told: the command, where it runs, how it is confined.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One command to run confined, passed to `pocketpilot __sandbox` as one JSON argument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spec {
    /// The program and its arguments, exactly as given to `execve` (a program without a
    /// `/` is looked up on the spec's `PATH`).
    pub argv: Vec<String>,
    /// The absolute working directory (inside the workspace).
    pub cwd: PathBuf,
    /// The absolute, canonical workspace: the one tree the command may read and write.
    pub workspace: PathBuf,
    /// Whether to apply the Landlock ruleset, the socket filter and the read-only,
    /// `nodev` mounts. `false` only for `[shell] allow_unconfined` on a kernel without
    /// Landlock: the limits, the cleared environment, the dropped privileges and the
    /// end of every process with the call still apply.
    pub confine: bool,
    /// The resource limits the child puts on itself before `exec`.
    pub limits: ResourceLimits,
    /// The whole environment of the command (`PATH`, `HOME`, `LANG`).
    pub env: Vec<(String, String)>,
    /// What the command may do in the workspace (`run_command`: everything but device
    /// nodes; an MCP server: what its `[mcp.server.sandbox] workspace` says).
    #[serde(default)]
    pub workspace_access: WorkspaceAccess,
    /// Folders and files besides the workspace and the system locations the command may
    /// read and execute (absolute).
    #[serde(default)]
    pub read: Vec<PathBuf>,
    /// Folders and files besides the workspace it may read and write (absolute; no
    /// device nodes, no device ioctls). Each folder is made a writable mount of its own
    /// in the command's mount namespace.
    #[serde(default)]
    pub write: Vec<PathBuf>,
    /// Whether the command may use the network: no Landlock TCP/UDP rules and no
    /// seccomp socket filter. It can then also reach UNIX sockets, except where the
    /// kernel's Landlock scopes (abstract sockets, ABI 6) and UNIX socket rules
    /// (pathname sockets, ABI 9) still hold.
    #[serde(default)]
    pub network: bool,
}

/// What a command may do beneath its workspace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceAccess {
    /// Read, write, create, delete (no device nodes, no device ioctls).
    #[default]
    Write,
    /// Read and execute only; the workspace is a read-only mount in the namespace.
    Read,
    /// Nothing: the workspace is neither readable nor writable.
    None,
}

impl WorkspaceAccess {
    /// `write`, `read` or `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Write => "write",
            Self::Read => "read",
            Self::None => "none",
        }
    }
}

impl Spec {
    /// A spec for `argv` in `cwd`, confined to `workspace`, with the default environment
    /// ([`Spec::default_env`]).
    pub fn new(
        argv: Vec<String>,
        cwd: PathBuf,
        workspace: PathBuf,
        limits: ResourceLimits,
    ) -> Self {
        let env = Self::default_env(&workspace);
        Self {
            argv,
            cwd,
            workspace,
            confine: true,
            limits,
            env,
            workspace_access: WorkspaceAccess::Write,
            read: Vec::new(),
            write: Vec::new(),
            network: false,
        }
    }

    /// The folders that are writable mounts in the command's mount namespace: the
    /// workspace when it may be written, and every `write` path.
    pub fn writable_roots(&self) -> Vec<PathBuf> {
        let workspace =
            (self.workspace_access == WorkspaceAccess::Write).then(|| self.workspace.clone());
        workspace
            .into_iter()
            .chain(self.write.iter().cloned())
            .collect()
    }

    /// The environment a command gets: the system `PATH`, `HOME` set to the workspace
    /// and `LANG=C.UTF-8`. Nothing else: no API keys, no proxy settings, no tokens.
    pub fn default_env(workspace: &Path) -> Vec<(String, String)> {
        vec![
            (
                "PATH".to_owned(),
                "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin".to_owned(),
            ),
            ("HOME".to_owned(), workspace.to_string_lossy().into_owned()),
            ("LANG".to_owned(), "C.UTF-8".to_owned()),
        ]
    }
}

/// The resource limits of a command (set with `setrlimit` in the child, inherited by
/// everything it starts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceLimits {
    /// CPU seconds (RLIMIT_CPU: SIGXCPU at the limit, SIGKILL a second later).
    pub cpu_secs: u64,
    /// Address space in bytes (RLIMIT_AS).
    pub memory_bytes: u64,
    /// Processes (RLIMIT_NPROC of the user the command runs as, which counts all of that
    /// user's processes; under root also the run's pids cgroup, the only cap when the
    /// workspace belongs to root and the command keeps uid 0).
    pub processes: u64,
    /// The largest file the command may write, in bytes (RLIMIT_FSIZE).
    pub file_size_bytes: u64,
}

impl ResourceLimits {
    /// The limits of a long-running server (an MCP server): no CPU-seconds limit and no
    /// address-space limit (Node's V8 and other runtimes reserve far more address space
    /// than they use), 256 processes (threads count), files up to 256 MiB.
    pub fn server() -> Self {
        Self {
            cpu_secs: UNLIMITED,
            memory_bytes: UNLIMITED,
            processes: 256,
            file_size_bytes: 256 << 20,
        }
    }
}

/// A limit value that means no limit (`RLIM_INFINITY`).
pub const UNLIMITED: u64 = u64::MAX;

impl Default for ResourceLimits {
    fn default() -> Self {
        Self {
            cpu_secs: 60,
            memory_bytes: 1 << 30,
            processes: 64,
            file_size_bytes: 256 << 20,
        }
    }
}

/// Whether `inner` is `outer` or lies beneath it, both resolved through every link. A
/// path that cannot be resolved is compared as written (made absolute by the caller).
#[expect(
    clippy::disallowed_methods,
    reason = "resolves operator paths (the data directory, the workspace root) to compare \
              them, never to open a model-supplied path"
)]
pub fn is_within(inner: &Path, outer: &Path) -> bool {
    let real = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    real(inner).starts_with(real(outer))
}

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "the tests build their own folders in a temp dir"
)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_inside_is_within_and_a_sibling_is_not() {
        let root = tempfile::tempdir().unwrap();
        let workspace = root.path().join("work");
        let data = workspace.join("data");
        std::fs::create_dir_all(&data).unwrap();
        let sibling = root.path().join("workshop");
        std::fs::create_dir_all(&sibling).unwrap();
        assert!(is_within(&data, &workspace));
        assert!(is_within(&workspace, &workspace));
        assert!(!is_within(&sibling, &workspace));
        assert!(!is_within(&workspace, &data));
    }

    #[test]
    fn a_link_into_the_workspace_is_within() {
        let root = tempfile::tempdir().unwrap();
        let workspace = root.path().join("work");
        std::fs::create_dir_all(workspace.join("data")).unwrap();
        let link = root.path().join("data-link");
        std::os::unix::fs::symlink(workspace.join("data"), &link).unwrap();
        assert!(is_within(&link, &workspace));
    }

    #[test]
    fn the_environment_holds_only_path_home_and_lang() {
        let env = Spec::default_env(Path::new("/w"));
        let names: Vec<&str> = env.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["PATH", "HOME", "LANG"]);
        assert_eq!(env[1].1, "/w");
    }
}
