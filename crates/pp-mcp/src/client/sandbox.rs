//! How a stdio server's process is confined: the [`Launcher`] (`pocketpilot __sandbox`,
//! the data directory, what the kernel offers, the default workspace) and the
//! [`pp_sandbox::Spec`] one server process gets for one workspace.
//!
//! The process may read and execute the system locations (`pp_sandbox::rules`), plus
//! what it needs to start ([`start_paths`]), plus its `[mcp.server.sandbox]` `read`
//! paths; write its `write` paths; and reach the workspace as its `workspace` says. The
//! data directory is never granted: a derived path inside it or holding it is left out,
//! and `pp-cli` refuses a configured `read` or `write` path inside it or holding it.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use pp_sandbox::{ResourceLimits, Sandbox, Spec, Support, WorkspaceAccess, is_within};

use crate::config::ServerConfig;

/// What starts confined stdio servers: shared by every connection of a process.
#[derive(Debug, Clone)]
pub struct Launcher {
    /// `pocketpilot __sandbox`.
    pub sandbox: Sandbox,
    /// The data directory: never reachable from a server.
    pub data_dir: PathBuf,
    /// What Landlock the kernel offers ([`Support::usable`]: servers can be confined).
    pub support: Support,
    /// The workspace a server serves when no task names one (`start = "startup"`,
    /// `mcp list`, `mcp check`, `GET /api/mcp/servers`); `None`: such a server starts
    /// with no workspace access at all.
    pub default_workspace: Option<PathBuf>,
}

impl Launcher {
    /// A launcher over `sandbox`, probing the kernel now.
    pub fn new(sandbox: Sandbox, data_dir: PathBuf, default_workspace: Option<PathBuf>) -> Self {
        Self {
            sandbox,
            data_dir,
            support: pp_sandbox::probe(),
            default_workspace,
        }
    }

    /// The spec of `config`'s server started as `program args…` for `workspace`, or why
    /// it may not start. Blocking (looks at the disk).
    pub(crate) fn spec(
        &self,
        config: &ServerConfig,
        program: &Path,
        args: &[String],
        env: &BTreeMap<String, String>,
        cwd: Option<&Path>,
        workspace: Option<&Path>,
    ) -> Result<Spec, String> {
        let confined = config.sandbox.confined;
        if confined && !self.support.usable() {
            return Err(format!(
                "it cannot be confined here ({}); set `confined = false` in its \
                 `[mcp.server.sandbox]` table to run it NOT confined",
                self.support.describe()
            ));
        }
        let (workspace, access) = match workspace {
            Some(workspace) => (workspace.to_path_buf(), config.workspace_access()),
            // No workspace: nothing of one is reachable; the sandbox still needs a
            // folder to run in (its owner is the user the server runs as under root).
            None => (
                cwd.map_or_else(|| PathBuf::from("/"), Path::to_path_buf),
                WorkspaceAccess::None,
            ),
        };
        if access != WorkspaceAccess::None && is_within(&self.data_dir, &workspace) {
            return Err(format!(
                "the workspace {} holds the data directory {}, which no MCP server may reach",
                workspace.display(),
                self.data_dir.display()
            ));
        }
        let program = std::path::absolute(program)
            .map_err(|error| format!("cannot make {} absolute: {error}", program.display()))?;
        let program = program.as_path();
        let mut argv = vec![program.display().to_string()];
        argv.extend(args.iter().cloned());
        let mut read: Vec<PathBuf> = start_paths(program, args, cwd)
            .into_iter()
            .filter(|path| !is_within(path, &self.data_dir) && !is_within(&self.data_dir, path))
            .collect();
        read.extend(config.sandbox.read.iter().cloned());
        let mut spec = Spec::new(
            argv,
            cwd.map_or_else(|| workspace.clone(), Path::to_path_buf),
            workspace,
            ResourceLimits::server(),
        );
        spec.confine = confined;
        spec.env = env
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        spec.workspace_access = access;
        spec.read = read;
        spec.write = config.sandbox.write.clone();
        spec.network = config.sandbox.network;
        Ok(spec)
    }
}

