//! The Landlock ruleset of a confined command, and what the running kernel supports.
//!
//! Handled (so denied unless a rule below grants it): every filesystem access the
//! kernel knows, TCP bind and connect (ABI 4), on newer kernels UDP bind and send (ABI
//! 10) and connecting to pathname UNIX sockets (ABI 9); scoped: signals to processes
//! outside the sandbox and abstract UNIX sockets created outside it (ABI 6). Files and
//! TCP are hard requirements: without them the child refuses to run the command.
//!
//! Granted:
//! - everything beneath the workspace but making device nodes and device ioctls
//!   ([`workspace_access`]), or only read and execute there, or nothing, as the spec's
//!   [`WorkspaceAccess`] says (an MCP server's `[mcp.server.sandbox] workspace`);
//! - the spec's extra `read` paths (read and execute) and `write` paths (like the
//!   workspace), an MCP server's start needs and its declared paths;
//! - read and execute beneath [`SYSTEM_DIRS`] (`/usr`, `/bin`, `/sbin`, `/lib*`);
//! - read beneath each entry of `/etc` except [`ETC_HIDDEN`] (secrets: password hashes,
//!   SSH host keys, TLS private keys, …), listed when the command starts;
//! - read and write on `/dev/null`, `/dev/zero`, `/dev/full`; read on `/dev/random`
//!   and `/dev/urandom`; no device ioctls anywhere.
//!
//! Nothing else: not the data directory, not the home directory, not `/tmp`, `/proc`,
//! `/sys`, `/run`, `/var`, `/opt`, `/root`, `/home`; no TCP port at all (with the
//! spec's `network`, TCP and UDP are not handled, so not restricted).

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

use crate::error::{Result, SandboxError};
use crate::{Spec, WorkspaceAccess};

/// System folders a command may read and execute from.
pub const SYSTEM_DIRS: [&str; 7] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// Entries of `/etc` a command may not read (paths relative to `/etc`).
pub const ETC_HIDDEN: [&str; 17] = [
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "sudoers",
    "sudoers.d",
    "ssh",
    "ssl/private",
    "credstore",
    "credstore.encrypted",
    "NetworkManager/system-connections",
    "wireguard",
    "ipsec.secrets",
    "krb5.keytab",
    "letsencrypt",
    "security/opasswd",
    "pocketpilot",
];

/// Devices a command may read and write.
const DEVICES_RW: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];

/// Devices a command may read.
const DEVICES_RO: [&str; 2] = ["/dev/random", "/dev/urandom"];

/// What Landlock offers on the running kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Support {
    /// Filesystem rules (ABI 1).
    pub files: bool,
    /// TCP bind and connect rules (ABI 4).
    pub tcp: bool,
    /// Signal and abstract UNIX socket scopes (ABI 6).
    pub scopes: bool,
    /// Pathname UNIX socket connect rules (ABI 9).
    pub unix_sockets: bool,
    /// UDP bind and send rules (ABI 10).
    pub udp: bool,
    /// The seccomp filter that refuses sockets can be built for this architecture
    /// (x86-64, AArch64, RISC-V 64).
    pub socket_filter: bool,
}

impl Support {
    /// Whether confined commands can be offered: files and TCP (ABI 4 or later), and
    /// the socket filter.
    pub fn usable(&self) -> bool {
        self.files && self.tcp && self.socket_filter
    }

    /// The lowest Landlock ABI with everything found (0: no Landlock).
    pub fn abi_at_least(&self) -> u8 {
        match *self {
            Self { udp: true, .. } => 10,
            Self {
                unix_sockets: true, ..
            } => 9,
            Self { scopes: true, .. } => 6,
            Self { tcp: true, .. } => 4,
            Self { files: true, .. } => 1,
            _ => 0,
        }
    }

