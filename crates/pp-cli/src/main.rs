//! `pocketpilot`: the command-line front end. Parses flags, wires the model, the tools,
//! the jail and the policy together for each run, and maps outcomes to exit codes.
//!
//! This binary crate sits at the top of the workspace and may depend on every other
//! crate; it is the only place that reads the environment (`env.rs`) and prints.
#![allow(
    clippy::print_stderr,
    reason = "the command-line front end talks to the person on stderr; stdout goes through \
              `output::outln!`, which returns a broken pipe as an error instead of panicking"
)]

mod acting;
mod app;
mod card;
mod channel_key;
mod commands;
mod config;
mod edit;
mod env;
mod escape;
mod eval;
mod home;
mod interrupt;
mod keys;
mod live;
mod lock;
mod mcp_config;
mod mcp_tools;
mod models;
mod output;
mod prices;
mod render;
mod report;
mod results;
mod review;
mod shell;
mod style;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::commands::approvals::ApprovalsCommand;
use crate::commands::channels::ChannelsCommand;
use crate::commands::mcp::McpCommand;
use crate::commands::memory::MemoryCommand;
use crate::commands::schedules::SchedulesCommand;
use crate::commands::sessions::SessionsCommand;
use crate::commands::skills::SkillsCommand;
use crate::commands::tasks::TasksCommand;
use crate::commands::token::TokenCommand;
use crate::commands::users::UsersCommand;
use crate::config::Flags;
use crate::output::errln;

/// Exit codes, kept stable for scripts.
pub(crate) mod exit {
    /// The task completed (or the command succeeded).
    pub(crate) const OK: u8 = 0;
    /// The task failed, an eval failed, or an internal error happened.
    pub(crate) const FAILED: u8 = 1;
    /// The command line or its inputs were wrong.
    pub(crate) const USAGE: u8 = 2;
    /// The task is waiting for a person's approval.
    pub(crate) const WAITING_APPROVAL: u8 = 3;
    /// No model is configured.
    pub(crate) const NO_MODEL: u8 = 4;
    /// Someone else resolved the approval first, the target changed since the
    /// fingerprint given with `approvals approve --seen`, or (restore) a server holds the
    /// data directory.
    pub(crate) const CONFLICT: u8 = 5;
    /// Team mode: the `--user`'s token was refused, or their role or workspace grants
    /// do not allow the action (the API's 401/403).
    pub(crate) const FORBIDDEN: u8 = 6;
    /// Ctrl+C at an approval question: nothing was run, the approval stays pending
    /// (128 + SIGINT, as shells report an interrupted program).
    pub(crate) const INTERRUPTED: u8 = 130;

    /// Every code and what it means: the man pages' EXIT STATUS (the README lists the
    /// same; a test checks every code is there).
    pub(crate) const MEANINGS: &[(u8, &str)] = &[
        (OK, "the task completed, or the command succeeded"),
        (
            FAILED,
            "the task failed, an eval or a check failed, or an internal error happened",
        ),
        (USAGE, "the command line or its inputs were wrong"),
        (
            WAITING_APPROVAL,
            "the task is waiting for a person's approval (without a terminal nothing is \
             approved: the pending call is printed and resolved later with pocketpilot \
             approvals approve|reject ID or in the console)",
        ),
        (NO_MODEL, "no model is configured"),
        (
            CONFLICT,
            "conflict: someone else resolved the approval first, the target changed since \
             the fingerprint given with approvals approve --seen, a refused revert, or \
             restore while a server runs on the data directory",
        ),
        (
            FORBIDDEN,
            "team mode: the --user's token was refused, or their role or workspace grants do \
             not allow the action",
        ),
        (
            INTERRUPTED,
            "Ctrl+C (128 + SIGINT): at an approval question, nothing ran and the approval \
             stays pending; during a run, the task was cancelled once the running call \
             stopped (a second Ctrl+C within 1 s leaves at once; the task ends cancelled \
             when recovered); run --json's result line tells them apart; chat without a \
             terminal: interrupted between turns",
        ),
    ];
}

/// PocketPilot: a local-first agent whose every tool call passes one gate.
#[derive(Debug, Parser)]
#[command(name = "pocketpilot", version, about)]
pub(crate) struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

