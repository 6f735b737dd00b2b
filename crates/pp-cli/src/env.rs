//! Every environment variable PocketPilot reads, in one place.
//!
//! | variable | meaning |
//! |---|---|
//! | `POCKETPILOT_HOME` | the data directory (database, token); `--home` wins over it |
//! | `POCKETPILOT_CONFIG` | the config file; `--config` wins over it |
//! | `POCKETPILOT_TOKEN` | team mode: the token of the user `--user NAME` names; `--token-file` wins over it |
//! | `XDG_DATA_HOME`, `XDG_CONFIG_HOME` | base directories for the defaults below |
//! | `HOME` | expands a leading `~`; default data dir `~/.local/share/pocketpilot`, config `~/.config/pocketpilot/pocketpilot.toml` |
//! | `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `DEEPSEEK_API_KEY`, `DASHSCOPE_API_KEY`, `OPENROUTER_API_KEY` | zero-config discovery when `[model]` is absent (first one set wins) |
//! | the variable `[model] api_key_env` names | the model's API key (never written anywhere) |
//! | the variable `[telegram] token_env` names | the Telegram bot's token, read by `serve` (never written anywhere or logged) |
//! | `VISUAL`, then `EDITOR` | the editor `run` opens to edit a call's arguments, and `memory edit` opens on the memory (default `vi`) |
//! | `PAGER` | what `d` on an approval card pipes the full change into (default `less -R`; empty: print it) |
//! | `NO_COLOR`, `CLICOLOR_FORCE` | colours off / on even when the output is not a terminal |
//! | `CI` | `eval`: a case that needs Landlock fails instead of being skipped where it is missing |
//! | `GLIBC_TUNABLES` | `serve` and `worker` start themselves again with `glibc.malloc.arena_max=2` added, unless it names an `arena_max` already |
//! | `POCKETPILOT_ARENAS_SET` | set by `serve` and `worker` on the process they start again, so it never restarts twice |
//!
//! Libraries never read the environment; they receive settings from here and from
//! `config.rs`. Nothing is ever read from inside a workspace.
#![expect(
    clippy::disallowed_methods,
    reason = "this module is the one place that reads the environment"
)]

use std::ffi::OsString;
use std::path::PathBuf;

/// `POCKETPILOT_HOME`.
pub(crate) const HOME_VAR: &str = "POCKETPILOT_HOME";
/// `POCKETPILOT_CONFIG`.
pub(crate) const CONFIG_VAR: &str = "POCKETPILOT_CONFIG";

/// `POCKETPILOT_TOKEN`.
pub(crate) const TOKEN_VAR: &str = "POCKETPILOT_TOKEN";

/// Every variable read here and what it does, as the table above: the man pages'
/// ENVIRONMENT (a test checks that every name this file reads is in it).
pub(crate) const VARIABLES: &[(&str, &str)] = &[
    (
        HOME_VAR,
        "the data directory (database, token, chat history); --home wins over it",
    ),
    (CONFIG_VAR, "the config file; --config wins over it"),
    (
        TOKEN_VAR,
        "team mode: the token of the user --user NAME names; --token-file wins over it",
    ),
    (
        "XDG_DATA_HOME",
        "base directory of the default data directory ($XDG_DATA_HOME/pocketpilot)",
    ),
    (
        "XDG_CONFIG_HOME",
        "base directory of the default config file \
         ($XDG_CONFIG_HOME/pocketpilot/pocketpilot.toml)",
    ),
    (
        "HOME",
        "expands a leading ~; default data directory ~/.local/share/pocketpilot, config \
         ~/.config/pocketpilot/pocketpilot.toml",
    ),
    (
        "OPENAI_API_KEY, ANTHROPIC_API_KEY, DEEPSEEK_API_KEY, DASHSCOPE_API_KEY, \
         OPENROUTER_API_KEY",
        "zero-config discovery when [model] is absent (the first one set wins)",
    ),
    (
        "the variable [model] api_key_env names",
        "the model's API key (never written anywhere)",
    ),
    (
        "the variable [telegram] token_env names",
        "the Telegram bot's token, read by serve (never written anywhere or logged)",
    ),
    (
        "VISUAL, EDITOR",
        "the editor for e at an approval card and for memory edit (default vi)",
    ),
    (
        "PAGER",
        "what d at an approval card pipes the full change into (default less -R; empty: \
         print it)",
    ),
    ("NO_COLOR", "any non-empty value turns colours off"),
    (
        "CLICOLOR_FORCE",
        "any non-empty value but 0 turns colours on even when the output is not a terminal",
    ),
    (
        "CI",
        "eval: a case that needs Landlock fails instead of being skipped where it is \
         missing",
    ),
    (
        TUNABLES_VAR,
        "glibc's tunables: serve and worker start themselves again with \
         glibc.malloc.arena_max=2 added, unless it names an arena_max already",
    ),
    (
        RESTARTED_VAR,
        "set by serve and worker on the process they start again with the arena limit \
         (never set it yourself: it only stops a second restart)",
    ),
];

