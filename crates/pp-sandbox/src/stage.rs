//! The stages of the sandbox child and how one starts the next.
//!
//! `unsafe` is forbidden, so nothing runs between `fork` and `exec`: each step that must
//! happen in a fresh process is a new stage, this same binary re-executed on itself
//! (`/proc/self/exe`, with the arguments it was started with and the next stage's JSON
//! in place of the last one).
//!
//! 1. [`Stage::Start`], started by [`crate::Sandbox::run`]: joins the pids cgroup,
//!    unshares the mount and PID namespaces (through a user namespace when not root),
//!    makes everything outside the workspace read-only and the workspace `nodev`, drops
//!    every capability and, under root, the user id; then supervises.
//! 2. [`Stage::Init`]: PID 1 of the new PID namespace; starts the command stage, reaps
//!    and exits when the command exits, which makes the kernel kill whatever is left.
//!    Without namespaces there is no such stage: stage 1 is a subreaper instead.
//! 3. [`Stage::Command`]: resource limits, Landlock, seccomp, then `exec` of the command.
//!
//! [`Stage::Probe`] reports whether the namespaces can be created here, for `doctor`.

use std::path::PathBuf;
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::Spec;

/// One stage's instructions, passed as the last argument (JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "snake_case")]
pub(crate) enum Stage {
    /// The sandbox child started by the runner.
    Start {
        /// The command.
        spec: Spec,
        /// The pids cgroup the runner made for this run (root only), to join first, or
        /// why there is none.
        cgroup: Result<PathBuf, String>,
        /// Whether to try namespaces (`false`: the subreaper fallback, forced).
        namespaces: bool,
    },
    /// PID 1 of the command's PID namespace.
    Init {
        /// The command.
        spec: Spec,
    },
    /// The command itself, confined.
    Command {
        /// The command.
        spec: Spec,
    },
    /// Whether namespaces can be created: answers on stdout, runs nothing.
    Probe,
}

/// The command that starts `stage`: this binary again, as it was started (same
/// arguments before the last), standard streams and environment inherited.
pub(crate) fn next(stage: &Stage) -> std::io::Result<Command> {
    let message = serde_json::to_string(stage).map_err(std::io::Error::other)?;
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let arg0 = if args.is_empty() {
        "pocketpilot".into()
    } else {
        args.remove(0)
    };
    args.pop();
    let mut command = Command::new("/proc/self/exe");
    std::os::unix::process::CommandExt::arg0(&mut command, arg0);
    command.args(args).arg(message);
    Ok(command)
}