/// Flags every command takes.
#[derive(Debug, Args)]
struct GlobalArgs {
    /// The data directory (database, token); default from POCKETPILOT_HOME or the
    /// platform's data directory.
    #[arg(long, global = true, value_name = "DIR")]
    home: Option<PathBuf>,
    /// The config file; default from POCKETPILOT_CONFIG or the platform's config directory.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// How `run` and `chat` run their tasks (for `chat`, each turn).
#[derive(Debug, Args)]
struct TaskArgs {
    /// The workspace the task may touch (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Replay a JSON list of assistant turns instead of calling a model (`chat`: in
    /// every turn).
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// Print the task's events on stdout, one JSON object per line (as the API's event
    /// stream sends them), then a `{"type":"result",…}` line (`chat`: per turn, after a
    /// `{"type":"session",…}` line).
    #[arg(long)]
    json: bool,
    /// Who works (team mode): creates the tasks and decides at the cards.
    #[command(flatten)]
    who: acting::UserArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one task in the terminal, asking you before any write.
    Run {
        #[command(flatten)]
        task: TaskArgs,
        /// What you want done.
        prompt: String,
    },
    /// A conversation in the terminal: each message is a turn of a stored session.
    Chat {
        /// Continue this session (`pocketpilot sessions list` shows them).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        #[command(flatten)]
        task: TaskArgs,
    },
    /// List, show and delete chat sessions.
    Sessions {
        #[command(subcommand)]
        command: SessionsCommand,
    },
    /// Serve the HTTP API and the web console on 127.0.0.1.
    Serve {
        /// The port (0 picks a free one); default 7878 or `[server] port`.
        #[arg(long)]
        port: Option<u16>,
        /// A one-off default workspace.
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Run every task on this script instead of a model (tests and demos).
        #[arg(long, value_name = "FILE")]
        script: Option<PathBuf>,
    },
    /// Run tasks from the database without the HTTP server: the extra workers of a
    /// team server (several processes, on one or more machines, sharing `[store] url`).
    Worker {
        /// A one-off default workspace.
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
    /// A guided tour of the gate: no model, no network, a throw-away workspace.
    Demo,
    /// Write a commented pocketpilot.toml (never overwrites without --force).
    Init {
        /// `openai` (any OpenAI-compatible server) or `anthropic`.
        #[arg(long)]
        provider: Option<String>,
        /// The model's name on the server.
        #[arg(long)]
        model: Option<String>,
        /// The server's base URL (default per provider).
        #[arg(long)]
        base_url: Option<String>,
        /// The environment variable that holds the API key.
        #[arg(long)]
        api_key_env: Option<String>,
        /// A default workspace directory.
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Replace an existing config file.
        #[arg(long)]
        force: bool,
    },
    /// Check the configuration, data directory, workspaces and the model.
    Doctor,
    /// List and inspect stored tasks.
    Tasks {
        #[command(subcommand)]
        command: TasksCommand,
    },
    /// Undo a change an approved call made (`tasks show ID` lists them); exit 5 when
    /// refused (the file changed since, or nothing was kept).
    Revert {
        /// The change id (`c_…`).
        change_id: String,
        /// Print one JSON object: `{"change": …}`, or `{"error": …, "diff": …}`.
        #[arg(long)]
        json: bool,
        /// Who reverts (team mode).
        #[command(flatten)]
        who: acting::UserArgs,
    },
    /// List, inspect, approve and reject approvals (works without a server).
    Approvals {
        #[command(subcommand)]
        command: ApprovalsCommand,
    },
    /// Schedules: prompts run at cron times by `pocketpilot serve` (list, show, add,
    /// edit, enable, disable, run, remove); their writes wait for approval.
    Schedules {
        #[command(subcommand)]
        command: SchedulesCommand,
    },
    /// List, show, add and remove skills (procedures the model may read).
    Skills {
        #[command(subcommand)]
        command: SkillsCommand,
    },
    /// The configured MCP servers (`list`, `check`), and PocketPilot's gate as an MCP
    /// server (`serve`).
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// Show, edit or set the memory file (notes the model sees in every task).
    Memory {
        #[command(subcommand)]
        command: MemoryCommand,
    },
    /// Webhook channels: URLs other programs post to, each delivery a task that waits
    /// for approval before any write (`list`, `add`, `rotate`, `remove`, `test`, …).
    Channels {
        #[command(subcommand)]
        command: ChannelsCommand,
    },
    /// Manage the API token.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Team users and roles (docs/team.md): `add NAME --role ROLE`, `list`, `grant`,
    /// `revoke`, `rotate`, `remove`, `role NAME ROLE`.
    Users {
        #[command(subcommand)]
        command: UsersCommand,
    },
    /// Write a consistent copy of the database to FILE (also while `serve` runs).
    Backup {
        /// Where to write the copy (replaced if it exists).
        file: PathBuf,
    },
    /// Replace the database with a backup (refused while a server runs).
    Restore {
        /// A file written by `pocketpilot backup`.
        file: PathBuf,
    },
    /// Drop the events and audit rows of tasks finished long ago.
    Prune {
        /// Prune what finished more than this many days ago (default `[store] retain_days`).
        #[arg(long, value_name = "DAYS")]
        older_than_days: Option<u32>,
    },
    /// Run the eval cases: the real loop, gate and tools against scripted models.
    Eval {
        /// A directory of `*.json` cases, or one case file.
        #[arg(default_value = "evals/cases")]
        path: PathBuf,
    },
    /// Print shell completions (bash, zsh or fish) on stdout.
    Completions {
        /// The shell.
        shell: commands::completions::Shell,
    },
    /// Print the man page (roff) on stdout: `pocketpilot man | man -l -`; with `--dir`,
    /// write every page (`pocketpilot.1`, `pocketpilot-run.1`,
    /// `pocketpilot-approvals-approve.1`, …) into a directory.
    Man {
        /// Write all pages into DIR (created if missing), one file per page.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// The document parser child (internal): reads a job and a file's bytes on stdin,
    /// limits itself, answers on stdout. Opens no data directory, reads no config.
    #[command(name = "__parse", hide = true)]
    Parse,
    /// The confined command child (internal): limits and confines itself as SPEC (JSON)
    /// says, then runs the command in its place. Opens no data directory, reads no config.
    #[command(name = "__sandbox", hide = true)]
    Sandbox {
        /// The command and its confinement, as JSON.
        spec: String,
    },
}

/// A failure that maps to a specific exit code.
#[derive(Debug)]
pub(crate) struct Exit {
    code: u8,
    message: String,
}

impl Exit {
    /// A usage error (exit code 2).
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Self {
            code: exit::USAGE,
            message: message.into(),
        }
    }

    /// A conflict (exit code 5): someone else changed it first.
    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        Self {
            code: exit::CONFLICT,
            message: message.into(),
        }
    }

