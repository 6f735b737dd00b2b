//! Every environment variable PocketPilot reads, in one place.
//!
//! | variable | meaning |
//! |---|---|
//! | `VISUAL`, then `EDITOR` | the editor `run` opens to edit a call's arguments (default `vi`) |
//! | `HOME` | expands a leading `~` in `--workspace` |
//!
//! Libraries never read the environment; they receive settings from here.
#![expect(
    clippy::disallowed_methods,
    reason = "this module is the one place that reads the environment"
)]

use std::ffi::OsString;

/// The editor to open for argument edits.
pub(crate) fn editor() -> OsString {
    std::env::var_os("VISUAL")
        .or_else(|| std::env::var_os("EDITOR"))
        .filter(|editor| !editor.is_empty())
        .unwrap_or_else(|| OsString::from("vi"))
}

/// The user's home directory, for `~` expansion.
pub(crate) fn home() -> Option<OsString> {
    std::env::var_os("HOME").filter(|home| !home.is_empty())
}
