//! The parent's side: starts `pocketpilot __sandbox MESSAGE`, feeds stdin, keeps capped
//! stdout and stderr; at the wall clock and on the caller's stop it asks the sandbox
//! child to end everything (`SIGTERM`), and it kills the process group and the run's
//! pids cgroup (root only) when the run is over.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::process::{Pid, PidfdFlags, Signal, WaitIdOptions, kill_process_group, pidfd_open};

use crate::Spec;
use crate::cgroup::PidsCgroup;
use crate::child::{PREFIX, SETUP_FAILED};
use crate::error::{Result, SandboxError};
use crate::stage::Stage;

/// How often the stop check runs while the command is running.
const STOP_CHECK: Duration = Duration::from_millis(50);

/// How long the output readers are waited for once the process group is gone (a
/// process that left the group may hold the pipes open).
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// How long the sandbox child has to end everything after `SIGTERM` before the process
/// group is killed.
const TERMINATE_GRACE: Duration = Duration::from_secs(2);

/// Processes of a run besides the command's: the sandbox child and the namespace's
/// init (the pids cgroup counts them).
const SUPERVISORS: u64 = 2;

/// How to start the sandbox child: a program and its arguments (`pocketpilot
/// __sandbox`); the stage's JSON is appended as the last argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<String>,
    namespaces: bool,
}

/// What one run may use besides the spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    /// Bytes written to the command's stdin (then closed); `None`: stdin is `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// Wall-clock time before the process group is killed.
    pub timeout: Duration,
    /// The most bytes kept of stdout and of stderr each.
    pub output_bytes: u64,
}

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it (SIGXCPU: the CPU limit; SIGKILL: a second after it).
    Signalled(i32),
    /// The wall clock ran out; the group was killed.
    TimedOut,
    /// The caller's stop check said stop; the group was killed.
    Stopped,
}

/// One output stream, capped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The first bytes, at most [`RunOptions::output_bytes`].
    pub bytes: Vec<u8>,
    /// How many bytes the command wrote in all.
    pub total: u64,
}

impl Captured {
    /// Whether more was written than kept.
    pub fn truncated(&self) -> bool {
        u64::try_from(self.bytes.len()).unwrap_or(u64::MAX) < self.total
    }
}

/// A finished run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// How it ended.
    pub end: End,
    /// Its stdout, capped.
    pub stdout: Captured,
    /// Its stderr, capped.
    pub stderr: Captured,
    /// Wall-clock time from start to end.
    pub elapsed: Duration,
}

impl Sandbox {
    /// A sandbox started as `program args… SPEC`.
    pub fn new(program: PathBuf, args: Vec<String>) -> Self {
        Self {
            program,
            args,
            namespaces: true,
        }
    }

    /// The same sandbox, never trying namespaces: the subreaper fallback every system
    /// without them gets (the tests prove the fallback on a machine that has them).
    #[must_use]
    pub fn without_namespaces(mut self) -> Self {
        self.namespaces = false;
        self
    }

    /// Whether this sandbox tries namespaces at all.
    pub fn tries_namespaces(&self) -> bool {
        self.namespaces
    }

    /// The pids cgroup of one run (root only; why not otherwise) and the command that
    /// starts the sandbox child for `spec`: our program and arguments plus the start
    /// stage, with a cleared environment plus the spec's (the child never sees ours: API
    /// keys), which it passes on.
    pub(crate) fn start_command(
        &self,
        spec: &Spec,
    ) -> Result<(std::result::Result<PidsCgroup, String>, Command)> {
        let cgroup = if rustix::process::geteuid().is_root() {
            PidsCgroup::create(spec.limits.processes.max(1).saturating_add(SUPERVISORS))
        } else {
            Err("PocketPilot does not run as root".to_owned())
        };
        let stage = Stage::Start {
            spec: spec.clone(),
            cgroup: cgroup
                .as_ref()
                .map(|cgroup| cgroup.path().to_path_buf())
                .map_err(Clone::clone),
            namespaces: self.namespaces,
        };
        let encoded =
            serde_json::to_string(&stage).map_err(|error| SandboxError::Spec(error.to_string()))?;
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .arg(encoded)
            .env_clear()
            .envs(spec.env.iter().map(|(name, value)| (name, value)));
        Ok((cgroup, command))
    }

    /// Runs `spec` under `options`, calling `stop` about every 50 ms: once it says
    /// `true` the process group is killed. Blocking: call it off the async threads.
    /// Whatever happens, the process group is killed and the child reaped before this
    /// returns.
    pub fn run(
        &self,
        spec: &Spec,
        options: &RunOptions,
        stop: &dyn Fn() -> bool,
    ) -> Result<Finished> {
        // Dropped after the guard below: whatever is left in it is killed, then it goes.
        let (_cgroup, mut command) = self.start_command(spec)?;
        let started = Instant::now();
        let deadline = started + options.timeout;
        command
            .stdin(if options.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own process group: the kill reaches everything it started.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let spawned = pp_types::open_files::spawn_with_original(|| command.spawn());
        let child = spawned.map_err(|source| SandboxError::Start {
            program: self.program.display().to_string(),
            source,
        })?;
        let mut guard = GroupGuard {
            child,
            reaped: false,
        };
        if let (Some(mut pipe), Some(bytes)) = (guard.child.stdin.take(), options.stdin.clone()) {
            // A command that does not read its input makes this fail: nothing to do.
            std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            });
        }
        let stdout = guard
            .child
            .stdout
            .take()
            .map(|pipe| Reader::start(pipe, options.output_bytes));
        let stderr = guard
            .child
            .stderr
            .take()
            .map(|pipe| Reader::start(pipe, options.output_bytes));

