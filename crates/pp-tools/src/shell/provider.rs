//! [`ShellProvider`]: offers `run_command`, bound to each segment's workspace jail, where
//! it may be offered.

use std::path::PathBuf;
use std::sync::Arc;

use pp_sandbox::{Sandbox, Support};
use pp_types::CommandLimits;

use super::run_command::RunCommand;
use crate::blocking::OffThread;
use crate::{ProviderError, Provision, Scope, ToolProvider};

/// How `run_command` starts and limits commands (`[shell]` in the config).
#[derive(Debug, Clone)]
pub struct ShellSettings {
    /// How to start the sandbox child (`pocketpilot __sandbox`).
    pub sandbox: Sandbox,
    /// What Landlock the kernel offers ([`pp_sandbox::probe`], taken once at start).
    pub support: Support,
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
    /// Processes (RLIMIT_NPROC; does not bind root).
    pub processes: u64,
    /// Largest file written, MiB (RLIMIT_FSIZE).
    pub file_size_mb: u64,
    /// Bytes kept of stdout and of stderr each.
    pub output_bytes: u64,
}

impl ShellSettings {
    /// The defaults of `[shell]` around `sandbox`, for the data directory `data_dir`,
    /// with the kernel's Landlock support probed now.
    pub fn new(sandbox: Sandbox, data_dir: PathBuf) -> Self {
        Self {
            sandbox,
            support: pp_sandbox::probe(),
            allow_unconfined: false,
            data_dir,
            timeout_secs: 60,
            max_timeout_secs: 600,
            cpu_secs: 60,
            memory_mb: 1024,
            processes: 64,
            file_size_mb: 256,
            output_bytes: 65_536,
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
