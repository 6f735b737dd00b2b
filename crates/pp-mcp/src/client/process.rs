//! A stdio server's process: started with a cleared environment plus exactly the
//! configured variables, in a process group of its own (so whatever it spawns dies with
//! it), its stderr kept as a short tail for error messages (never on our terminal), and
//! reaped by a task that kills the rest of its group the moment it exits.
//!
//! With a [`Launcher`] the process is the sandbox child `pocketpilot __sandbox` running
//! the server confined like `run_command` (`sandbox.rs`): the process group then holds
//! the sandbox child, whose end ends the server's PID namespace (or, as a subreaper,
//! every descendant), and under root a pids cgroup of its own holds it all. Without one
//! (tests, `confined = false` where nothing launches sandboxes) the server is started
//! directly; a server that should be confined is then refused.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::backend::McpError;
use crate::client::Launcher;
use crate::config::ServerConfig;

/// How much of the server's stderr is kept for error messages.
const STDERR_TAIL_BYTES: usize = 4 * 1024;

/// How much of that tail an error message quotes.
const STDERR_QUOTE_CHARS: usize = 600;

/// A started server: its pipes (handed to rmcp) and the process they belong to.
pub(crate) struct Spawned {
    /// What the server writes: MCP messages, one per line.
    pub(crate) stdout: ChildStdout,
    /// What the server reads.
    pub(crate) stdin: ChildStdin,
    /// The process and its group.
    pub(crate) process: ServerProcess,
}

/// How the server's process ended.
#[derive(Debug, Clone)]
pub(crate) struct Exit {
    /// `exit status: 1`, `signal: 9 (SIGKILL)`, or why waiting failed.
    pub(crate) status: String,
    /// When the exit was seen (the restart backoff counts from here).
    pub(crate) at: Instant,
}

/// The server's process group, owned: dropping it kills the whole group.
pub(crate) struct ServerProcess {
    /// The group's id (the server's pid: it leads its own group).
    group: Option<u32>,
    /// Set by the reaper once the server has exited (then the group is killed).
    exit: watch::Receiver<Option<Exit>>,
    /// Whether the server was reaped: after that its pid may be reused, so `Drop` no
    /// longer signals the group (the reaper already killed what was left of it).
    reaped: Arc<AtomicBool>,
    /// The last bytes the server wrote to stderr.
    stderr: Arc<StderrTail>,
    /// Reads stderr into `stderr`; aborted on drop (it also ends at EOF).
    stderr_reader: JoinHandle<()>,
    /// The sandbox's pids cgroup (root only), killed and removed when this is dropped.
    held: Option<pp_sandbox::Held>,
}

impl ServerProcess {
    /// The server's pid.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.group
    }

    /// How the server ended, if it has.
    pub(crate) fn exit(&self) -> Option<Exit> {
        self.exit.borrow().clone()
    }

    /// Waits until the server has exited.
    pub(crate) async fn exited(&self) -> Exit {
        let mut exit = self.exit.clone();
        match exit.wait_for(Option::is_some).await {
            Ok(exit) => exit.clone().unwrap_or_else(unknown_exit),
            // The reaper is gone without a word: only when the runtime shuts down.
            Err(_) => unknown_exit(),
        }
    }

    /// Waits at most `limit` for the server to exit.
    pub(crate) async fn exited_within(&self, limit: Duration) -> Option<Exit> {
        tokio::time::timeout(limit, self.exited()).await.ok()
    }

    /// What the server said on stderr last (at most a few hundred characters).
    pub(crate) fn stderr_tail(&self) -> String {
        self.stderr.text()
    }

    /// Ends the server: `grace` to exit on its own (its stdin is closed by then), then
    /// SIGTERM to the group and `grace` again, then SIGKILL to the group; returns once it
    /// is reaped (or after a last bounded wait).
    pub(crate) async fn terminate(&self, grace: Duration) {
        if self.exited_within(grace).await.is_some() {
            return;
        }
        self.signal(Signal::Term);
        if self.exited_within(grace).await.is_some() {
            return;
        }
        self.signal(Signal::Kill);
        let _ = self.exited_within(Duration::from_secs(5)).await;
    }

    /// Kills the whole group now.
    pub(crate) fn kill(&self) {
        self.signal(Signal::Kill);
    }

    fn signal(&self, signal: Signal) {
        if !self.reaped.load(Ordering::SeqCst) {
            signal_group(self.group, signal);
        }
    }

    /// A line for an error message: how it ended and what it said last (first of all
    /// the sandbox child's reason, when it could not start the server confined).
    pub(crate) fn describe(&self, exit: Option<&Exit>) -> String {
        let tail = self.stderr_tail();
        if let Some(reason) = pp_sandbox::setup_failure(&tail) {
            return format!("the sandbox could not start it: {reason}");
        }
        let mut text = match exit {
            Some(exit) => format!("the process ended ({})", exit.status),
            None => "the process stopped answering".to_owned(),
        };
        if !tail.is_empty() {
            text.push_str("; its stderr ends with: ");
            text.push_str(&tail);
        }
        text
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.signal(Signal::Kill);
        self.stderr_reader.abort();
        if let Some(held) = self.held.take() {
            // Removing the cgroup waits for its processes to be gone.
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn_blocking(move || drop(held))),
                Err(_) => drop(held),
            }
        }
    }
}

