//! What keeps a command's processes and privileges in check on this system, probed
//! once, when a decision first needs it: `doctor`, the start of `serve`, an approval
//! card, a run, or a root-owned workspace under root ([`would_run_as_root`]). Where a
//! caller knows the answer will be needed, the probe's child can start ahead
//! ([`Sandbox::start_probe`]) and be read when it is.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::Sandbox;
use crate::cgroup::PidsCgroup;
use crate::stage::Stage;

/// How commands are contained here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Containment {
    /// Mount and PID namespaces can be made (by root, or through an unprivileged user
    /// namespace), or why not.
    pub namespaces: Result<(), String>,
    /// PocketPilot runs as uid 0: commands run as the owner of their workspace.
    pub root: bool,
    /// A pids cgroup can be made (root only), or why not.
    pub pids_cgroup: Result<(), String>,
}

impl Default for Containment {
    /// Nothing probed, not root: the subreaper fallback.
    fn default() -> Self {
        Self {
            namespaces: Err("not probed".to_owned()),
            root: false,
            pids_cgroup: Err("not probed".to_owned()),
        }
    }
}

impl Containment {
    /// What ends a command's processes with its call, for the approval card.
    pub fn processes(&self) -> &'static str {
        if self.namespaces.is_ok() {
            "a PID namespace: every process it starts ends with the call"
        } else {
            "a subreaper: every process it starts is killed when the call ends"
        }
    }

    /// One line for `doctor` and the start of `serve`.
    pub fn describe(&self) -> String {
        let processes = match &self.namespaces {
            Ok(()) => "PID and mount namespaces (background processes end with the call; \
                       read-only outside the workspace, workspace nodev)"
                .to_owned(),
            Err(why) => format!(
                "a subreaper (no namespaces: {why}); nothing outside the workspace is made \
                 read-only"
            ),
        };
        let user = if self.root {
            let cgroup = match &self.pids_cgroup {
                Ok(()) => "a pids cgroup".to_owned(),
                Err(why) => format!("no pids cgroup ({why})"),
            };
            format!("; as root: commands run as their workspace's owner, {cgroup}")
        } else {
            String::new()
        };
        format!("{processes}{user}")
    }

    /// Why a command cannot run in `workspace` here, if it cannot: under root a
    /// root-owned workspace keeps uid 0, which needs both a pids cgroup and the
    /// read-only mount namespace.
    pub fn refuses(&self, workspace: &Path) -> Option<String> {
        if !self.root || !root_owned(workspace) {
            return None;
        }
        let missing: Vec<String> = [
            self.namespaces
                .as_ref()
                .err()
                .map(|why| format!("no mount namespace: {why}")),
            self.pids_cgroup
                .as_ref()
                .err()
                .map(|why| format!("no pids cgroup: {why}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!missing.is_empty()).then(|| {
            format!(
                "PocketPilot runs as root and the workspace belongs to root, so commands \
                 would run as root; that needs a pids cgroup and a read-only mount \
                 namespace ({}); give the workspace to another user (chown) or fix that",
                missing.join("; ")
            )
        })
    }
}

/// Whether a command in `workspace` would keep uid 0: PocketPilot runs as root and the
/// workspace belongs to root (or its owner cannot be read). Only then does
/// [`Containment::refuses`] need the probe; anywhere else a caller may skip it.
pub fn would_run_as_root(workspace: &Path) -> bool {
    rustix::process::geteuid().is_root() && root_owned(workspace)
}

/// `workspace` belongs to root, or its owner cannot be read.
fn root_owned(workspace: &Path) -> bool {
    !crate::privileges::owner(workspace).is_ok_and(|owner| owner.uid != 0)
}

impl Sandbox {
    /// What contains commands on this system: starts the sandbox child once to see
    /// whether it can make namespaces, and (under root) makes and removes a pids cgroup.
    pub fn containment(&self) -> Containment {
        self.containment_with(None)
    }

    /// [`Sandbox::containment`], reading the namespace answer from `started` (a child
    /// [`Sandbox::start_probe`] started earlier, so its start overlapped other work)
    /// instead of starting one now.
    pub fn containment_with(&self, started: Option<ProbeChild>) -> Containment {
        let root = rustix::process::geteuid().is_root();
        let pids_cgroup = if root {
            PidsCgroup::create(1).map(drop)
        } else {
            Err("not needed: PocketPilot does not run as root".to_owned())
        };
        Containment {
            namespaces: if self.tries_namespaces() {
                started.unwrap_or_else(|| self.start_probe()).answer()
            } else {
                Err("turned off".to_owned())
            },
            root,
            pids_cgroup,
        }
    }

    /// Starts the sandbox child that tries to make the namespaces, without waiting for
    /// it: [`Sandbox::containment_with`] reads its answer.
    pub fn start_probe(&self) -> ProbeChild {
        let started = serde_json::to_string(&Stage::Probe)
            .map_err(|error| error.to_string())
            .and_then(|message| {
                Command::new(&self.program)
                    .args(&self.args)
                    .arg(message)
                    .env_clear()
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|error| format!("cannot start {}: {error}", self.program.display()))
            });
        ProbeChild(Some(started))
    }
}

/// The namespace probe's sandbox child, started ([`Sandbox::start_probe`]) and not yet
/// read. Dropped unread, it is killed and reaped: no zombie is left behind.
#[derive(Debug)]
pub struct ProbeChild(Option<Result<Child, String>>);

impl ProbeChild {
    /// Waits for the child: whether it could make the namespaces, or why not.
    fn answer(mut self) -> Result<(), String> {
        let child = self
            .0
            .take()
            .unwrap_or_else(|| Err("the sandbox child was read twice".to_owned()))?;
        let output = child
            .wait_with_output()
            .map_err(|error| format!("the sandbox child could not be read: {error}"))?;
        let answer = String::from_utf8_lossy(&output.stdout);
        match answer.trim() {
            "namespaces" => Ok(()),
            other => Err(other
                .strip_prefix("no namespaces: ")
                .unwrap_or("the sandbox child did not answer")
                .to_owned()),
        }
    }
}

impl Drop for ProbeChild {
    fn drop(&mut self) {
        if let Some(Ok(mut child)) = self.0.take() {
            // It ends within milliseconds on its own; killing it only makes that sure.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
