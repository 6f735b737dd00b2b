//! The `[shell]` table and the `run_command` provider built from it: commands run in
//! children of this very binary (`pocketpilot __sandbox`), confined by `pp-sandbox`.

use std::path::Path;

use pp_tools::shell::{ShellProvider, ShellSettings};
use serde::Deserialize;

use crate::Exit;

/// The `[shell]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileShell {
    /// Offer `run_command` where Landlock is missing, unconfined (default false).
    allow_unconfined: Option<bool>,
    /// Wall-clock seconds of a call that names none (default 60).
    timeout_secs: Option<u64>,
    /// The most wall-clock seconds a call may ask for (default 600).
    max_timeout_secs: Option<u64>,
    /// CPU seconds (default 60).
    cpu_secs: Option<u64>,
    /// Address space in MiB (default 1024).
    memory_mb: Option<u64>,
    /// Processes (default 64; RLIMIT_NPROC of the user the command runs as, and under
    /// root a pids cgroup).
    processes: Option<u64>,
    /// Largest file written, in MiB (default 256).
    file_size_mb: Option<u64>,
    /// Bytes kept of stdout and of stderr each (default 65536).
    output_bytes: Option<u64>,
    /// Contents kept in all by the snapshot before an approved command (default 256 MiB).
    snapshot_max_bytes: Option<u64>,
    /// Gitignore-style patterns of paths the snapshot neither keeps nor watches.
    snapshot_ignore: Option<Vec<String>>,
}

/// The resolved `[shell]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShellConfig {
    pub(crate) allow_unconfined: bool,
    pub(crate) timeout_secs: u64,
    pub(crate) max_timeout_secs: u64,
    pub(crate) cpu_secs: u64,
    pub(crate) memory_mb: u64,
    pub(crate) processes: u64,
    pub(crate) file_size_mb: u64,
    pub(crate) output_bytes: u64,
    /// `snapshot_max_bytes` (default 256 MiB).
    pub(crate) snapshot_max_bytes: u64,
    /// `snapshot_ignore`, parsed.
    pub(crate) snapshot_ignore: pp_tools::shell::IgnoreRules,
    /// `[revert] max_bytes`: the largest one file a command's snapshot keeps (set from
    /// the `[revert]` table, not `[shell]`).
    pub(crate) revert_max_bytes: u64,
}

impl Default for ShellConfig {
    fn default() -> Self {
        Self {
            allow_unconfined: false,
            timeout_secs: 60,
            max_timeout_secs: 600,
            cpu_secs: 60,
            memory_mb: 1024,
            processes: 64,
            file_size_mb: 256,
            output_bytes: 65_536,
            snapshot_max_bytes: 256 * 1024 * 1024,
            snapshot_ignore: pp_tools::shell::IgnoreRules::default(),
            revert_max_bytes: pp_tasks::RevertSettings::default().max_bytes,
        }
    }
}

impl ShellConfig {
    /// What an approved command's snapshot keeps (the card's `uncovered` is measured
    /// with it, and the task service takes the snapshot with the same).
    pub(crate) fn snapshot_rules(&self) -> pp_tools::shell::SnapshotRules {
        pp_tools::shell::SnapshotRules {
            max_total_bytes: self.snapshot_max_bytes,
            max_file_bytes: self.revert_max_bytes,
            ignore: self.snapshot_ignore.clone(),
        }
    }

    /// The `[shell]` table over the defaults. Zero is refused (a limit of nothing is a
    /// mistake, not a way to turn the tool off), and so is a default timeout above the
    /// maximum.
    pub(crate) fn resolve(file: Option<&FileShell>) -> Result<Self, Exit> {
        let defaults = Self::default();
        let Some(file) = file else {
            return Ok(defaults);
        };
        let positive = |value: Option<u64>, default: u64, key: &str| match value {
            Some(0) => Err(Exit::usage(format!("`[shell] {key}` must be at least 1"))),
            Some(value) => Ok(value),
            None => Ok(default),
        };
        let config = Self {
            allow_unconfined: file.allow_unconfined.unwrap_or(defaults.allow_unconfined),
            timeout_secs: positive(file.timeout_secs, defaults.timeout_secs, "timeout_secs")?,
            max_timeout_secs: positive(
                file.max_timeout_secs,
                defaults.max_timeout_secs,
                "max_timeout_secs",
            )?,
            cpu_secs: positive(file.cpu_secs, defaults.cpu_secs, "cpu_secs")?,
            memory_mb: positive(file.memory_mb, defaults.memory_mb, "memory_mb")?,
            processes: positive(file.processes, defaults.processes, "processes")?,
            file_size_mb: positive(file.file_size_mb, defaults.file_size_mb, "file_size_mb")?,
            output_bytes: positive(file.output_bytes, defaults.output_bytes, "output_bytes")?,
            snapshot_max_bytes: positive(
                file.snapshot_max_bytes,
                defaults.snapshot_max_bytes,
                "snapshot_max_bytes",
            )?,
            snapshot_ignore: match &file.snapshot_ignore {
                None => defaults.snapshot_ignore,
                Some(patterns) => pp_tools::shell::IgnoreRules::new(patterns)
                    .map_err(|error| Exit::usage(format!("`[shell] snapshot_ignore`: {error}")))?,
            },
            revert_max_bytes: defaults.revert_max_bytes,
        };
        if config.timeout_secs > config.max_timeout_secs {
            return Err(Exit::usage(format!(
                "`[shell] timeout_secs` ({}) is above `max_timeout_secs` ({})",
                config.timeout_secs, config.max_timeout_secs
            )));
        }
        Ok(config)
    }
}

