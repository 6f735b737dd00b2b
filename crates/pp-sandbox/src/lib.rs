//! PocketPilot's confined commands: `run_command`'s process runs under Linux Landlock
//! rules, resource limits and a cleared environment.
//!
//! `unsafe` is forbidden in this workspace, so nothing is set up between `fork` and
//! `exec` in the parent (`pre_exec`). Instead the parent ([`Sandbox::run`]) starts a
//! re-executed child of its own binary, `pocketpilot __sandbox MESSAGE` ([`child::main`]),
//! with an empty environment, in its own process group, and every later step that needs
//! a fresh process is another re-executed stage (`stage.rs`). The first stage joins the
//! run's pids cgroup (root), enters mount and PID namespaces (through a user namespace
//! when not root), makes everything outside the workspace read-only and the workspace
//! `nodev`, drops every capability and, under root, becomes the workspace's owner; the
//! namespace's init (or, without namespaces, the first stage as a subreaper) makes
//! every process of the command end with the call. The last stage puts the resource
//! limits on itself (RLIMIT_CPU, RLIMIT_AS, RLIMIT_NPROC, RLIMIT_FSIZE, no core dumps),
//! restricts itself with a Landlock ruleset ([`rules`]: read and write beneath the
//! workspace but no device nodes or device ioctls, read and execute in the system
//! folders, a few devices, no TCP bind or connect, signal and abstract-socket scopes
//! where the kernel has them), installs a seccomp filter that refuses `socket(2)` and
//! `io_uring` (no UDP, no UNIX sockets, whatever the Landlock ABI) and then `exec`s the
//! command with only `PATH`, `HOME` (the workspace) and `LANG`. Landlock domains, the
//! filter, the limits and the namespaces survive `exec` and hold for every process the
//! command starts.
//!
//! The parent feeds stdin, keeps at most [`RunOptions::output_bytes`] of stdout and of
//! stderr each (counting the rest), and at the wall-clock limit, when the caller's stop
//! check says so, and when the command ends, makes sure nothing it started is left.
//!
//! [`Sandbox::prepare`] starts the same child for a server that keeps running (an MCP
//! stdio server): the caller owns its pipes and its process group, and the spec says
//! how wide its confinement is ([`WorkspaceAccess`], extra `read` and `write` paths,
//! `network`, [`ResourceLimits::server`]).
//!
//! [`probe`] says what the running kernel offers; a caller offers confined commands only
//! when [`Support::usable`] (files and TCP: Landlock ABI 4 or later);
//! [`Sandbox::containment`] says what ends a command's processes and whether a
//! root-owned workspace can be used under root ([`Containment::refuses`]).
//!
//! Where it sits: depends on `pp-types` only; `pp-tools` builds the `run_command` tool
//! on it, `pp-mcp` starts stdio MCP servers through it and `pp-cli` runs
//! [`child::main`] for `pocketpilot __sandbox`.

mod cgroup;
pub mod child;
mod containment;
mod error;
mod limits;
mod namespaces;
mod privileges;
mod reaper;
pub mod rules;
mod runner;
mod seccomp;
mod server;
mod spec;
mod stage;

pub use containment::{Containment, ProbeChild, would_run_as_root};
pub use error::SandboxError;
pub use rules::{Support, probe};
pub use runner::{Captured, End, Finished, RunOptions, Sandbox};
pub use server::{Held, Prepared, setup_failure};
pub use spec::{ResourceLimits, Spec, UNLIMITED, WorkspaceAccess, is_within};