/// `GLIBC_TUNABLES`: read by glibc when a process starts.
pub(crate) const TUNABLES_VAR: &str = "GLIBC_TUNABLES";

/// The malloc arenas `serve` and `worker` run with (`glibc.malloc.arena_max`).
const ARENA_MAX: &str = "glibc.malloc.arena_max=2";

/// Set by `serve` and `worker` on the process they start again with the arena limit, so
/// it never starts itself a third time, whatever a C library makes of `GLIBC_TUNABLES`.
pub(crate) const RESTARTED_VAR: &str = "POCKETPILOT_ARENAS_SET";

/// `GLIBC_TUNABLES` with [`ARENA_MAX`] added, or `None` when it names an arena limit
/// already (the operator's) or this process is the restarted one ([`RESTARTED_VAR`]).
pub(crate) fn tunables_with_arena_limit() -> Option<OsString> {
    let current = std::env::var_os(TUNABLES_VAR).unwrap_or_default();
    if std::env::var_os(RESTARTED_VAR).is_some()
        || current.to_string_lossy().contains("glibc.malloc.arena_max")
    {
        return None;
    }
    let mut tunables = current;
    if !tunables.is_empty() {
        tunables.push(":");
    }
    tunables.push(ARENA_MAX);
    Some(tunables)
}

fn non_empty(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|value| !value.is_empty())
}

/// The editor to open for argument edits and `memory edit`.
pub(crate) fn editor() -> OsString {
    non_empty("VISUAL")
        .or_else(|| non_empty("EDITOR"))
        .unwrap_or_else(|| OsString::from("vi"))
}

/// The user's home directory, for `~` expansion.
pub(crate) fn home() -> Option<OsString> {
    non_empty("HOME")
}

/// `POCKETPILOT_HOME`, if set.
pub(crate) fn data_home_override() -> Option<PathBuf> {
    non_empty(HOME_VAR).map(PathBuf::from)
}

/// `POCKETPILOT_TOKEN` (the `--user`'s token in team mode), trimmed, if set.
pub(crate) fn user_token() -> Option<String> {
    var(TOKEN_VAR).map(|token| token.trim().to_owned())
}

/// `POCKETPILOT_CONFIG`, if set.
pub(crate) fn config_override() -> Option<PathBuf> {
    non_empty(CONFIG_VAR).map(PathBuf::from)
}

/// The platform's default data directory for PocketPilot.
pub(crate) fn default_data_dir() -> Option<PathBuf> {
    if let Some(base) = non_empty("XDG_DATA_HOME") {
        return Some(PathBuf::from(base).join("pocketpilot"));
    }
    let home = PathBuf::from(home()?);
    Some(if cfg!(target_os = "macos") {
        home.join("Library/Application Support/pocketpilot")
    } else {
        home.join(".local/share/pocketpilot")
    })
}

/// The platform's default config file.
pub(crate) fn default_config_file() -> Option<PathBuf> {
    if let Some(base) = non_empty("XDG_CONFIG_HOME") {
        return Some(PathBuf::from(base).join("pocketpilot/pocketpilot.toml"));
    }
    let home = PathBuf::from(home()?);
    Some(if cfg!(target_os = "macos") {
        home.join("Library/Application Support/pocketpilot/pocketpilot.toml")
    } else {
        home.join(".config/pocketpilot/pocketpilot.toml")
    })
}

/// A variable's value, if set and not empty (for `api_key_env`).
pub(crate) fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// The provider keys present in the environment, for zero-config discovery
/// (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `DEEPSEEK_API_KEY`, `DASHSCOPE_API_KEY`,
/// `OPENROUTER_API_KEY`).
pub(crate) fn provider_keys() -> Vec<(&'static str, String)> {
    pp_model::key_variables()
        .filter_map(|name| var(name).map(|value| (name, value)))
        .collect()
}

/// `NO_COLOR` (any non-empty value turns colours off; <https://no-color.org>).
pub(crate) fn no_color() -> bool {
    non_empty("NO_COLOR").is_some()
}

/// `CI` (set, to anything, by CI runners): checks that are skipped where the kernel
/// lacks a feature fail instead.
pub(crate) fn in_ci() -> bool {
    std::env::var_os("CI").is_some()
}

/// `CLICOLOR_FORCE` (any non-empty value but `0` turns colours on without a terminal).
pub(crate) fn clicolor_force() -> bool {
    non_empty("CLICOLOR_FORCE").is_some_and(|value| value != "0")
}

/// The pager for `d` on an approval card: `PAGER`, else `less -R`.
pub(crate) fn pager() -> Option<String> {
    match std::env::var_os("PAGER") {
        Some(value) => Some(value.to_string_lossy().into_owned()),
        None => Some("less -R".to_owned()),
    }
    .filter(|value| !value.trim().is_empty())
}