    /// One line for logs and `doctor`.
    pub fn describe(&self) -> String {
        if !self.files {
            return "Landlock is not available in this kernel".to_owned();
        }
        let mut parts = vec!["files"];
        if self.tcp {
            parts.push("TCP");
        }
        if self.scopes {
            parts.push("signal and abstract-socket scopes");
        }
        if self.unix_sockets {
            parts.push("UNIX sockets");
        }
        if self.udp {
            parts.push("UDP");
        }
        if self.socket_filter {
            parts.push("no sockets (seccomp)");
        }
        format!(
            "Landlock ABI {} or later: {}",
            self.abi_at_least(),
            parts.join(", ")
        )
    }
}

/// What Landlock the running kernel offers (creates and drops rulesets; restricts
/// nothing).
pub fn probe() -> Support {
    fn creates(
        build: impl FnOnce(Ruleset) -> std::result::Result<Ruleset, landlock::RulesetError>,
    ) -> bool {
        build(Ruleset::default().set_compatibility(CompatLevel::HardRequirement))
            .and_then(Ruleset::create)
            .is_ok()
    }
    Support {
        files: creates(|ruleset| ruleset.handle_access(AccessFs::from_all(ABI::V1))),
        tcp: creates(|ruleset| ruleset.handle_access(AccessNet::from_all(ABI::V4))),
        scopes: creates(|ruleset| ruleset.scope(Scope::from_all(ABI::V6))),
        unix_sockets: creates(|ruleset| ruleset.handle_access(AccessFs::ResolveUnix)),
        udp: creates(|ruleset| ruleset.handle_access(AccessNet::from_all(ABI::V10))),
        socket_filter: crate::seccomp::supported(),
    }
}

/// Restricts the calling thread (the sandbox child's only thread) to the ruleset above
/// for `spec`, with `no_new_privs`: the workspace as its [`WorkspaceAccess`] says, its
/// extra `read` and `write` paths, and no network unless `spec.network` (then the TCP
/// and UDP rules are not handled at all). The domain survives `exec`.
pub(crate) fn confine(spec: &Spec) -> Result<()> {
    let landlock = |error: landlock::RulesetError| SandboxError::Landlock(error.to_string());
    let read = AccessFs::from_read(ABI::V10);
    let open = |path: &Path, what: &str| {
        PathFd::new(path).map_err(|error| {
            SandboxError::Landlock(format!("cannot open {what} {}: {error}", path.display()))
        })
    };
    let mut granted: Vec<(PathFd, landlock::BitFlags<AccessFs>)> = Vec::new();
    match spec.workspace_access {
        WorkspaceAccess::Write => {
            granted.push((open(&spec.workspace, "the workspace")?, workspace_access()));
        }
        WorkspaceAccess::Read => granted.push((open(&spec.workspace, "the workspace")?, read)),
        WorkspaceAccess::None => {}
    }
    for path in &spec.read {
        granted.push((open(path, "the readable path")?, read));
    }
    for path in &spec.write {
        granted.push((open(path, "the writable path")?, workspace_access()));
    }
    // No device ioctls, not even on /dev/null.
    let device_rw = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
    let handled = Ruleset::default()
        // Files (and TCP, unless the network is allowed) are required: without them
        // there is no confinement worth the name.
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V4));
    let handled = if spec.network {
        handled
    } else {
        handled.and_then(|ruleset| ruleset.handle_access(AccessNet::from_all(ABI::V4)))
    };
    // Whatever newer kernels add (device ioctls, UNIX sockets, UDP, scopes) is taken
    // where it exists.
    let handled = handled
        .map(|ruleset| ruleset.set_compatibility(CompatLevel::BestEffort))
        .and_then(|ruleset| ruleset.handle_access(AccessFs::from_all(ABI::V10)));
    let handled = if spec.network {
        handled
    } else {
        handled.and_then(|ruleset| ruleset.handle_access(AccessNet::from_all(ABI::V10)))
    };
    let status = handled
        .and_then(|ruleset| ruleset.scope(Scope::from_all(ABI::V10)))
        .and_then(Ruleset::create)
        .and_then(|ruleset| {
            ruleset.add_rules(
                granted.into_iter().map(|(fd, access)| {
                    Ok::<_, landlock::RulesetError>(PathBeneath::new(fd, access))
                }),
            )
        })
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(SYSTEM_DIRS, read)))
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(etc_entries(), read)))
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(DEVICES_RW, device_rw)))
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(DEVICES_RO, AccessFs::ReadFile)))
        .and_then(|ruleset| ruleset.restrict_self())
        .map_err(landlock)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(SandboxError::Landlock(
            "the kernel did not enforce the ruleset".to_owned(),
        ));
    }
    if !status.no_new_privs {
        return Err(SandboxError::Landlock(
            "no_new_privs could not be set".to_owned(),
        ));
    }
    Ok(())
}