fn unknown_exit() -> Exit {
    Exit {
        status: "status unknown".to_owned(),
        at: Instant::now(),
    }
}

#[derive(Debug, Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

/// Sends `signal` to the process group `group` (errors ignored: the group may be gone).
fn signal_group(group: Option<u32>, signal: Signal) {
    #[cfg(unix)]
    {
        let Some(pid) = group
            .and_then(|pid| i32::try_from(pid).ok())
            .and_then(rustix::process::Pid::from_raw)
        else {
            return;
        };
        let signal = match signal {
            Signal::Term => rustix::process::Signal::TERM,
            Signal::Kill => rustix::process::Signal::KILL,
        };
        let _ = rustix::process::kill_process_group(pid, signal);
    }
    #[cfg(not(unix))]
    let _ = (group, signal);
}

/// Starts `config`'s stdio server (`command` with `args`): a cleared environment plus
/// exactly `env`, in `cwd` when given, in a new process group; through `launcher`'s
/// sandbox for `workspace` when there is a launcher, directly otherwise (only for
/// `confined = false`). `command` without a `/` is looked up on our `PATH` (the child's
/// `PATH` is only what `env` lists).
pub(crate) async fn spawn(
    config: &ServerConfig,
    launcher: Option<&Launcher>,
    workspace: Option<&Path>,
) -> Result<Spawned, McpError> {
    let server = config.name.as_str();
    let crate::config::Transport::Stdio {
        command,
        args,
        env,
        cwd,
    } = &config.transport
    else {
        return Err(McpError::Start {
            server: server.to_owned(),
            reason: "it is not a stdio server".to_owned(),
        });
    };
    let start_error = |reason: String| McpError::Start {
        server: server.to_owned(),
        reason,
    };
    if launcher.is_none() && config.sandbox.confined {
        return Err(start_error(
            "no sandbox is available to confine it; set `confined = false` in its \
             `[mcp.server.sandbox]` table to run it NOT confined"
                .to_owned(),
        ));
    }
    let program = {
        let command = command.clone();
        tokio::task::spawn_blocking(move || resolve(&command))
            .await
            .map_err(|error| start_error(format!("looking up the command failed: {error}")))?
            .map_err(start_error)?
    };
    let (mut child, held) = match launcher {
        Some(launcher) => {
            let launcher = launcher.clone();
            let (config, program) = (config.clone(), program.clone());
            let workspace = workspace.map(Path::to_path_buf);
            let prepared = tokio::task::spawn_blocking(move || {
                let crate::config::Transport::Stdio { args, env, cwd, .. } = &config.transport
                else {
                    return Err("it is not a stdio server".to_owned());
                };
                let spec = launcher.spec(
                    &config,
                    &program,
                    args,
                    env,
                    cwd.as_deref(),
                    workspace.as_deref(),
                )?;
                launcher
                    .sandbox
                    .prepare(&spec)
                    .map_err(|error| error.to_string())
            })
            .await
            .map_err(|error| start_error(format!("preparing its sandbox failed: {error}")))?
            .map_err(start_error)?;
            (Command::from(prepared.command), Some(prepared.held))
        }
        None => {
            let mut child = Command::new(&program);
            child.args(args).env_clear().envs(env);
            if let Some(cwd) = cwd {
                child.current_dir(cwd);
            }
            #[cfg(unix)]
            child.process_group(0);
            (child, None)
        }
    };
    child
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = pp_types::open_files::spawn_with_original(|| child.spawn())
        .map_err(|error| start_error(format!("could not run `{command}`: {error}")))?;
    let group = child.id();
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        signal_group(group, Signal::Kill);
        return Err(start_error(
            "its standard streams were not piped".to_owned(),
        ));
    };
    let tail = Arc::new(StderrTail::default());
    let stderr_reader = tokio::spawn(read_stderr(stderr, Arc::clone(&tail)));
    let (exit_sender, exit) = watch::channel(None);
    let reaped = Arc::new(AtomicBool::new(false));
    {
        let reaped = Arc::clone(&reaped);
        // Owned by the process group's lifetime: it ends when the server exits, which
        // `ServerProcess::drop` (SIGKILL to the group) guarantees.
        tokio::spawn(async move {
            let status = match child.wait().await {
                Ok(status) => status.to_string(),
                Err(error) => format!("waiting for it failed: {error}"),
            };
            // Whatever the server left behind in its group dies with it. The pid is
            // still held (as the group's id) while any member lives, so it is not reused.
            signal_group(group, Signal::Kill);
            reaped.store(true, Ordering::SeqCst);
            let _ = exit_sender.send(Some(Exit {
                status,
                at: Instant::now(),
            }));
        });
    }
    Ok(Spawned {
        stdout,
        stdin,
        process: ServerProcess {
            group,
            exit,
            reaped,
            stderr: tail,
            stderr_reader,
            held,
        },
    })
}

