//! [`ShellProvider`]: offers `run_command`, bound to each segment's workspace jail, where
//! it may be offered.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use pp_sandbox::{Containment, ProbeChild, Sandbox, Support};
use pp_types::CommandLimits;

use super::run_command::RunCommand;
use crate::blocking::OffThread;
use crate::{ProviderError, Provision, Scope, ToolProvider};

/// How `run_command` starts and limits commands (`[shell]` in the config).
#[derive(Debug, Clone)]
pub struct ShellSettings {
    /// How to start the sandbox child (`pocketpilot __sandbox`), as configured; a run
    /// leaves the namespaces out where the probe found they cannot be made.
    pub sandbox: Sandbox,
    /// What Landlock the kernel offers ([`pp_sandbox::probe`], taken once at start: a
    /// few system calls).
    pub support: Support,
    /// What ends a command's processes and whether root can run one in a root-owned
    /// workspace ([`Sandbox::containment`]). It starts the sandbox child (and under root
    /// makes a cgroup), so it is taken the first time something needs it
    /// ([`Self::containment`]), never for a task that runs no command.
    containment: OnceLock<Containment>,
    /// The probe's sandbox child when [`ShellProvider::probe_ahead`] started it before
    /// anything needed the answer; [`Self::containment`] reads it.
    ahead: Arc<Mutex<Option<ProbeChild>>>,
    /// Offer the tool without Landlock (every card then says "NOT confined").
    pub allow_unconfined: bool,
    /// The data directory (API token, database): a workspace holding it gets no shell.
    pub data_dir: PathBuf,
    /// Wall-clock seconds of a call that names none.
    pub timeout_secs: u64,
    /// The most wall-clock seconds a call may ask for.
    pub max_timeout_secs: u64,
    /// CPU seconds (RLIMIT_CPU).
    pub cpu_secs: u64,
    /// Address space, MiB (RLIMIT_AS).
    pub memory_mb: u64,
    /// Processes (RLIMIT_NPROC; under root also a pids cgroup).
    pub processes: u64,
    /// Largest file written, MiB (RLIMIT_FSIZE).
    pub file_size_mb: u64,
    /// Bytes kept of stdout and of stderr each.
    pub output_bytes: u64,
    /// What a command's snapshot keeps (`[shell] snapshot_max_bytes`,
    /// `snapshot_ignore`, `[revert] max_bytes`): the card's `uncovered` is measured
    /// with it. The task service keeps the snapshot with the same rules.
    pub snapshot: super::SnapshotRules,
}

impl ShellSettings {
    /// The defaults of `[shell]` around `sandbox`, for the data directory `data_dir`,
    /// with the kernel's Landlock support probed now; the containment is probed when
    /// first needed.
    pub fn new(sandbox: Sandbox, data_dir: PathBuf) -> Self {
        Self {
            sandbox,
            support: pp_sandbox::probe(),
            containment: OnceLock::new(),
            ahead: Arc::default(),
            allow_unconfined: false,
            data_dir,
            timeout_secs: 60,
            max_timeout_secs: 600,
            cpu_secs: 60,
            memory_mb: 1024,
            processes: 64,
            file_size_mb: 256,
            output_bytes: 65_536,
            snapshot: super::SnapshotRules::default(),
        }
    }

    /// What contains commands here: probed the first time it is asked for (the sandbox
    /// child starts once), then kept.
    pub fn containment(&self) -> &Containment {
        self.containment.get_or_init(|| {
            let started = self.ahead.lock().ok().and_then(|mut ahead| ahead.take());
            self.sandbox.containment_with(started)
        })
    }

    /// Sets what contains commands instead of probing it (a caller that knows, a test).
    pub fn set_containment(&mut self, containment: Containment) {
        self.containment = OnceLock::from(containment);
    }

    /// The sandbox a run starts: without namespaces where the probe could not make them
    /// (a kernel may allow the user namespace but not the mounts in it).
    pub fn runner(&self) -> Sandbox {
        if self.containment().namespaces.is_ok() {
            self.sandbox.clone()
        } else {
            self.sandbox.clone().without_namespaces()
        }
    }