    /// Team mode: refused credentials, role or grant (exit code 6).
    pub(crate) fn forbidden(message: impl Into<String>) -> Self {
        Self {
            code: exit::FORBIDDEN,
            message: message.into(),
        }
    }

    /// No model configured (exit code 4).
    pub(crate) fn no_model(message: impl Into<String>) -> Self {
        Self {
            code: exit::NO_MODEL,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            });
        }
    };
    if matches!(cli.command, Command::Parse) {
        return ExitCode::from(pp_docs::child::main());
    }
    if let Command::Sandbox { spec } = &cli.command {
        return ExitCode::from(pp_sandbox::child::main(spec));
    }
    // `serve` answers many clients at once; every other command is one request after
    // another and runs on the main thread (no worker threads to start). Blocking work
    // (SQLite, files) goes to the blocking pool either way.
    let service = matches!(cli.command, Command::Serve { .. } | Command::Worker { .. });
    if service {
        limit_malloc_arenas();
    }
    let mut builder = if service {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(2);
        builder
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            errln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(exit::FAILED);
        }
    };
    let flags = Flags {
        home: cli.global.home,
        config: cli.global.config,
        ..Flags::default()
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Run { task, prompt } => {
                let flags = Flags {
                    workspace: task.workspace,
                    ..flags
                };
                commands::run::run(flags, task.script, &prompt, task.json, &task.who).await
            }
            Command::Chat { session, task } => {
                let flags = Flags {
                    workspace: task.workspace,
                    ..flags
                };
                let options = commands::chat::ChatOptions {
                    session,
                    script: task.script,
                    json: task.json,
                    who: task.who,
                };
                commands::chat::run(flags, options).await
            }
            Command::Sessions { command } => commands::sessions::run(&flags, command).await,
            Command::Serve {
                port,
                workspace,
                script,
            } => {
                let flags = Flags {
                    port,
                    workspace,
                    ..flags
                };
                commands::serve::run(flags, script).await
            }
            Command::Worker { workspace } => {
                let flags = Flags { workspace, ..flags };
                commands::worker::run(flags).await
            }
            Command::Demo => commands::demo::run().await,
            Command::Init {
                provider,
                model,
                base_url,
                api_key_env,
                workspace,
                force,
            } => commands::init::run(
                flags.config,
                commands::init::InitOptions {
                    provider,
                    model,
                    base_url,
                    api_key_env,
                    workspace,
                    force,
                },
            ),
            Command::Doctor => commands::doctor::run(&flags).await,
            Command::Tasks { command } => commands::tasks::run(&flags, command).await,
            Command::Approvals { command } => commands::approvals::run(&flags, command).await,
            Command::Schedules { command } => commands::schedules::run(&flags, command).await,
            Command::Revert {
                change_id,
                json,
                who,
            } => commands::revert::run(&flags, &who, change_id, json).await,
            Command::Skills { command } => commands::skills::run(&flags, command).await,
            Command::Memory { command } => commands::memory::run(&flags, command).await,
            Command::Mcp { command } => commands::mcp::run(&flags, command).await,
            Command::Channels { command } => commands::channels::run(&flags, command).await,
            Command::Token { command } => commands::token::run(&flags, &command).await,
            Command::Users { command } => commands::users::run(&flags, command).await,
            Command::Eval { path } => commands::eval::run(&path).await,
            Command::Backup { file } => commands::backup::backup(&flags, &file).await,
            Command::Restore { file } => commands::backup::restore(&flags, &file).await,
            Command::Prune { older_than_days } => {
                commands::backup::prune(&flags, older_than_days).await
            }
            Command::Completions { shell } => commands::completions::completions(shell),
            Command::Man { dir } => commands::man::run(dir.as_deref()),
            // Answered before the runtime was built.
            Command::Parse => Ok(pp_docs::child::main()),
            Command::Sandbox { spec } => Ok(pp_sandbox::child::main(&spec)),
        }
    });
    match result {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            if is_broken_pipe(&error) {
                return ExitCode::from(exit::OK);
            }
            errln!("error: {error:#}");
            let code = error
                .downcast_ref::<Exit>()
                .map_or(exit::FAILED, |exit| exit.code);
            ExitCode::from(code)
        }
    }
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// glibc's malloc gives a thread that finds the arenas busy an arena of its own, up to
/// eight per core, and each keeps the memory its thread freed. Under load a service's
/// blocking pool has dozens of threads, so `serve` kept 63-71 MiB resident where the heap
/// peaked at 21 MiB; with four arenas it keeps 46-52 MiB, at about the same throughput
/// (docs/performance.md). Without `unsafe` (forbidden here) there is no `mallopt`, and
/// glibc reads `GLIBC_TUNABLES` only when a process starts: so `serve` and `worker` start
/// themselves again, the same process and arguments, with the limit added to it, unless
/// it names one already. They `exec` the binary's path (`current_exe`), not
/// `/proc/self/exe`, so the process keeps its name (`ps`, `pgrep pocketpilot`, the
/// journal). Should the path be gone (the binary replaced while it ran) or the `exec`
/// fail, they go on as they are.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn limit_malloc_arenas() {
    use std::os::unix::process::CommandExt as _;
    let Some(tunables) = env::tunables_with_arena_limit() else {
        return;
    };
    let Ok(binary) = std::env::current_exe() else {
        return;
    };
    let mut args = std::env::args_os();
    let mut command = std::process::Command::new(binary);
    if let Some(arg0) = args.next() {
        command.arg0(arg0);
    }
    // Returns only if the `exec` failed.
    let _ = command
        .args(args)
        .env(env::TUNABLES_VAR, tunables)
        .env(env::RESTARTED_VAR, "1")
        .exec();
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn limit_malloc_arenas() {}
