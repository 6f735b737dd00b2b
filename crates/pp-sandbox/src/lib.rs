//! PocketPilot's confined commands: `run_command`'s process runs under Linux Landlock
//! rules, resource limits and a cleared environment.
//!
//! `unsafe` is forbidden in this workspace, so nothing is set up between `fork` and
//! `exec` in the parent (`pre_exec`). Instead the parent ([`Sandbox::run`]) starts a
//! re-executed child of its own binary, `pocketpilot __sandbox SPEC` ([`child::main`]),
//! with an empty environment, in its own process group. That child puts the resource
//! limits on itself (RLIMIT_CPU, RLIMIT_AS, RLIMIT_NPROC, RLIMIT_FSIZE, no core dumps),
//! restricts itself with a Landlock ruleset ([`rules`]: read and write beneath the
//! workspace, read and execute in the system folders, a few devices, no TCP bind or
//! connect, signal and abstract-socket scopes where the kernel has them), installs a
//! seccomp filter that refuses `socket(2)` and `io_uring` (no UDP, no UNIX sockets,
//! whatever the Landlock ABI) and then `exec`s the command with only `PATH`, `HOME`
//! (the workspace) and `LANG`. Landlock domains, the filter and the limits survive
//! `exec` and are inherited by every process the command starts.
//!
//! The parent feeds stdin, keeps at most [`RunOptions::output_bytes`] of stdout and of
//! stderr each (counting the rest), and kills the whole process group at the wall-clock
//! limit, when the caller's stop check says so, and when the command ends (nothing it
//! started in the background outlives the call).
//!
//! [`probe`] says what the running kernel offers; a caller offers confined commands only
//! when [`Support::usable`] (files and TCP: Landlock ABI 4 or later).
//!
//! Where it sits: depends on nothing internal (it needs no PocketPilot type); `pp-tools`
//! builds the `run_command` tool on it and `pp-cli` runs [`child::main`] for
//! `pocketpilot __sandbox`.

pub mod child;
mod error;
mod limits;
pub mod rules;
mod runner;
mod seccomp;
mod spec;

pub use error::SandboxError;
pub use rules::{Support, probe};
pub use runner::{Captured, End, Finished, RunOptions, Sandbox};
pub use spec::{ResourceLimits, Spec, is_within};
