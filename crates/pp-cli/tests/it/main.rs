//! Integration tests of the `pocketpilot` binary and the workspace's architecture.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "tests set up fixtures with std::fs and panic on broken fixtures"
)]

mod approvals;
mod architecture;
mod backup;
mod card_window;
mod cards;
mod channels;
mod chat;
mod connections;
mod decide_elsewhere;
mod documents;
mod eval;
mod home;
mod http;
mod links;
mod man;
mod mcp_sandbox;
mod mcp_serve;
mod mcp_tools;
mod memory;
mod models;
mod pipe;
mod provenance;
mod revert;
mod run;
mod schedule_folders;
mod schedules;
mod scripting;
mod service;
mod shell;
mod skills;
mod stop;
mod team_key;
mod team_knowledge;
mod telegram;
mod terminal;
mod usage;
mod users;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The built `pocketpilot` binary, isolated from the user's data and config directories.
pub(crate) fn pocketpilot() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pocketpilot"));
    isolate(
        &mut command,
        &std::env::temp_dir().join("pp-cli-tests-default-home"),
    );
    command
}

/// The binary with its data directory at `home` (and no user config file).
pub(crate) fn pocketpilot_in(home: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pocketpilot"));
    isolate(&mut command, home);
    command
}

/// Points the data and config directories of a child process at `home`.
pub(crate) fn isolate(command: &mut Command, home: &Path) {
    command
        .env("POCKETPILOT_HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env_remove("POCKETPILOT_CONFIG")
        .env_remove("POCKETPILOT_TOKEN");
    for key in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "DEEPSEEK_API_KEY",
        "DASHSCOPE_API_KEY",
        "OPENROUTER_API_KEY",
    ] {
        command.env_remove(key);
    }
}

/// The repository root.
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Writes a script file and returns its path.
pub(crate) fn write_script(dir: &Path, turns: &serde_json::Value) -> PathBuf {
    let path = dir.join("script.json");
    std::fs::write(&path, turns.to_string()).unwrap();
    path
}

/// stdout and stderr as text.
pub(crate) fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs a store call to completion from a synchronous test (the store is async).
pub(crate) trait Wait: std::future::Future + Sized {
    fn wait(self) -> Self::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(self)
    }
}

impl<F: std::future::Future> Wait for F {}