    /// Whether commands run confined (Landlock files and TCP are there).
    pub fn confined(&self) -> bool {
        self.support.usable()
    }

    /// The limits of a call asking for `timeout_secs` (none: the default), as its card
    /// shows them.
    pub fn limits(&self, timeout_secs: Option<u64>) -> CommandLimits {
        let max = self.max_timeout_secs.max(1);
        CommandLimits {
            timeout_secs: timeout_secs.unwrap_or(self.timeout_secs).clamp(1, max),
            cpu_secs: self.cpu_secs.max(1),
            memory_mb: self.memory_mb.max(1),
            processes: self.processes.max(1),
            file_size_mb: self.file_size_mb,
            output_bytes: self.output_bytes.max(1),
            network: !self.confined(),
        }
    }

    /// Whether deciding to offer `run_command` in `workspace` (its canonical root) will
    /// take the containment probe: it has not been taken, nothing else keeps the tool
    /// away, and a command there would keep uid 0 ([`Self::unavailable`]).
    fn will_probe(&self, workspace: &std::path::Path) -> bool {
        self.containment.get().is_none()
            && !pp_sandbox::is_within(&self.data_dir, workspace)
            && (self.confined() || self.allow_unconfined)
            && pp_sandbox::would_run_as_root(workspace)
    }

    /// Why `run_command` is not offered in `workspace` (its canonical root), if it is not.
    pub fn unavailable(&self, workspace: &std::path::Path) -> Option<Unavailable> {
        if pp_sandbox::is_within(&self.data_dir, workspace) {
            return Some(Unavailable::DataDirInside {
                data_dir: self.data_dir.clone(),
                workspace: workspace.to_path_buf(),
            });
        }
        if !self.confined() && !self.allow_unconfined {
            return Some(Unavailable::NoLandlock(self.support.describe()));
        }
        // Only a command that would keep uid 0 needs the probe to say whether it may run.
        let refused =
            if self.containment.get().is_some() || pp_sandbox::would_run_as_root(workspace) {
                self.containment().refuses(workspace)
            } else {
                None
            };
        if let Some(why) = refused {
            return Some(Unavailable::RootWorkspace {
                workspace: workspace.to_path_buf(),
                why,
            });
        }
        None
    }
}

/// Why `run_command` is not offered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// The kernel lacks Landlock (files and TCP) and `[shell] allow_unconfined` is off.
    #[error(
        "run_command is off: commands cannot be confined here ({0}); set `[shell] \
         allow_unconfined = true` to offer it unconfined"
    )]
    NoLandlock(String),
    /// The data directory lies inside the workspace: Landlock cannot carve it out.
    #[error(
        "run_command is off in workspace {}: it contains the data directory {} (API token, \
         database), which a command could read; Landlock cannot exclude a folder inside \
         the workspace",
        workspace.display(),
        data_dir.display()
    )]
    DataDirInside {
        /// The data directory.
        data_dir: PathBuf,
        /// The workspace.
        workspace: PathBuf,
    },
    /// PocketPilot runs as root, the workspace belongs to root, and the pids cgroup or
    /// the read-only mount namespace such a command needs cannot be set up.
    #[error("run_command is off in workspace {}: {why}", workspace.display())]
    RootWorkspace {
        /// The workspace.
        workspace: PathBuf,
        /// What is missing.
        why: String,
    },
}

/// The shell tool provider.
#[derive(Debug, Clone)]
pub struct ShellProvider {
    settings: Arc<ShellSettings>,
}

