//! What keeps a command's processes and privileges in check on this system, probed
//! once, when a decision first needs it: `doctor`, the start of `serve`, an approval
//! card, a run, or a root-owned workspace under root ([`would_run_as_root`]).

use std::path::Path;
use std::process::{Command, Stdio};

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
        let root = rustix::process::geteuid().is_root();
        let pids_cgroup = if root {
            PidsCgroup::create(1).map(drop)
        } else {
            Err("not needed: PocketPilot does not run as root".to_owned())
        };
        Containment {
            namespaces: if self.tries_namespaces() {
                self.probe_namespaces()
            } else {
                Err("turned off".to_owned())
            },
            root,
            pids_cgroup,
        }
    }

    fn probe_namespaces(&self) -> Result<(), String> {
        let message = serde_json::to_string(&Stage::Probe).map_err(|error| error.to_string())?;
        let output = Command::new(&self.program)
            .args(&self.args)
            .arg(message)
            .env_clear()
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .map_err(|error| format!("cannot start {}: {error}", self.program.display()))?;
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