/// What a server needs to read to start, from its resolved program and its arguments
/// that name existing files (absolute, or relative to `cwd`), each taken as written and
/// with its links resolved:
///
/// - the folder holding the file (the program's folder, the script's folder);
/// - when that folder is a `bin`, the `lib` and `lib64` beside it and a `pyvenv.cfg`
///   beside it: the libraries of the installation it belongs to (a Python venv and the
///   Python it was made from, a Node or Python under a prefix of its own);
/// - when the file lies beneath a `node_modules` folder, the outermost such folder:
///   Node resolves a package's imports through every `node_modules` above it.
///
/// Only paths that exist are returned.
#[expect(
    clippy::disallowed_methods,
    reason = "looks at the operator's configured program and arguments to build the \
              server's sandbox rules, never at a model-supplied path"
)]
pub(crate) fn start_paths(program: &Path, args: &[String], cwd: Option<&Path>) -> Vec<PathBuf> {
    let mut files = vec![program.to_path_buf()];
    for arg in args {
        let path = Path::new(arg);
        let path = match cwd {
            _ if path.is_absolute() => path.to_path_buf(),
            Some(cwd) => cwd.join(path),
            None => continue,
        };
        if path.is_file() {
            files.push(path);
        }
    }
    let resolved: Vec<PathBuf> = files
        .iter()
        .filter_map(|file| std::fs::canonicalize(file).ok())
        .collect();
    files.extend(resolved);
    let mut granted: Vec<PathBuf> = Vec::new();
    let mut grant = |path: PathBuf| {
        if path.exists() && !granted.contains(&path) {
            granted.push(path);
        }
    };
    for file in &files {
        let Some(folder) = file.parent() else {
            continue;
        };
        grant(folder.to_path_buf());
        if folder.file_name() == Some(OsStr::new("bin"))
            && let Some(prefix) = folder.parent()
        {
            for beside in ["lib", "lib64", "pyvenv.cfg"] {
                grant(prefix.join(beside));
            }
        }
        if let Some(outermost) = file
            .ancestors()
            .filter(|ancestor| ancestor.file_name() == Some(OsStr::new("node_modules")))
            .last()
        {
            grant(outermost.to_path_buf());
        }
    }
    granted
}

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "the tests build their own folders in a temp dir"
)]
mod tests {
    use super::*;

    #[test]
    fn a_script_in_node_modules_grants_its_folder_and_the_outermost_node_modules() {
        let root = tempfile::tempdir().unwrap();
        let dist = root
            .path()
            .join("app/node_modules/@s/server/node_modules/x/dist");
        std::fs::create_dir_all(&dist).unwrap();
        std::fs::write(dist.join("index.js"), "").unwrap();
        let script = dist.join("index.js").display().to_string();
        let granted = start_paths(
            Path::new("/usr/bin/env"),
            &[script, "--flag".to_owned()],
            None,
        );
        let dist = std::fs::canonicalize(&dist).unwrap();
        assert!(granted.contains(&PathBuf::from("/usr/bin")), "{granted:?}");
        assert!(granted.contains(&dist), "{granted:?}");
        let outer = std::fs::canonicalize(root.path().join("app/node_modules")).unwrap();
        assert!(granted.contains(&outer), "{granted:?}");
        assert!(
            !granted.iter().any(|path| path == outer.parent().unwrap()),
            "{granted:?}"
        );
    }

