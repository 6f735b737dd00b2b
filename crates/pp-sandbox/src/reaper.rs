//! Keeping every process of a command to its call.
//!
//! With a PID namespace, [`init`] is its PID 1: it starts the command (PID 2, so the
//! signals `RLIMIT_CPU` and `RLIMIT_FSIZE` send are not ignored as they are by a PID 1),
//! reaps whatever is reparented to it, and exits as soon as the command exits, which
//! makes the kernel kill everything left in the namespace. Without one, the sandbox
//! child is a subreaper: orphans of the command become its children, and once the
//! command exits it kills its children until none is left ([`kill_descendants`]).
//!
//! Either way the sandbox child ([`supervise`]) waits with `SIGTERM` and `SIGCHLD`
//! read from a signalfd: the runner asks it to stop with `SIGTERM` (wall clock, the
//! task's interrupt), and it then kills the namespace's init or every descendant
//! itself before it exits, so a process that left the process group dies too.

use std::path::Path;
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, kill, sigprocmask};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use crate::error::{Result, SandboxError};
use crate::stage::{self, Stage};

/// How a supervised process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Exited(i32),
    Signalled(i32),
}

fn supervise_error(what: &str, error: impl std::fmt::Display) -> SandboxError {
    SandboxError::Supervise(format!("{what}: {error}"))
}

/// Starts `next` and waits for it (stage 1). With `namespaces`, `next` is the
/// namespace's init and its exit code carries the command's status (128 + the signal
/// for a signal, as a shell reports it); without, this process is the subreaper.
pub(crate) fn supervise(next: &Stage, namespaces: bool) -> Result<Status> {
    let mut watched = SigSet::empty();
    for signal in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        watched.add(signal);
    }
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&watched), None)
        .map_err(|error| supervise_error("cannot block signals", error))?;
    let signals = SignalFd::with_flags(&watched, SfdFlags::SFD_CLOEXEC)
        .map_err(|error| supervise_error("cannot open a signalfd", error))?;
    // The next stage inherits the mask and clears it first thing (`child::main`).
    let child = stage::next(next)
        .and_then(|mut command| command.spawn())
        .map_err(|error| supervise_error("cannot start the next stage", error))?;
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let status = loop {
        let signal = match signals.read_signal() {
            Ok(Some(info)) => info.ssi_signo,
            Ok(None) | Err(Errno::EINTR) => continue,
            Err(error) => return Err(supervise_error("cannot read signals", error)),
        };
        if signal == Signal::SIGCHLD as u32 {
            if let Some(status) = reap(pid)? {
                break status;
            }
        } else {
            // Asked to stop: the command and everything it started end now.
            let _ = kill(pid, Signal::SIGKILL);
            if !namespaces {
                kill_descendants();
            }
        }
    };
    if !namespaces {
        kill_descendants();
    }
    Ok(match status {
        Status::Exited(code) if namespaces && (129..=128 + 64).contains(&code) => {
            Status::Signalled(code - 128)
        }
        status => status,
    })
}

/// Reaps every child that has ended; the status of `pid` once it has.
fn reap(pid: Pid) -> Result<Option<Status>> {
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(ended, code)) if ended == pid => {
                return Ok(Some(Status::Exited(code)));
            }
            Ok(WaitStatus::Signaled(ended, signal, _)) if ended == pid => {
                return Ok(Some(Status::Signalled(signal as i32)));
            }
            Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => return Ok(None),
            Ok(_) | Err(Errno::EINTR) => {}
            Err(error) => return Err(supervise_error("cannot reap", error)),
        }
    }
}

/// PID 1 of the command's namespace (stage 2): starts the command, reaps everything,
/// and returns the command's exit code (128 + the signal that killed it) once it ends.
pub(crate) fn init(command: &Stage) -> Result<i32> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
        .map_err(|error| supervise_error("cannot set the parent-death signal", error))?;
    let child = stage::next(command)
        .and_then(|mut command| command.spawn())
        .map_err(|error| supervise_error("cannot start the command stage", error))?;
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    loop {
        match waitpid(None, None) {
            Ok(WaitStatus::Exited(ended, code)) if ended == pid => return Ok(code),
            Ok(WaitStatus::Signaled(ended, signal, _)) if ended == pid => {
                return Ok(128 + signal as i32);
            }
            Ok(_) | Err(Errno::EINTR) => {}
            Err(error) => return Err(supervise_error("cannot reap", error)),
        }
    }
}

/// Kills the subreaper's children, and the children reparented to it as they die,
/// until it has none left.
pub(crate) fn kill_descendants() {
    let me = std::process::id();
    loop {
        // No child left (the common case): nothing to look for in /proc.
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Err(Errno::ECHILD) => return,
                Ok(WaitStatus::StillAlive) => break,
                Ok(_) | Err(Errno::EINTR) => {}
                Err(_) => return,
            }
        }
        for child in children_of(me) {
            let _ = kill(child, Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The processes whose parent is `parent`, from `/proc`.
#[expect(
    clippy::disallowed_methods,
    reason = "reads /proc to find the subreaper's children, never a model-supplied path"
)]
fn children_of(parent: u32) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat"))
                .ok()
                .and_then(|stat| parent_in_stat(&stat))
                == Some(parent)
        })
        .map(Pid::from_raw)
        .collect()
}

/// The parent pid in a `/proc/PID/stat` line (after the command name, which may hold
/// spaces and parentheses).
fn parent_in_stat(stat: &str) -> Option<u32> {
    let (_, after) = stat.rsplit_once(") ")?;
    after.split(' ').nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_read_past_an_odd_command_name() {
        assert_eq!(parent_in_stat("42 (a) b (c)) S 17 42 42 0"), Some(17));
        assert_eq!(parent_in_stat("garbage"), None);
    }
}