impl ShellProvider {
    /// A provider running commands with `settings`.
    pub fn new(settings: ShellSettings) -> Self {
        Self {
            settings: Arc::new(settings),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &ShellSettings {
        &self.settings
    }
}

impl ShellProvider {
    /// Starts the containment probe's sandbox child now, without waiting for it, when
    /// the first step of a task in `workspace` will need its answer
    /// ([`ShellSettings::unavailable`]: under root in a root-owned workspace), so the
    /// child starts while the store opens and the step finds it (nearly) done. Anywhere
    /// else nothing starts: a task that would not take the probe does not pay for it.
    /// Says whether the child was started.
    pub fn probe_ahead(&self, workspace: &std::path::Path) -> bool {
        let settings = &self.settings;
        // The root the task's jail will have (its canonical path).
        let Ok(jail) = pp_gate::Jail::new(workspace) else {
            return false;
        };
        if !settings.sandbox.tries_namespaces() || !settings.will_probe(jail.root()) {
            return false;
        }
        let Ok(mut ahead) = settings.ahead.lock() else {
            return false;
        };
        if ahead.is_none() {
            *ahead = Some(settings.sandbox.start_probe());
        }
        true
    }
}

impl ToolProvider for ShellProvider {
    fn name(&self) -> &str {
        "shell"
    }

    /// Offers `run_command` unless [`ShellSettings::unavailable`] says why not (fail
    /// closed: the segment then simply has no shell; `doctor` and the start of `run` and
    /// `serve` say why).
    fn provide(&self, scope: &Scope<'_>, provision: &mut Provision) -> Result<(), ProviderError> {
        if self.settings.unavailable(scope.workspace.root()).is_some() {
            return Ok(());
        }
        provision.tool(Arc::new(OffThread(Arc::new(RunCommand::new(
            Arc::clone(scope.workspace),
            Arc::clone(&self.settings),
        )))));
        Ok(())
    }
}

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "the tests build their own workspaces in a temp dir"
)]
mod tests {
    use std::path::Path;

    use pp_agent::ToolContext;
    use pp_gate::Jail;
    use pp_types::WriteLabel;
    use serde_json::json;

    use super::*;
    use crate::{Limits, Toolbox};

    fn settings(data_dir: &Path, support: Support, allow_unconfined: bool) -> ShellSettings {
        let mut settings = ShellSettings::new(
            Sandbox::new("pocketpilot".into(), vec!["__sandbox".to_owned()]),
            data_dir.to_path_buf(),
        );
        settings.support = support;
        settings.set_containment(Containment::default());
        settings.allow_unconfined = allow_unconfined;
        settings
    }

    /// A temp dir holding `w`, a workspace that is not root's (under root it goes to
    /// nobody), and whether the tests run as root (`/usr` belongs to root: only under
    /// root would a command there keep uid 0).
    fn not_roots_workspace() -> (tempfile::TempDir, bool) {
        let root = tempfile::tempdir().unwrap();
        let workspace = root.path().join("w");
        std::fs::create_dir_all(&workspace).unwrap();
        let as_root = pp_sandbox::would_run_as_root(Path::new("/usr"));
        if as_root {
            std::os::unix::fs::chown(&workspace, Some(65_534), Some(65_534)).unwrap();
        }
        (root, as_root)
    }

    /// Settings whose sandbox program cannot start: a probe records why.
    fn unstartable(support: Support, data: &Path) -> ShellSettings {
        let mut settings = ShellSettings::new(
            Sandbox::new("/nonexistent/pocketpilot".into(), Vec::new()),
            data.to_path_buf(),
        );
        settings.support = support;
        settings
    }

    fn landlock() -> Support {
        Support {
            files: true,
            tcp: true,
            scopes: true,
            socket_filter: true,
            ..Support::default()
        }
    }

    fn offered(settings: ShellSettings, workspace: &Path) -> Option<Arc<dyn pp_agent::Tool>> {
        let jail = Arc::new(Jail::new(workspace).unwrap());
        let equipment = Toolbox::new()
            .with(Arc::new(ShellProvider::new(settings)))
            .equip(&jail, Limits::default())
            .unwrap();
        equipment.registry.get("run_command").cloned()
    }

