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
}