        let end = guard.wait(deadline, stop)?;
        let stdout = stdout.map(Reader::finish).unwrap_or_default();
        let stderr = stderr.map(Reader::finish).unwrap_or_default();
        if let End::Exited(code) = end
            && u8::try_from(code).is_ok_and(|code| code == SETUP_FAILED)
        {
            let said = String::from_utf8_lossy(&stderr.bytes);
            if let Some(reason) = said.lines().find_map(|line| line.strip_prefix(PREFIX)) {
                return Err(SandboxError::Setup(reason.to_owned()));
            }
        }
        Ok(Finished {
            end,
            stdout,
            stderr,
            elapsed: started.elapsed(),
        })
    }
}

/// Reads one pipe on its own thread: keeps the first bytes, counts the rest.
struct Reader {
    captured: Arc<Mutex<Captured>>,
    done: mpsc::Receiver<()>,
}

impl Reader {
    fn start(mut pipe: impl Read + Send + 'static, cap: u64) -> Self {
        let captured = Arc::new(Mutex::new(Captured::default()));
        let (sender, done) = mpsc::channel();
        let shared = Arc::clone(&captured);
        std::thread::spawn(move || {
            let mut buffer = [0_u8; 16 << 10];
            loop {
                let read = match pipe.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(read) => read,
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                let mut captured = shared.lock().unwrap_or_else(PoisonError::into_inner);
                let kept = u64::try_from(captured.bytes.len()).unwrap_or(u64::MAX);
                let room = usize::try_from(cap.saturating_sub(kept)).unwrap_or(usize::MAX);
                let chunk = &buffer[..read];
                captured.bytes.extend_from_slice(&chunk[..read.min(room)]);
                captured.total = captured
                    .total
                    .saturating_add(u64::try_from(read).unwrap_or(u64::MAX));
            }
            let _ = sender.send(());
        });
        Self { captured, done }
    }

    /// What was read, once the pipe closed or after a short grace (a process outside
    /// the group may keep it open: its later output is not waited for).
    fn finish(self) -> Captured {
        let _ = self.done.recv_timeout(DRAIN_GRACE);
        let captured = self.captured.lock().unwrap_or_else(PoisonError::into_inner);
        captured.clone()
    }
}

/// Kills the child's process group and reaps the child when dropped, unless reaped.
struct GroupGuard {
    child: Child,
    reaped: bool,
}

impl GroupGuard {
    /// Waits for the child to end, the deadline or `stop`; then kills the group (the
    /// child is not reaped before that, so its pid, the group's id, cannot be reused)
    /// and reaps the child.
    fn wait(&mut self, deadline: Instant, stop: &dyn Fn() -> bool) -> Result<End> {
        let pid = Pid::from_child(&self.child);
        let pidfd = pidfd_open(pid, PidfdFlags::empty()).ok();
        let stopped = loop {
            if stop() {
                break Some(End::Stopped);
            }
            let now = Instant::now();
            if now >= deadline {
                break Some(End::TimedOut);
            }
            let slice = STOP_CHECK.min(deadline - now);
            let exited = match &pidfd {
                Some(pidfd) => {
                    let timeout = Timespec {
                        tv_sec: i64::try_from(slice.as_secs()).unwrap_or(i64::MAX),
                        tv_nsec: i64::from(slice.subsec_nanos()),
                    };
                    let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
                    match poll(&mut fds, Some(&timeout)) {
                        Ok(ready) => ready > 0,
                        Err(rustix::io::Errno::INTR) => false,
                        Err(error) => return Err(SandboxError::Wait(error.into())),
                    }
                }
                None => {
                    // No pidfd (a kernel before 5.3): look without reaping, then sleep.
                    let options =
                        WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
                    let found = rustix::process::waitid(rustix::process::WaitId::Pid(pid), options)
                        .map_err(|error| SandboxError::Wait(error.into()))?;
                    if found.is_none() {
                        std::thread::sleep(slice.min(Duration::from_millis(5)));
                    }
                    found.is_some()
                }
            };
            if exited {
                break None;
            }
        };
        if stopped.is_some() {
            self.terminate(pid, pidfd.as_ref());
        }
        self.kill_group();
        let status = self.child.wait().map_err(SandboxError::Wait)?;
        self.reaped = true;
        if let Some(end) = stopped {
            return Ok(end);
        }
        Ok(match (status.code(), signal_of(status)) {
            (Some(code), _) => End::Exited(code),
            (None, Some(signal)) => End::Signalled(signal),
            (None, None) => End::Exited(-1),
        })
    }

    /// Asks the sandbox child to end the command and everything it started (it kills
    /// the namespace or, as a subreaper, every descendant), and waits a little for it.
    fn terminate(&self, pid: Pid, pidfd: Option<&rustix::fd::OwnedFd>) {
        let _ = rustix::process::kill_process(pid, Signal::TERM);
        let Some(pidfd) = pidfd else {
            std::thread::sleep(Duration::from_millis(100));
            return;
        };
        let timeout = Timespec {
            tv_sec: i64::try_from(TERMINATE_GRACE.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: 0,
        };
        let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
        let _ = poll(&mut fds, Some(&timeout));
    }

    /// Kills every process of the group (the child included).
    fn kill_group(&mut self) {
        if self.reaped {
            return;
        }
        let group = Pid::from_child(&self.child);
        let _ = kill_process_group(group, Signal::KILL);
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        self.kill_group();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn signal_of(status: std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}