/// What the workspace grants: every filesystem right but making character and block
/// devices and device ioctls (a device node made there would be a way to the kernel
/// log or the raw disk).
pub fn workspace_access() -> landlock::BitFlags<AccessFs> {
    AccessFs::from_all(ABI::V10) & !(AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::IoctlDev)
}

/// Every path beneath `/etc` that may be read: each entry of `/etc`, except the hidden
/// ones; a folder holding a hidden entry (`ssl` for `ssl/private`) is granted entry by
/// entry instead.
fn etc_entries() -> Vec<PathBuf> {
    let mut granted = Vec::new();
    grant_except(Path::new("/etc"), Path::new(""), &mut granted);
    granted
}

fn grant_except(root: &Path, relative: &Path, granted: &mut Vec<PathBuf>) {
    for name in list(&root.join(relative)) {
        let entry = relative.join(&name);
        let hidden = |hidden: &&str| Path::new(hidden) == entry;
        if ETC_HIDDEN.iter().any(hidden) {
            continue;
        }
        let holds_hidden = ETC_HIDDEN
            .iter()
            .any(|hidden| Path::new(hidden).starts_with(&entry));
        if holds_hidden {
            grant_except(root, &entry, granted);
        } else {
            granted.push(root.join(entry));
        }
    }
}

/// The names in `dir` (nothing when it cannot be read).
#[expect(
    clippy::disallowed_methods,
    reason = "lists the system's /etc to build the sandbox rules, never a model-supplied path"
)]
fn list(dir: &Path) -> Vec<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|entry| entry.file_name()).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etc_grants_every_entry_but_the_hidden_ones() {
        let granted = etc_entries();
        assert!(
            granted.contains(&PathBuf::from("/etc/passwd")),
            "{granted:?}"
        );
        for hidden in ETC_HIDDEN {
            assert!(
                !granted.contains(&Path::new("/etc").join(hidden)),
                "{hidden} is granted"
            );
        }
        // A folder holding a hidden entry is never granted whole.
        assert!(!granted.contains(&PathBuf::from("/etc/ssl")));
        assert!(!granted.contains(&PathBuf::from("/etc/security")));
    }

    #[test]
    fn the_workspace_grants_no_device_node_and_no_device_ioctl() {
        let granted = workspace_access();
        for denied in [AccessFs::MakeChar, AccessFs::MakeBlock, AccessFs::IoctlDev] {
            assert!(!granted.contains(denied), "{denied:?} is granted");
        }
        assert!(granted.contains(AccessFs::WriteFile | AccessFs::MakeReg | AccessFs::RemoveDir));
    }

    #[test]
    fn the_abi_follows_the_newest_feature_found() {
        let support = Support {
            files: true,
            tcp: true,
            scopes: true,
            socket_filter: true,
            ..Support::default()
        };
        assert_eq!(support.abi_at_least(), 6);
        assert!(support.usable());
        let old = Support {
            files: true,
            ..Support::default()
        };
        assert_eq!(old.abi_at_least(), 1);
        assert!(!old.usable());
        assert_eq!(
            Support::default().describe(),
            "Landlock is not available in this kernel"
        );
    }
}
