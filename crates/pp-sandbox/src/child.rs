//! The sandbox child's side: `pocketpilot __sandbox MESSAGE`, in the stages of
//! `stage.rs`. The first stage isolates itself (pids cgroup, mount and PID
//! namespaces or a subreaper, a read-only view outside the workspace, no capabilities,
//! the workspace owner's uid under root) and supervises; the last limits itself,
//! confines itself and `exec`s the command. A stage that fails before the command could
//! start says why on stderr, after [`PREFIX`], and exits with [`SETUP_FAILED`] (or
//! 126/127 when the command itself cannot be executed, like a shell).

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, sigprocmask};

use crate::error::SandboxError;
use crate::privileges::{self, Owner};
use crate::reaper::{self, Status};
use crate::stage::Stage;
use crate::{Spec, limits, namespaces, rules, seccomp};

/// What the child's own messages on stderr start with.
pub const PREFIX: &str = "pocketpilot __sandbox: ";

/// The exit code of a child that could not limit or confine itself.
pub const SETUP_FAILED: u8 = 125;

/// A failure before the command ran, with the exit code that reports it.
type Failure = (SandboxError, u8);

/// The child's main, given its stage's JSON: never returns once the command runs in
/// the last stage; the earlier stages return the command's exit code.
pub fn main(message: &str) -> u8 {
    // A stage started by the supervisor inherits its blocked signals (std's spawn
    // leaves the mask as it is): nothing of the command may start with them blocked.
    let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
    let result = match serde_json::from_str::<Stage>(message) {
        Ok(Stage::Start {
            spec,
            cgroup,
            namespaces,
        }) => start(&spec, cgroup.as_deref().map_err(String::as_str), namespaces),
        Ok(Stage::Init { spec }) => reaper::init(&Stage::Command { spec })
            .map(|code| u8::try_from(code).unwrap_or(u8::MAX))
            .map_err(|error| (error, SETUP_FAILED)),
        Ok(Stage::Command { spec }) => Err(command(&spec)),
        Ok(Stage::Probe) => Ok(probe()),
        Err(error) => Err((SandboxError::Spec(error.to_string()), SETUP_FAILED)),
    };
    match result {
        Ok(code) => code,
        Err((error, code)) => {
            let _ = writeln!(std::io::stderr().lock(), "{PREFIX}{error}");
            code
        }
    }
}

/// Stage 1: isolates, drops privileges, supervises; returns the command's exit code
/// (or dies of the signal that killed it).
fn start(spec: &Spec, cgroup: Result<&Path, &str>, try_namespaces: bool) -> Result<u8, Failure> {
    let setup = |error: SandboxError| (error, SETUP_FAILED);
    limits::no_core_dumps().map_err(setup)?;
    if let Ok(dir) = cgroup {
        crate::cgroup::join(dir).map_err(|error| {
            setup(SandboxError::Isolation(format!(
                "cannot join the pids cgroup {}: {error}",
                dir.display()
            )))
        })?;
    }
    let root = rustix::process::geteuid().is_root();
    let owner = privileges::owner(&spec.workspace).map_err(setup)?;
    let run_as = (root && owner.uid != 0).then_some(owner);
    let keeps_root = root && run_as.is_none();
    if let (true, Err(why)) = (keeps_root, cgroup) {
        return Err(setup(SandboxError::Isolation(format!(
            "the workspace {} belongs to root, so the command would run as root, and no \
             pids cgroup caps its processes: {why}",
            spec.workspace.display()
        ))));
    }
    let namespaces = match try_namespaces.then(|| namespaces::enter(root)) {
        Some(Ok(())) => true,
        Some(Err(error)) if keeps_root => return Err(setup(error)),
        None if keeps_root => {
            return Err(setup(SandboxError::Isolation(
                "a command that runs as root needs a mount namespace".to_owned(),
            )));
        }
        _ => false,
    };
    if namespaces && spec.confine {
        namespaces::protect_mounts(&spec.writable_roots()).map_err(setup)?;
    }
    drop_privileges(run_as).map_err(setup)?;
    let next = if namespaces {
        Stage::Init { spec: spec.clone() }
    } else {
        nix::sys::prctl::set_child_subreaper(true).map_err(|error| {
            setup(SandboxError::Supervise(format!(
                "cannot become a subreaper: {error}"
            )))
        })?;
        Stage::Command { spec: spec.clone() }
    };
    match reaper::supervise(&next, namespaces).map_err(setup)? {
        Status::Exited(code) => Ok(u8::try_from(code).unwrap_or(u8::MAX)),
        Status::Signalled(signal) => Ok(die_of(signal)),
    }
}

/// Drops every capability (and the uid, to `run_as`), then asks for `SIGTERM` when the
/// runner goes away (after the uid change, which clears it).
fn drop_privileges(run_as: Option<Owner>) -> crate::error::Result<()> {
    privileges::drop_all(run_as)?;
    nix::sys::prctl::set_pdeathsig(Signal::SIGTERM).map_err(|error| {
        SandboxError::Supervise(format!("cannot set the parent-death signal: {error}"))
    })
}

/// Ends this process with `signal`, as the command ended; returns 128 + the signal if
/// the signal does not end a process.
fn die_of(signal: i32) -> u8 {
    if let Ok(signal) = Signal::try_from(signal) {
        let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
        let _ = kill(nix::unistd::getpid(), signal);
    }
    u8::try_from(128 + signal).unwrap_or(u8::MAX)
}

/// The last stage: limits, confines and execs; returns only the reason it could not,
/// with the exit code.
fn command(spec: &Spec) -> Failure {
    let Some((program, args)) = spec.argv.split_first() else {
        return (SandboxError::Spec("no command".to_owned()), SETUP_FAILED);
    };
    // Without namespaces nothing else ends the command with its supervisor.
    if let Err(error) = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL) {
        return (
            SandboxError::Supervise(format!("cannot set the parent-death signal: {error}")),
            SETUP_FAILED,
        );
    }
    if let Err(error) = limits::limit_self(&spec.limits) {
        return (error, SETUP_FAILED);
    }
    if spec.confine
        && let Err(error) = rules::confine(spec).and_then(|()| {
            if spec.network {
                Ok(())
            } else {
                seccomp::deny_sockets()
            }
        })
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

/// [`Stage::Probe`]: prints `namespaces` or `no namespaces: why` on stdout.
fn probe() -> u8 {
    let answer = match namespaces::probe() {
        Ok(()) => "namespaces".to_owned(),
        Err(why) => format!("no namespaces: {why}"),
    };
    let _ = writeln!(std::io::stdout().lock(), "{answer}");
    0
}
