//! A confined command that keeps running: a long-lived server (an MCP stdio server)
//! started through the same sandbox child as [`Sandbox::run`], whose standard streams
//! and lifetime the caller owns.
//!
//! [`Sandbox::prepare`] makes the run's pids cgroup (root only) and returns the command
//! that starts `pocketpilot __sandbox MESSAGE` with the spec's environment, in a process
//! group of its own; the caller pipes its streams, spawns it, watches its exit and
//! kills its process group when done (the sandbox child then ends the namespace or, as
//! a subreaper, every descendant; `SIGTERM` to the child asks it to). The returned
//! [`Prepared`] holds the cgroup: dropping it kills whatever is left in it and removes
//! it, so keep it as long as the server runs.
//!
//! A setup failure (Landlock, namespaces, privileges) makes the child write a line
//! starting with [`crate::child::PREFIX`] on stderr and exit with
//! [`crate::child::SETUP_FAILED`]; [`setup_failure`] finds that line in what the caller
//! kept of stderr.

use std::process::Command;

use crate::cgroup::PidsCgroup;
use crate::child::PREFIX;
use crate::error::Result;
use crate::{Sandbox, Spec};

/// The command that starts a confined server, and the cgroup that holds it.
#[derive(Debug)]
pub struct Prepared {
    /// `pocketpilot __sandbox MESSAGE`: cleared environment plus the spec's, its own
    /// process group; the caller sets the standard streams and spawns it.
    pub command: Command,
    /// What must live as long as the server.
    pub held: Held,
}

/// The server's pids cgroup (root only): dropping this kills whatever is left in it and
/// removes it (which may take up to 2 s: drop it off the async threads).
#[derive(Debug)]
pub struct Held {
    cgroup: Option<PidsCgroup>,
}

impl Held {
    /// Whether a pids cgroup holds the server (root only).
    pub fn has_cgroup(&self) -> bool {
        self.cgroup.is_some()
    }
}

impl Sandbox {
    /// The command that starts `spec` confined and keeps it running (see the module
    /// docs). Blocking (it may make a cgroup): call it off the async threads.
    pub fn prepare(&self, spec: &Spec) -> Result<Prepared> {
        let (cgroup, mut command) = self.start_command(spec)?;
        // Its own process group: the kill reaches everything it started.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        Ok(Prepared {
            command,
            held: Held {
                cgroup: cgroup.ok(),
            },
        })
    }
}

/// The reason the sandbox child gave for not starting the command, if `stderr` holds
/// one of its lines.
pub fn setup_failure(stderr: &str) -> Option<&str> {
    stderr
        .lines()
        .find_map(|line| line.trim_start_matches('…').strip_prefix(PREFIX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_childs_reason_is_found_among_other_lines() {
        let stderr = format!("noise\n{PREFIX}cannot confine the command with Landlock: x\n");
        assert_eq!(
            setup_failure(&stderr),
            Some("cannot confine the command with Landlock: x")
        );
        assert_eq!(setup_failure("just the server talking"), None);
    }
}