/// The program to run: `command` itself when it names a path, else the first executable
/// file called `command` in our `PATH`.
fn resolve(command: &str) -> Result<PathBuf, String> {
    if command.is_empty() {
        return Err("the command is empty".to_owned());
    }
    if command.contains('/') {
        return Ok(PathBuf::from(command));
    }
    let path = search_path().unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| format!("`{command}` was not found on PATH"))
}

/// Our own `PATH`, read only to find the server's program (the child does not get it).
#[expect(
    clippy::disallowed_methods,
    reason = "the operator's `command = \"node\"` is looked up like a shell would; the value never reaches the child"
)]
fn search_path() -> Option<std::ffi::OsString> {
    std::env::var_os("PATH")
}

fn is_executable(path: &Path) -> bool {
    let Ok(metadata) = path.metadata() else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    metadata.is_file()
}

/// The last [`STDERR_TAIL_BYTES`] the server wrote to stderr.
#[derive(Debug, Default)]
struct StderrTail(Mutex<VecDeque<u8>>);

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        let Ok(mut tail) = self.0.lock() else {
            return;
        };
        tail.extend(bytes);
        let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
        tail.drain(..excess);
    }

    fn text(&self) -> String {
        let Ok(tail) = self.0.lock() else {
            return String::new();
        };
        let bytes: Vec<u8> = tail.iter().copied().collect();
        drop(tail);
        let text = String::from_utf8_lossy(&bytes);
        let text = text.trim();
        let skip = text.chars().count().saturating_sub(STDERR_QUOTE_CHARS);
        let quoted: String = text.chars().skip(skip).collect();
        if skip > 0 {
            format!("…{quoted}")
        } else {
            quoted
        }
    }
}

async fn read_stderr(mut stderr: ChildStderr, tail: Arc<StderrTail>) {
    let mut buffer = [0_u8; 4096];
    while let Ok(read) = stderr.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        tail.push(&buffer[..read]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stderr_tail_keeps_the_last_bytes() {
        let tail = StderrTail::default();
        tail.push(&[b'a'; STDERR_TAIL_BYTES]);
        tail.push(b"the end\n");
        let text = tail.text();
        assert!(text.ends_with("the end"), "{text}");
        assert!(text.starts_with('…'), "{text}");
        assert_eq!(text.chars().count(), STDERR_QUOTE_CHARS + 1);
    }

    #[test]
    fn a_command_with_a_slash_is_taken_as_given_and_a_bare_one_is_looked_up() {
        assert_eq!(
            resolve("/nonexistent").unwrap(),
            PathBuf::from("/nonexistent")
        );
        assert!(resolve("sh").unwrap().is_absolute());
        let error = resolve("pp-no-such-program-here").unwrap_err();
        assert!(error.contains("not found on PATH"), "{error}");
    }
}
