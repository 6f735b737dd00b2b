//! Dropping privileges in the sandbox child, before anything of the command runs.
//!
//! Whoever runs PocketPilot, the command holds no capability: the bounding, ambient,
//! effective, permitted and inheritable sets are emptied, `SECBIT_NOROOT` (locked) stops
//! uid 0 from regaining any at `exec`, and `no_new_privs` stops set-user-ID programs
//! and file capabilities. Under root that is not enough: uid 0 without capabilities
//! still owns every root-owned file (Landlock does not govern chmod, chown, utime or
//! setxattr) and is exempt from nothing less than `RLIMIT_NPROC`. So a root PocketPilot
//! runs the command as the owner (uid and gid) of the workspace folder; only a
//! root-owned workspace keeps uid 0, and then the caller has set up a pids cgroup and
//! a read-only mount namespace.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use nix::unistd::{Gid, Uid, setgroups, setresgid, setresuid};
use rustix::io::Errno;
use rustix::thread::{
    CapabilitiesSecureBits, CapabilitySet, CapabilitySets, capabilities,
    clear_ambient_capability_set, remove_capability_from_bounding_set, set_capabilities,
    set_capabilities_secure_bits, set_no_new_privs,
};

use crate::error::{Result, SandboxError};

/// The user and group a command runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

/// The owner of `workspace` (the folder itself).
#[expect(
    clippy::disallowed_methods,
    reason = "the workspace root comes from the operator's config, not from the model; \
              only its owner is read"
)]
pub(crate) fn owner(workspace: &Path) -> Result<Owner> {
    let metadata = std::fs::metadata(workspace).map_err(|error| {
        SandboxError::Privileges(format!(
            "cannot read the owner of the workspace {}: {error}",
            workspace.display()
        ))
    })?;
    Ok(Owner {
        uid: metadata.uid(),
        gid: metadata.gid(),
    })
}

/// Drops every capability for good and, if `run_as` says so, switches to that user
/// (needs root). The capability bounding set and the secure bits need CAP_SETPCAP: a
/// process without it (an ordinary user without a user namespace) has no capability
/// to lose, and `no_new_privs` keeps it so.
pub(crate) fn drop_all(run_as: Option<Owner>) -> Result<()> {
    let privileges = |what: &str, error: Errno| {
        SandboxError::Privileges(format!("{what}: {}", std::io::Error::from(error)))
    };
    let held = capabilities(None).map_err(|error| privileges("capget", error))?;
    if held.effective.contains(CapabilitySet::SETPCAP) {
        set_capabilities_secure_bits(
            CapabilitiesSecureBits::NO_ROOT
                | CapabilitiesSecureBits::NO_ROOT_LOCKED
                | CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE
                | CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE_LOCKED,
        )
        .map_err(|error| privileges("cannot set SECBIT_NOROOT", error))?;
        for bit in 0..64 {
            match remove_capability_from_bounding_set(CapabilitySet::from_bits_retain(1 << bit)) {
                Ok(()) => {}
                // Past the kernel's last capability.
                Err(Errno::INVAL) => break,
                Err(error) => return Err(privileges("cannot empty the bounding set", error)),
            }
        }
    }
    match clear_ambient_capability_set() {
        // A kernel before 4.3 has no ambient set.
        Ok(()) | Err(Errno::INVAL) => {}
        Err(error) => return Err(privileges("cannot empty the ambient set", error)),
    }
    if let Some(owner) = run_as {
        let (uid, gid) = (Uid::from_raw(owner.uid), Gid::from_raw(owner.gid));
        let failed = |what: &str, error: nix::Error| {
            SandboxError::Privileges(format!(
                "cannot become uid {} gid {} ({what}): {error}",
                owner.uid, owner.gid
            ))
        };
        setgroups(&[gid]).map_err(|error| failed("setgroups", error))?;
        setresgid(gid, gid, gid).map_err(|error| failed("setresgid", error))?;
        setresuid(uid, uid, uid).map_err(|error| failed("setresuid", error))?;
    }
    let none = CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    set_capabilities(None, none).map_err(|error| privileges("capset", error))?;
    set_no_new_privs(true).map_err(|error| privileges("no_new_privs", error))?;
    Ok(())
}
