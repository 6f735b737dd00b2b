//! The resource limits the sandbox child puts on itself before `exec`.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

use crate::ResourceLimits;
use crate::error::{Result, SandboxError};

/// Sets CPU time, address space, processes, file size and no core dumps on this
/// process; never more than the inherited hard limits.
pub(crate) fn limit_self(limits: &ResourceLimits) -> Result<()> {
    set(Resource::Core, "core", 0, 0)?;
    // `UNLIMITED` (`u64::MAX`) is `RLIM_INFINITY`: saturating keeps it so.
    let cpu = limits.cpu_secs.max(1);
    set(Resource::Cpu, "cpu", cpu, cpu.saturating_add(1))?;
    set(
        Resource::As,
        "memory",
        limits.memory_bytes,
        limits.memory_bytes,
    )?;
    let processes = limits.processes.max(1);
    set(Resource::Nproc, "processes", processes, processes)?;
    set(
        Resource::Fsize,
        "file size",
        limits.file_size_bytes,
        limits.file_size_bytes,
    )?;
    Ok(())
}

/// No core dumps for the sandbox child itself (it may re-raise the command's signal).
pub(crate) fn no_core_dumps() -> Result<()> {
    set(Resource::Core, "core", 0, 0)
}

fn set(resource: Resource, name: &'static str, soft: u64, hard: u64) -> Result<()> {
    // Asking for more than the inherited hard limit would be refused.
    let inherited = getrlimit(resource).maximum;
    let hard = inherited.map_or(hard, |inherited| hard.min(inherited));
    let soft = soft.min(hard);
    setrlimit(
        resource,
        Rlimit {
            current: Some(soft),
            maximum: Some(hard),
        },
    )
    .map_err(|error| SandboxError::Limit {
        resource: name,
        source: error.into(),
    })
}
