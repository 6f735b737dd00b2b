//! `pocketpilot users add|list|grant|revoke|rotate`: team users (docs/team.md), directly
//! on the store (no server needed). `add` and `rotate` print the user's token: the only
//! times it is shown (only its SHA-256 is stored).
//!
//! These commands work whether or not `[team] enabled` is set, so the first owner can be
//! created before team mode is switched on; without team mode the users exist but no
//! server accepts their tokens.

use clap::Subcommand;
use pp_tasks::Error;
use pp_types::UserRecord;
use pp_users::{IssuedToken, parse_role};
use serde_json::json;

use crate::app::App;
use crate::config::Flags;
use crate::output::outln;
use crate::{Exit, exit};

/// What to do.
#[derive(Debug, Subcommand)]
pub(crate) enum UsersCommand {
    /// Add a user; prints its token, the only time it is shown.
    Add {
        /// 1-64 of a-z, 0-9, `_`, `.`, `-`, starting with a letter or digit.
        name: String,
        /// `owner`, `approver`, `member` or `viewer`.
        #[arg(long)]
        role: String,
        /// Print one JSON object: `{"user", "token"}`.
        #[arg(long)]
        json: bool,
    },
    /// List the users with their roles and workspaces (never their tokens).
    List {
        /// Print one JSON object: `{"users": […]}`.
        #[arg(long)]
        json: bool,
    },
    /// Let a user work in a configured workspace.
    Grant {
        /// The user.
        name: String,
        /// The workspace's configured name.
        workspace: String,
    },
    /// Take a workspace back from a user.
    Revoke {
        /// The user.
        name: String,
        /// The workspace's name.
        workspace: String,
    },
    /// Give a user a new token (printed once); the old one stops working at once and the
    /// user's console logins end.
    Rotate {
        /// The user.
        name: String,
        /// Print one JSON object: `{"user", "token", "logins_ended"}`.
        #[arg(long)]
        json: bool,
    },
}

/// Usage errors (exit 2) for what the person typed wrong; the rest fail as errors.
fn failed(error: Error) -> anyhow::Error {
    match error {
        Error::BadRequest(_) | Error::NotFound { .. } => Exit::usage(error.to_string()).into(),
        other => other.into(),
    }
}

fn workspaces_of(user: &UserRecord) -> String {
    if user.workspaces.is_empty() {
        "-".to_owned()
    } else {
        user.workspaces.join(",")
    }
}

fn print_token(issued: &IssuedToken, json: bool, verb: &str) -> anyhow::Result<()> {
    if json {
        outln!(
            "{}",
            json!({
                "user": issued.user,
                "token": issued.token,
                "logins_ended": issued.logins_ended,
            })
        )?;
    } else {
        outln!("user {} ({}) {verb}", issued.user.name, issued.user.role)?;
        outln!("token: {}", issued.token)?;
        outln!(
            "the token is shown only now: give it to {}",
            issued.user.name
        )?;
    }
    Ok(())
}

/// Runs a `users` subcommand.
pub(crate) async fn run(flags: &Flags, command: UsersCommand) -> anyhow::Result<u8> {
    let app = App::stored(flags).await?;
    let users = app.users();
    match command {
        UsersCommand::Add { name, role, json } => {
            let role = parse_role(&role).map_err(failed)?;
            let issued = users.add(&name, role).await.map_err(failed)?;
            print_token(&issued, json, "added")?;
        }
        UsersCommand::List { json } => {
            let list = users.list().await.map_err(failed)?;
            if json {
                outln!("{}", json!({ "users": list }))?;
            } else if list.is_empty() {
                outln!("no users; add one with `pocketpilot users add NAME --role owner`")?;
            } else {
                for user in list {
                    outln!(
                        "{}  {}  {}",
                        user.name,
                        user.role,
                        if user.role == pp_types::Role::Owner {
                            "(every workspace)".to_owned()
                        } else {
                            workspaces_of(&user)
                        }
                    )?;
                }
            }
        }
        UsersCommand::Grant { name, workspace } => {
            let user = users
                .grant_workspace(&name, &workspace)
                .await
                .map_err(failed)?;
            outln!(
                "{} may now work in {workspace} ({})",
                user.name,
                workspaces_of(&user)
            )?;
        }
        UsersCommand::Revoke { name, workspace } => {
            let user = users
                .revoke_workspace(&name, &workspace)
                .await
                .map_err(failed)?;
            outln!(
                "{} no longer works in {workspace} ({})",
                user.name,
                workspaces_of(&user)
            )?;
        }
        UsersCommand::Rotate { name, json } => {
            let issued = users.rotate_token(&name).await.map_err(failed)?;
            print_token(
                &issued,
                json,
                &format!(
                    "has a new token (the old one no longer works; {} console login(s) ended)",
                    issued.logins_ended
                ),
            )?;
        }
    }
    Ok(exit::OK)
}
