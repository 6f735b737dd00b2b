//! The sandbox child's side: `pocketpilot __sandbox SPEC` limits itself, confines
//! itself and `exec`s the command. It returns only when something failed before the
//! command could start; it then says why on stderr, after [`PREFIX`], and exits with
//! [`SETUP_FAILED`] (or 126/127 when the command itself cannot be executed, like a
//! shell).

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::error::SandboxError;
use crate::{Spec, limits, rules, seccomp};

/// What the child's own messages on stderr start with.
pub const PREFIX: &str = "pocketpilot __sandbox: ";

/// The exit code of a child that could not limit or confine itself.
pub const SETUP_FAILED: u8 = 125;

/// The child's main, given the JSON spec: never returns once the command runs.
pub fn main(spec: &str) -> u8 {
    let (error, code) = match serde_json::from_str::<Spec>(spec) {
        Ok(spec) => start(&spec),
        Err(error) => (SandboxError::Spec(error.to_string()), SETUP_FAILED),
    };
    let _ = writeln!(std::io::stderr().lock(), "{PREFIX}{error}");
    code
}

/// Limits, confines and execs; returns only the reason it could not, with the exit code.
fn start(spec: &Spec) -> (SandboxError, u8) {
    let Some((program, args)) = spec.argv.split_first() else {
        return (SandboxError::Spec("no command".to_owned()), SETUP_FAILED);
    };
    if let Err(error) = limits::limit_self(&spec.limits) {
        return (error, SETUP_FAILED);
    }
    if spec.confine
        && let Err(error) = rules::confine(&spec.workspace).and_then(|()| seccomp::deny_sockets())
    {
        return (error, SETUP_FAILED);
    }
    let source = Command::new(program)
        .args(args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(name, value)| (name, value)))
        .exec();
    let code = if source.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    };
    (
        SandboxError::Exec {
            program: program.clone(),
            source,
        },
        code,
    )
}
