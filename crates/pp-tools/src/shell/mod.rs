//! The confined shell: `run_command` (`shell:execute`, risk high, every call stops for
//! approval) runs one program with its arguments in the workspace, confined by
//! `pp-sandbox` (Landlock, resource limits, a cleared environment, a wall clock).
//! [`ShellProvider`] offers it only where that confinement exists, unless the operator
//! set `[shell] allow_unconfined = true`, and never in a workspace that holds the data
//! directory. [`tree`] is the workspace walk behind a command's snapshot and its card's
//! `uncovered`.

mod provider;
mod run_command;
pub mod tree;

pub use provider::{ShellProvider, ShellSettings, Unavailable};
pub use tree::{IgnoreRules, SnapshotRules};
