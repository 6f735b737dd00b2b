//! `pocketpilot users add|list|grant|revoke|rotate|remove|role`: team users
//! (docs/team.md), directly on the store (no server needed). `add` and `rotate` print the
//! user's token: the only times it is shown (only its SHA-256 is stored).
//!
//! These commands work whether or not `[team] enabled` is set, so the first owner can be
//! created before team mode is switched on; without team mode the users exist but no
//! server accepts their tokens. Each change is audited (`user_added`, `user_removed`,
//! …): as the operator, or, with `--user NAME` (team mode), as that user, who must then
//! be an owner.

use clap::Subcommand;
use pp_tasks::{Caller, Error};
use pp_types::{Role, UserRecord};
use pp_users::{IssuedToken, Users, parse_role};
use serde_json::json;

use crate::acting::{self, UserArgs};
use crate::app::App;
use crate::config::Flags;
use crate::output::{errln, outln};
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
        /// Who adds the user (team mode, optional: then an owner).
        #[command(flatten)]
        who: UserArgs,
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
        /// Who grants it (team mode, optional: then an owner).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Take a workspace back from a user.
    Revoke {
        /// The user.
        name: String,
        /// The workspace's name.
        workspace: String,
        /// Who takes it back (team mode, optional: then an owner).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Give a user a new token (printed once); the old one stops working at once and the
    /// user's console logins end.
    Rotate {
        /// The user.
        name: String,
        /// Print one JSON object: `{"user", "token", "logins_ended"}`.
        #[arg(long)]
        json: bool,
        /// Who rotates it (team mode, optional: then an owner).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Remove a user: their token stops working and their console logins end at once;
    /// their tasks and audit rows stay. The last owner cannot be removed.
    Remove {
        /// The user.
        name: String,
        /// Print one JSON object: `{"user", "logins_ended"}`.
        #[arg(long)]
        json: bool,
        /// Who removes the user (team mode, optional: then an owner).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Give a user another role (their workspace grants stay). The last owner cannot be
    /// demoted.
    Role {
        /// The user.
        name: String,
        /// `owner`, `approver`, `member` or `viewer`.
        role: String,
        /// Print one JSON object: `{"user", "before"}`.
        #[arg(long)]
        json: bool,
        /// Who changes the role (team mode, optional: then an owner).
        #[command(flatten)]
        who: UserArgs,
    },
}

impl UsersCommand {
    /// Who the command says acts (`list` changes nothing and names no one).
    fn who(&self) -> Option<&UserArgs> {
        match self {
            Self::List { .. } => None,
            Self::Add { who, .. }
            | Self::Grant { who, .. }
            | Self::Revoke { who, .. }
            | Self::Rotate { who, .. }
            | Self::Remove { who, .. }
            | Self::Role { who, .. } => Some(who),
        }
    }
}

/// Usage errors (exit 2) for what the person typed wrong; the rest fail as errors.
/// Leaving the team without an owner is refused as a conflict (exit 5).
fn failed(error: Error) -> anyhow::Error {
    match error {
        Error::BadRequest(_) | Error::NotFound { .. } => Exit::usage(error.to_string()).into(),
        Error::Store(pp_store::Error::LastOwner { .. }) => Exit::conflict(error.to_string()).into(),
        other => other.into(),
    }
}

/// Who acts: the operator without `--user`; with it, the user their token proves, who
/// must be an owner (exit 6 otherwise).
async fn acting(app: &App, who: Option<&UserArgs>) -> anyhow::Result<Caller> {
    match who {
        Some(who) if who.user.is_some() => {
            acting::owner_only(
                who,
                app.config.team,
                &app.service,
                "change the team's users",
            )
            .await
        }
        _ => Ok(Caller::operator()),
    }
}

/// The users as lines of aligned columns: name, role and workspaces.
fn table(list: &[UserRecord]) -> Vec<String> {
    let rows: Vec<[String; 3]> = list
        .iter()
        .map(|user| {
            [
                user.name.clone(),
                user.role.to_string(),
                if user.role == Role::Owner {
                    "(every workspace)".to_owned()
                } else {
                    workspaces_of(user)
                },
            ]
        })
        .collect();
    let width = |column: usize| {
        rows.iter()
            .map(|row| row[column].chars().count())
            .max()
            .unwrap_or(0)
    };
    let (name, role) = (width(0), width(1));
    rows.iter()
        .map(|[a, b, c]| format!("{a:<name$}  {b:<role$}  {c}"))
        .collect()
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
    // Which database the users are in, on stderr: a command run without the team's
    // config (this machine's own SQLite file) shows at once (docs/team.md).
    errln!("store: {}", app.config.store_url.location());
    let caller = acting(&app, command.who()).await?;
    let users: Users = app.users().acting_as(&caller);
    match command {
        UsersCommand::Add {
            name, role, json, ..
        } => {
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
                for line in table(&list) {
                    outln!("{}", line.trim_end())?;
                }
            }
        }
        UsersCommand::Grant {
            name, workspace, ..
        } => {
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
        UsersCommand::Revoke {
            name, workspace, ..
        } => {
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
        UsersCommand::Rotate { name, json, .. } => {
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
        UsersCommand::Remove { name, json, .. } => {
            let removed = users.remove(&name).await.map_err(failed)?;
            if json {
                outln!(
                    "{}",
                    json!({ "user": removed.user, "logins_ended": removed.logins_ended })
                )?;
            } else {
                outln!(
                    "user {} ({}) removed: the token no longer works, {} console login(s) \
                     ended; their tasks and audit rows stay",
                    removed.user.name,
                    removed.user.role,
                    removed.logins_ended
                )?;
            }
        }
        UsersCommand::Role {
            name, role, json, ..
        } => {
            let role = parse_role(&role).map_err(failed)?;
            let (user, before) = users.set_role(&name, role).await.map_err(failed)?;
            if json {
                outln!("{}", json!({ "user": user, "before": before }))?;
            } else if before == role {
                outln!("{} is already {role}", user.name)?;
            } else {
                outln!("{} is now {role} (was {before})", user.name)?;
            }
        }
    }
    Ok(exit::OK)
}