    #[test]
    fn a_program_in_a_venv_grants_the_venvs_libraries_and_nothing_above() {
        let root = tempfile::tempdir().unwrap();
        let venv = root.path().join("venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::create_dir_all(venv.join("lib")).unwrap();
        std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        std::fs::write(venv.join("bin/python"), "").unwrap();
        let granted = start_paths(&venv.join("bin/python"), &[], None);
        for expected in ["bin", "lib", "pyvenv.cfg"] {
            assert!(
                granted.contains(&venv.join(expected)),
                "{expected}: {granted:?}"
            );
        }
        assert!(!granted.contains(&venv), "{granted:?}");
        assert!(
            !granted.contains(&venv.join("lib64")),
            "absent paths are left out"
        );
    }

    fn stdio_config() -> ServerConfig {
        ServerConfig {
            name: "probe".to_owned(),
            transport: crate::config::Transport::Stdio {
                command: "/usr/bin/env".to_owned(),
                args: Vec::new(),
                env: BTreeMap::new(),
                cwd: None,
            },
            allow: vec!["*".to_owned()],
            default_action: Some("read".to_owned()),
            trust_annotations: false,
            start: crate::config::Start::Lazy,
            call_timeout: crate::config::defaults::CALL_TIMEOUT,
            max_output_bytes: crate::config::defaults::MAX_OUTPUT_BYTES,
            include_instructions: false,
            tools: BTreeMap::new(),
            sandbox: crate::config::SandboxConfig::default(),
        }
    }

    fn launcher(support: Support, data_dir: &Path) -> Launcher {
        Launcher {
            sandbox: Sandbox::new(PathBuf::from("/bin/false"), Vec::new()),
            data_dir: data_dir.to_path_buf(),
            support,
            default_workspace: None,
        }
    }

    fn usable() -> Support {
        Support {
            files: true,
            tcp: true,
            socket_filter: true,
            ..Support::default()
        }
    }

    #[test]
    fn without_landlock_a_confined_server_is_refused_naming_the_key() {
        let root = tempfile::tempdir().unwrap();
        let launcher = launcher(Support::default(), &root.path().join("pp-data"));
        let workspace = root.path().join("work");
        std::fs::create_dir_all(&workspace).unwrap();
        let config = stdio_config();
        let error = launcher
            .spec(
                &config,
                Path::new("/usr/bin/env"),
                &[],
                &BTreeMap::new(),
                None,
                Some(&workspace),
            )
            .unwrap_err();
        assert!(
            error.contains("`confined = false`") && error.contains("[mcp.server.sandbox]"),
            "{error}"
        );
        let mut unconfined = stdio_config();
        unconfined.sandbox.confined = false;
        let spec = launcher
            .spec(
                &unconfined,
                Path::new("/usr/bin/env"),
                &[],
                &BTreeMap::new(),
                None,
                Some(&workspace),
            )
            .unwrap();
        assert!(!spec.confine);
    }

    #[test]
    fn the_spec_carries_the_sandbox_and_never_a_workspace_holding_the_data_directory() {
        let root = tempfile::tempdir().unwrap();
        let workspace = root.path().join("work");
        std::fs::create_dir_all(workspace.join("data")).unwrap();
        let mut config = stdio_config();
        config.sandbox.network = true;
        config.sandbox.write = vec![PathBuf::from("/var/cache/probe")];
        let env = BTreeMap::from([("PATH".to_owned(), "/usr/bin".to_owned())]);
        let elsewhere = launcher(usable(), &root.path().join("pp-data"));
        let spec = elsewhere
            .spec(
                &config,
                Path::new("/usr/bin/env"),
                &[],
                &env,
                None,
                Some(&workspace),
            )
            .unwrap();
        assert!(spec.confine && spec.network);
        assert_eq!(
            spec.workspace_access,
            WorkspaceAccess::Read,
            "every tool reads"
        );
        assert_eq!(spec.write, [PathBuf::from("/var/cache/probe")]);
        assert_eq!(spec.env, [("PATH".to_owned(), "/usr/bin".to_owned())]);
        assert_eq!(spec.cwd, workspace);
        assert!(
            spec.read.contains(&PathBuf::from("/usr/bin")),
            "{:?}",
            spec.read
        );
        assert_eq!(spec.limits, ResourceLimits::server());
        // No task workspace: nothing of one is reachable.
        let none = elsewhere
            .spec(&config, Path::new("/usr/bin/env"), &[], &env, None, None)
            .unwrap();
        assert_eq!(none.workspace_access, WorkspaceAccess::None);
        let inside = launcher(usable(), &workspace.join("data"));
        let error = inside
            .spec(
                &config,
                Path::new("/usr/bin/env"),
                &[],
                &env,
                None,
                Some(&workspace),
            )
            .unwrap_err();
        assert!(error.contains("holds the data directory"), "{error}");
    }
}