    #[test]
    fn without_landlock_the_tool_is_not_offered_unless_allowed_unconfined() {
        let root = tempfile::tempdir().unwrap();
        let (workspace, data) = (root.path().join("w"), root.path().join("data"));
        std::fs::create_dir_all(&workspace).unwrap();
        let none = Support::default();
        assert!(offered(settings(&data, none, false), &workspace).is_none());
        let unconfined = settings(&data, none, true);
        assert!(unconfined.limits(None).network);
        assert!(offered(unconfined, &workspace).is_some());
        // Landlock with files only (ABI < 4: no TCP rules) is not enough.
        let files_only = Support {
            files: true,
            socket_filter: true,
            ..Support::default()
        };
        assert!(offered(settings(&data, files_only, false), &workspace).is_none());
        assert!(offered(settings(&data, landlock(), false), &workspace).is_some());
    }

    #[test]
    fn a_workspace_holding_the_data_directory_never_gets_the_tool() {
        let workspace = tempfile::tempdir().unwrap();
        let data = workspace.path().join("nested/data");
        std::fs::create_dir_all(&data).unwrap();
        for allow_unconfined in [false, true] {
            let settings = settings(&data, landlock(), allow_unconfined);
            assert!(matches!(
                settings.unavailable(workspace.path()),
                Some(Unavailable::DataDirInside { .. })
            ));
            assert!(offered(settings, workspace.path()).is_none());
        }
    }

