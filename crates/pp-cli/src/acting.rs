//! `--user NAME`: who a command that acts for a person acts as (team mode, docs/team.md).
//!
//! In team mode every command that acts for a person (resolving an approval, cancelling
//! or retrying a task, reverting a change, changing the memory or the skills) names the
//! user with `--user NAME` and proves it with that user's token, from
//! `POCKETPILOT_TOKEN` or `--token-file FILE` (mode 0600). [`UserArgs::caller`] turns
//! them into the same [`Caller`] the API builds from a bearer token, and [`authorize`]
//! applies the API's role and grant checks ([`pp_tasks::TaskService::authorize`]).
//! Outside team mode the command acts as the operator and `--user` is a usage error.
//!
//! This attributes the action and checks the role; it is not a security boundary against
//! whoever runs the binary: anyone who can read the configuration can still write the
//! database directly.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use clap::Args;
use pp_tasks::{Action, Caller, TaskService};

use crate::{Exit, env};

/// The person a command acts for: `--user NAME` and their token.
#[derive(Debug, Clone, Default, Args)]
pub(crate) struct UserArgs {
    /// Team mode: act as this user (their role and workspace grants are checked, the
    /// audit ledger names them); the token comes from POCKETPILOT_TOKEN or --token-file.
    #[arg(long, value_name = "NAME")]
    pub(crate) user: Option<String>,
    /// Team mode: read the user's token from FILE (mode 0600) instead of
    /// POCKETPILOT_TOKEN.
    #[arg(long, value_name = "FILE", requires = "user")]
    pub(crate) token_file: Option<PathBuf>,
}

impl UserArgs {
    /// Who acts: the operator outside team mode (where `--user` is a usage error); in
    /// team mode the user `--user` names, authenticated by their token (no `--user`, no
    /// token or an unsafe token file: usage errors, exit 2; a token that is not the
    /// user's: refused, exit 6).
    pub(crate) async fn caller(&self, team: bool, service: &TaskService) -> anyhow::Result<Caller> {
        match (team, &self.user) {
            (false, None) => Ok(Caller::operator()),
            (false, Some(_)) => Err(Exit::usage(
                "--user is for team mode (`[team] enabled = true`); without team mode \
                 commands act as the operator",
            )
            .into()),
            (true, None) => Err(Exit::usage(
                "team mode: say who acts with --user NAME (the token from \
                 POCKETPILOT_TOKEN or --token-file FILE)",
            )
            .into()),
            (true, Some(name)) => {
                let token = match &self.token_file {
                    Some(file) => read_token_file(file)?,
                    None => env::user_token().ok_or_else(|| {
                        Exit::usage(format!(
                            "--user {name}: no token; set {} or pass --token-file FILE",
                            env::TOKEN_VAR
                        ))
                    })?,
                };
                service.authenticate(name, token).await.map_err(refused)
            }
        }
    }
}

/// The API's role and grant checks for `action`, as the store holds them now: a refusal
/// exits 6 ([`Exit::forbidden`]), like the API's 403.
pub(crate) async fn authorize(
    service: &TaskService,
    caller: &Caller,
    action: Action<'_>,
) -> anyhow::Result<()> {
    service.authorize(caller, action).await.map_err(refused)
}

/// A refused token, role or grant as [`Exit::forbidden`]; other errors as they are.
pub(crate) fn refused(error: pp_tasks::Error) -> anyhow::Error {
    match error {
        pp_tasks::Error::Forbidden(_) | pp_tasks::Error::Unauthorized(_) => {
            Exit::forbidden(error.to_string()).into()
        }
        other => other.into(),
    }
}

/// The token in `file`, refused (usage error) when group or others may read the file.
#[expect(
    clippy::disallowed_methods,
    reason = "--token-file names the person's own file on the command line"
)]
fn read_token_file(file: &Path) -> anyhow::Result<String> {
    let cannot = |error: std::io::Error| {
        Exit::usage(format!(
            "cannot read the token file {}: {error}",
            file.display()
        ))
    };
    let mut handle = std::fs::File::open(file).map_err(cannot)?;
    // The mode of the file opened, not of whatever the name points at later.
    if let Some(mode) = mode_of(&handle)
        && mode & 0o077 != 0
    {
        return Err(Exit::usage(format!(
            "the token file {} may be read by other users (mode {mode:o}); run `chmod 600 {}`",
            file.display(),
            file.display()
        ))
        .into());
    }
    let mut text = String::new();
    handle.read_to_string(&mut text).map_err(cannot)?;
    let token = text.trim();
    if token.is_empty() {
        return Err(Exit::usage(format!("the token file {} is empty", file.display())).into());
    }
    Ok(token.to_owned())
}

/// Permission bits of an open file (Unix), or `None`.
fn mode_of(file: &std::fs::File) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        file.metadata()
            .ok()
            .map(|meta| meta.permissions().mode() & 0o777)
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        None
    }
}

/// For a command only owners may run (changing the memory or the skills): who acts,
/// refused (exit 6) unless an owner in team mode; `what` completes "only owners may …".
pub(crate) async fn owner_only(
    who: &UserArgs,
    team: bool,
    service: &TaskService,
    what: &'static str,
) -> anyhow::Result<Caller> {
    let caller = who.caller(team, service).await?;
    authorize(service, &caller, Action::OwnerOnly(what)).await?;
    Ok(caller)
}
