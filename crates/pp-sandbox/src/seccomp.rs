//! A seccomp filter that closes what Landlock leaves open on older kernels: a confined
//! command cannot create sockets at all (`socket(2)` fails with `EACCES`), so no UDP, no
//! connection to a pathname or abstract UNIX socket outside the sandbox (a Docker or
//! D-Bus socket, say) and no netlink; and it cannot set up `io_uring`, which could open
//! sockets past the filter. `socketpair(2)` (an anonymous pair between the command's own
//! processes) stays allowed. A syscall of another architecture (32-bit `socketcall` on
//! x86-64) kills the process.

use std::collections::BTreeMap;

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};

use crate::error::{Result, SandboxError};

fn seccomp(error: impl std::fmt::Display) -> SandboxError {
    SandboxError::Seccomp(error.to_string())
}

/// Whether the filter can be built for this machine's architecture.
pub(crate) fn supported() -> bool {
    TargetArch::try_from(std::env::consts::ARCH).is_ok()
}

/// Installs the filter on the calling thread (the sandbox child's only one); it
/// survives `exec`. Needs `no_new_privs`, which the Landlock step sets first.
pub(crate) fn deny_sockets() -> Result<()> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(seccomp)?;
    // An empty rule list matches the syscall whatever its arguments.
    let rules = BTreeMap::from([
        (libc::SYS_socket, Vec::new()),
        (libc::SYS_io_uring_setup, Vec::new()),
    ]);
    let denied = SeccompAction::Errno(libc::EACCES.unsigned_abs());
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, denied, arch).map_err(seccomp)?;
    let program: BpfProgram = filter.try_into().map_err(seccomp)?;
    seccompiler::apply_filter(&program).map_err(seccomp)
}
