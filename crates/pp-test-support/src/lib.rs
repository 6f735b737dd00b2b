//! Shared test fixtures for PocketPilot: a throw-away directory holding a `workspace/`
//! and an `outside/` side by side, with helpers to fill both with files, directories and
//! symbolic links.
//!
//! It also holds the mock HTTP server the model tests and the load test use ([`mock`]),
//! with OpenAI-compatible replies that report token usage ([`openai`]),
//! and the pieces of the fault and load binaries (`src/bin/soak.rs`, `src/bin/load.rs`,
//! see `docs/testing.md`): a small HTTP/1.1 and SSE client ([`http`]) and a runner for
//! the real `pocketpilot` binary that can SIGKILL and restart `serve` ([`process`]).
//!
//! [`provider`] holds tool providers that exist only for tests: the acceptance test of
//! the tool seam plugs one into the task service without touching `pp-tasks`.
//!
//! Tests wait on a condition with a deadline, never a fixed sleep: [`wait_until`] (and
//! [`wait_until_async`]).
//!
//! This crate is a dev-dependency only (`publish = false`); it sits beside the workspace
//! and may depend on any PocketPilot crate. The binaries drive `pocketpilot` only
//! through its HTTP API and its command line.
//!
//! ```
//! let tree = pp_test_support::TempTree::new();
//! tree.file("notes.txt", "hi\n");
//! tree.outside_file("secret.txt", "TOP-SECRET");
//! assert_eq!(tree.read("notes.txt"), "hi\n");
//! ```
#![allow(
    clippy::disallowed_methods,
    clippy::expect_used,
    reason = "test fixtures build trees with std::fs on paths the test chose, and panic on setup failure"
)]

mod cut;
pub mod http;
pub mod mcp_servers;
pub mod mock;
pub mod openai;
pub mod postgres;
pub mod process;
pub mod provider;
pub mod skills;
mod unprivileged;
mod wait;

use std::path::{Path, PathBuf};

pub use cut::cut_after_start;
pub use unprivileged::{is_root, rerun_as_nobody};
pub use wait::{wait_until, wait_until_async};

/// The store type, for tests of crates that may not depend on the store crate (the
/// server's): they open it here and hand it to the service as the binary would.
pub use pp_store::Store;

/// Opens (creating it) the SQLite database at `path`, for a test that builds a task
/// service on it or writes to it as another process would. The server's tests use this:
/// the server itself depends on no store crate and reaches the store only through the
/// task service.
pub fn sqlite_store(path: &Path) -> pp_store::Store {
    pp_store::Store::open(path).expect("open the test database")
}

/// [`sqlite_store`] whose every time comes from `clock` (a test's
/// [`pp_types::ManualClock`]): logins, tokens, leases and signatures never meet wall time.
pub fn sqlite_store_with_clock(
    path: &Path,
    clock: std::sync::Arc<dyn pp_types::Clock>,
) -> pp_store::Store {
    pp_store::Store::open_with_clock(path, clock).expect("open the test database")
}

/// A temporary directory with `workspace/` and `outside/` side by side.
///
/// `../outside/…` from the workspace root reaches the outside directory, which is what
/// escape tests need. Everything is removed when the value is dropped.
pub struct TempTree {
    dir: tempfile::TempDir,
    workspace: PathBuf,
    outside: PathBuf,
}

impl Default for TempTree {
    fn default() -> Self {
        Self::new()
    }
}

impl TempTree {
    /// Creates the directory and its two halves.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("pp-test-")
            .tempdir()
            .expect("create temp dir");
        let base = std::fs::canonicalize(dir.path()).expect("canonicalize temp dir");
        let workspace = base.join("workspace");
        let outside = base.join("outside");
        std::fs::create_dir(&workspace).expect("create workspace");
        std::fs::create_dir(&outside).expect("create outside");
        Self {
            dir,
            workspace,
            outside,
        }
    }

    /// The temp directory holding both halves.
    pub fn base(&self) -> &Path {
        self.dir.path()
    }

    /// The workspace root (canonical).
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The outside directory (canonical).
    pub fn outside(&self) -> &Path {
        &self.outside
    }

    /// Writes a file inside the workspace, creating parent directories.
    pub fn file(&self, relative: &str, content: &str) -> PathBuf {
        write(&self.workspace.join(relative), content)
    }

    /// Creates a directory (and parents) inside the workspace.
    pub fn dir(&self, relative: &str) -> PathBuf {
        let path = self.workspace.join(relative);
        std::fs::create_dir_all(&path).expect("create dir");
        path
    }

    /// Writes a file inside the outside directory.
    pub fn outside_file(&self, relative: &str, content: &str) -> PathBuf {
        write(&self.outside.join(relative), content)
    }

    /// Creates a symbolic link at `relative` in the workspace pointing to `target`
    /// (written verbatim: relative or absolute).
    #[cfg(unix)]
    pub fn symlink(&self, relative: &str, target: impl AsRef<Path>) -> PathBuf {
        let link = self.workspace.join(relative);
        if let Some(parent) = link.parent() {
            std::fs::create_dir_all(parent).expect("create link parent");
        }
        std::os::unix::fs::symlink(target, &link).expect("create symlink");
        link
    }

    /// Reads a workspace file as text.
    pub fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.workspace.join(relative)).expect("read workspace file")
    }

    /// Whether a workspace path exists (without following a final link).
    pub fn exists(&self, relative: &str) -> bool {
        std::fs::symlink_metadata(self.workspace.join(relative)).is_ok()
    }

    /// Every file under the outside directory with its content, sorted by path.
    pub fn outside_snapshot(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files = Vec::new();
        collect(&self.outside, &mut files);
        files.sort();
        files
    }
}

fn write(path: &Path, content: &str) -> PathBuf {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create parent");
    }
    std::fs::write(path, content).expect("write file");
    path.to_path_buf()
}

fn collect(dir: &Path, files: &mut Vec<(PathBuf, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("dir entry").path();
        let meta = std::fs::symlink_metadata(&path).expect("metadata");
        if meta.is_dir() {
            collect(&path, files);
        } else if meta.is_file() {
            files.push((path.clone(), std::fs::read(&path).expect("read")));
        }
    }
}