    #[test]
    fn under_root_a_root_owned_workspace_needs_the_cgroup_and_the_namespaces() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        let mut settings = settings(&data, landlock(), false);
        settings.set_containment(Containment {
            namespaces: Ok(()),
            root: true,
            pids_cgroup: Err("no pids hierarchy".to_owned()),
        });
        // `/usr` belongs to root on every system the tests run on.
        let refused = settings.unavailable(Path::new("/usr"));
        assert!(
            matches!(&refused, Some(Unavailable::RootWorkspace { why, .. }) if why.contains("no pids hierarchy")),
            "{refused:?}"
        );
        settings.set_containment(Containment {
            namespaces: Ok(()),
            root: true,
            pids_cgroup: Ok(()),
        });
        assert!(settings.unavailable(Path::new("/usr")).is_none());
    }

    #[test]
    fn the_containment_is_probed_only_when_a_decision_needs_it() {
        let (root, as_root) = not_roots_workspace();
        let (workspace, data) = (root.path().join("w"), root.path().join("data"));
        assert!(!pp_sandbox::would_run_as_root(&workspace));
        let provider = ShellProvider::new(unstartable(landlock(), &data));
        let jail = Arc::new(Jail::new(&workspace).unwrap());
        let equipment = Toolbox::new()
            .with(Arc::new(provider.clone()))
            .equip(&jail, Limits::default())
            .unwrap();
        assert!(equipment.registry.get("run_command").is_some());
        assert!(
            provider.settings().containment.get().is_none(),
            "offering the tool in a workspace that is not root's must not probe"
        );
        // A root-owned workspace under root needs the probe to decide.
        let usr = provider.settings().unavailable(Path::new("/usr"));
        assert_eq!(provider.settings().containment.get().is_some(), as_root);
        if as_root {
            assert!(
                matches!(&usr, Some(Unavailable::RootWorkspace { why, .. }) if why.contains("cannot start")),
                "{usr:?}"
            );
        }
        // The card and the run ask for it, and the failed probe leaves namespaces out.
        let containment = provider.settings().containment();
        assert!(
            containment
                .namespaces
                .as_ref()
                .is_err_and(|why| why.contains("cannot start"))
        );
        assert!(!provider.settings().runner().tries_namespaces());
        assert!(provider.settings().sandbox.tries_namespaces());
    }

    #[test]
    fn the_probe_starts_ahead_only_where_the_first_step_would_take_it() {
        let (root, as_root) = not_roots_workspace();
        let (workspace, data) = (root.path().join("w"), root.path().join("data"));
        let provider =
            |support: Support, data: &Path| ShellProvider::new(unstartable(support, data));
        let started =
            |provider: &ShellProvider| provider.settings().ahead.lock().unwrap().is_some();
        let shell = provider(landlock(), &data);
        // Where the first step would offer the tool without probing, nothing starts.
        assert!(!shell.probe_ahead(&workspace));
        assert!(!shell.probe_ahead(&root.path().join("missing")));
        assert!(!started(&shell));
        // Nor where the tool is off anyway: no Landlock, or the data directory inside.
        let off = provider(Support::default(), &data);
        assert!(!off.probe_ahead(Path::new("/usr")));
        let holding = provider(landlock(), Path::new("/usr/share"));
        assert!(!holding.probe_ahead(Path::new("/usr")));
        assert!(!started(&off) && !started(&holding));
        // A root-owned workspace under root: started now, its answer read by the step.
        assert_eq!(shell.probe_ahead(Path::new("/usr")), as_root);
        assert_eq!(started(&shell), as_root);
        assert!(shell.settings().containment.get().is_none());
        if as_root {
            let usr = shell.settings().unavailable(Path::new("/usr"));
            assert!(
                matches!(&usr, Some(Unavailable::RootWorkspace { why, .. }) if why.contains("cannot start /nonexistent/pocketpilot")),
                "{usr:?}"
            );
            assert!(!started(&shell), "the step read the child started ahead");
            // Once answered, nothing starts again.
            assert!(!shell.probe_ahead(Path::new("/usr")));
            assert!(!started(&shell));
        }
    }

    #[test]
    fn the_timeout_asked_for_is_kept_within_the_maximum() {
        let data = Path::new("/nonexistent-data");
        let settings = settings(data, landlock(), false);
        assert_eq!(settings.limits(None).timeout_secs, 60);
        assert_eq!(settings.limits(Some(5)).timeout_secs, 5);
        assert_eq!(settings.limits(Some(5000)).timeout_secs, 600);
        assert!(!settings.limits(None).network);
    }

    #[test]
    fn the_preview_shows_the_exact_argv_the_resolved_cwd_and_the_limits() {
        let root = tempfile::tempdir().unwrap();
        let workspace = root.path().join("w");
        std::fs::create_dir_all(workspace.join("scripts/real")).unwrap();
        std::os::unix::fs::symlink("real", workspace.join("scripts/link")).unwrap();
        let tool = offered(
            settings(&root.path().join("data"), landlock(), false),
            &workspace,
        )
        .unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let context = ToolContext::default();
        let arguments = json!({"command": "sh", "args": ["-c", "echo 'a b' | wc"],
                               "cwd": "scripts/link", "timeout_secs": 9, "stdin": "xyz"});
        let preview = runtime
            .block_on(tool.preview(&context, &arguments))
            .unwrap();
        assert_eq!(preview.label, WriteLabel::Run);
        assert_eq!(preview.target, "sh");
        assert!(preview.notice.is_none());
        let command = preview.command.unwrap();
        assert_eq!(command.argv, ["sh", "-c", "echo 'a b' | wc"]);
        assert_eq!(command.cwd, "scripts/real");
        assert!(command.shell);
        assert!(command.confined);
        assert_eq!(command.limits.timeout_secs, 9);
        assert_eq!(command.stdin_bytes, Some(3));
        // Never stale: the state now has the card's fingerprint.
        let state = runtime
            .block_on(tool.target_state(&context, &arguments))
            .unwrap();
        assert_eq!(state.fingerprint, preview.fingerprint);
        assert_eq!(tool.target(&arguments).as_deref(), Some("sh"));
    }

    #[test]
    fn an_unconfined_preview_says_so() {
        let root = tempfile::tempdir().unwrap();
        let workspace = root.path().join("w");
        std::fs::create_dir_all(&workspace).unwrap();
        let tool = offered(
            settings(&root.path().join("data"), Support::default(), true),
            &workspace,
        )
        .unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let preview = runtime
            .block_on(tool.preview(&ToolContext::default(), &json!({"command": "ls"})))
            .unwrap();
        let command = preview.command.unwrap();
        assert!(!command.confined);
        assert!(!command.shell);
        assert!(command.limits.network);
        assert!(preview.notice.unwrap().starts_with("NOT confined"));
    }
}