/// The `run_command` provider: commands start as `pocketpilot __sandbox` (this very
/// binary; `pocketpilot` on PATH should its path be unknown), with `config`'s limits, and
/// never in a workspace holding the data directory `home`.
pub(crate) fn shell_provider(config: &ShellConfig, home: &Path) -> ShellProvider {
    let program = std::env::current_exe().unwrap_or_else(|_| "pocketpilot".into());
    let sandbox = pp_sandbox::Sandbox::new(program, vec!["__sandbox".to_owned()]);
    let mut settings = ShellSettings::new(sandbox, home.to_path_buf());
    settings.allow_unconfined = config.allow_unconfined;
    settings.timeout_secs = config.timeout_secs;
    settings.max_timeout_secs = config.max_timeout_secs;
    settings.cpu_secs = config.cpu_secs;
    settings.memory_mb = config.memory_mb;
    settings.processes = config.processes;
    settings.file_size_mb = config.file_size_mb;
    settings.output_bytes = config.output_bytes;
    settings.snapshot = config.snapshot_rules();
    ShellProvider::new(settings)
}

/// One line on how `run_command` stands in `workspace`: offered confined, offered NOT
/// confined, or off and why. For `doctor` and the start of `serve`.
pub(crate) fn status(provider: &ShellProvider, workspace: &Path) -> (bool, String) {
    let settings = provider.settings();
    match settings.unavailable(workspace) {
        Some(reason) => (false, reason.to_string()),
        None if settings.confined() => (
            true,
            format!(
                "run_command is confined ({}; processes: {})",
                settings.support.describe(),
                settings.containment().describe()
            ),
        ),
        None => (
            false,
            format!(
                "run_command is NOT confined (`[shell] allow_unconfined = true`; {}; \
                 processes: {})",
                settings.support.describe(),
                settings.containment().describe()
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ShellConfig, String> {
        let file: FileShell = toml::from_str(text).map_err(|error| error.to_string())?;
        ShellConfig::resolve(Some(&file)).map_err(|error| error.to_string())
    }

    #[test]
    fn the_shell_table_sets_limits_over_the_defaults() {
        let config = parse("timeout_secs = 5\nmemory_mb = 64\nallow_unconfined = true\n").unwrap();
        assert_eq!(config.timeout_secs, 5);
        assert_eq!(config.memory_mb, 64);
        assert!(config.allow_unconfined);
        assert_eq!(config.max_timeout_secs, 600);
        assert_eq!(ShellConfig::resolve(None).unwrap(), ShellConfig::default());
        assert!(!ShellConfig::default().allow_unconfined);
    }

    #[test]
    fn the_snapshot_keys_are_read_and_checked() {
        let config =
            parse("snapshot_max_bytes = 1024\nsnapshot_ignore = [\"target/\", \"*.log\"]\n")
                .unwrap();
        assert_eq!(config.snapshot_max_bytes, 1024);
        assert!(config.snapshot_ignore.is_ignored("target/debug/x", false));
        assert!(config.snapshot_ignore.is_ignored("a/b.log", false));
        assert_eq!(ShellConfig::default().snapshot_max_bytes, 256 * 1024 * 1024);
        assert!(parse("snapshot_max_bytes = 0\n").is_err());
        let error = parse("snapshot_ignore = [\"/\"]\n").unwrap_err();
        assert!(error.contains("snapshot_ignore"), "{error}");
    }

    #[test]
    fn zero_limits_unknown_keys_and_a_default_above_the_maximum_are_refused() {
        assert!(parse("cpu_secs = 0\n").unwrap_err().contains("cpu_secs"));
        assert!(parse("network = true\n").unwrap_err().contains("network"));
        let above = parse("timeout_secs = 700\n").unwrap_err();
        assert!(above.contains("max_timeout_secs"), "{above}");
    }

    #[test]
    fn a_workspace_holding_the_data_directory_gets_no_shell() {
        let workspace = tempfile::tempdir().unwrap();
        let home = workspace.path().join("data");
        let provider = shell_provider(&ShellConfig::default(), &home);
        let (ok, line) = status(&provider, workspace.path());
        assert!(!ok);
        assert!(line.contains("contains the data directory"), "{line}");
    }
}
