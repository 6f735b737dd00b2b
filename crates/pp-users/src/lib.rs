//! Team users (team mode, docs/team.md) and console logins: adding users, their
//! workspace grants, token rotation, recognising a token or a login ([`Users`]).
//!
//! It sits beside the task service: it reaches the configured workspaces through the
//! service ([`TaskService::workspaces`]) and makes only the store calls on its own rows
//! (users, their grants and tokens, console logins; nothing else). Who acts and whether
//! they may is the task service's ([`pp_tasks::Caller`], [`TaskService::authorize`]);
//! which routes a role may use is the server's role matrix. This crate only keeps the
//! users and checks their names, roles and workspaces. `pocketpilot serve` builds one
//! [`Users`] for the API; the CLI's `users` and `token` commands build their own.
//!
//! Every change to the users is audited (`user_added`, `user_removed`,
//! `user_role_changed`, `user_granted`, `user_revoked`, `user_token_rotated`; the row's
//! `target` is the user changed) as whoever [`Users::acting_as`] names: the operator by
//! default, a team user when the CLI's `--user` names one.

use std::time::Duration;

use pp_store::Store;
use pp_tasks::{Caller, Error, Result, TaskService};
use pp_types::{Actor, AuditAction, NewAudit, Role, UserRecord, valid_user_name};

pub use pp_store::LoginOwner;

/// A user with a token just made: the only time the token is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuedToken {
    /// The user.
    pub user: UserRecord,
    /// The token (`ppu_` and 64 hex digits); only its SHA-256 is stored.
    pub token: String,
    /// How many of the user's console logins ended (rotation).
    pub logins_ended: usize,
}

/// Refuses a name that is not `^[a-z0-9][a-z0-9_.-]{0,63}$`.
fn check_name(name: &str) -> Result<()> {
    if valid_user_name(name) {
        Ok(())
    } else {
        Err(Error::BadRequest(format!(
            "invalid user name `{name}`: use 1-64 of a-z, 0-9, `_`, `.`, `-`, starting \
             with a letter or digit"
        )))
    }
}

/// Parses a role name, with a usage error naming the four roles.
pub fn parse_role(text: &str) -> Result<Role> {
    Role::parse(text).ok_or_else(|| {
        Error::BadRequest(format!(
            "unknown role `{text}`; expected one of owner, approver, member, viewer"
        ))
    })
}

/// The team's users and the console's logins. Cheap to clone.
#[derive(Clone)]
pub struct Users {
    service: TaskService,
    /// The store: only its calls on users, grants, tokens and console logins (and their
    /// audit rows) are made.
    store: Store,
    /// The team user the audit rows name (`None`: the operator).
    acting: Option<String>,
}

/// A user removed: who they were and how many of their console logins ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    /// The user as they were.
    pub user: UserRecord,
    /// How many of the user's console logins ended.
    pub logins_ended: usize,
}

impl std::fmt::Debug for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Users").finish_non_exhaustive()
    }
}

impl Users {
    /// The team's users and the console's logins in `store`, the one `service` runs on
    /// (whose workspaces a grant must name).
    pub fn new(service: TaskService, store: Store) -> Self {
        Self {
            service,
            store,
            acting: None,
        }
    }

    /// The same users, with changes audited as `caller` (the operator, or the team user
    /// the CLI's `--user` proved). Whether `caller` may change users is the front end's
    /// check.
    #[must_use]
    pub fn acting_as(&self, caller: &Caller) -> Self {
        Self {
            acting: caller.user.clone(),
            ..self.clone()
        }
    }

    /// Appends the audit row of a change to the user `name`.
    async fn audit(&self, action: AuditAction, name: &str, detail: Option<String>) -> Result<()> {
        self.store
            .append_audit(NewAudit {
                actor: Some(Actor::Operator),
                target: Some(name.to_owned()),
                detail,
                user: self.acting.clone(),
                ..NewAudit::new(action)
            })
            .await?;
        Ok(())
    }

    /// Adds a user with a fresh token (shown once: only its SHA-256 is stored).
    pub async fn add(&self, name: &str, role: Role) -> Result<IssuedToken> {
        check_name(name)?;
        let added = self.store.add_user(name, role).await;
        match added {
            Ok((user, token)) => {
                self.audit(AuditAction::UserAdded, name, Some(format!("role {role}")))
                    .await?;
                Ok(IssuedToken {
                    user,
                    token,
                    logins_ended: 0,
                })
            }
            Err(pp_store::Error::NameTaken { name, .. }) => Err(Error::BadRequest(format!(
                "a user named `{name}` already exists"
            ))),
            Err(other) => Err(Error::from(other)),
        }
    }

    /// Every user, by name.
    pub async fn list(&self) -> Result<Vec<UserRecord>> {
        Ok(self.store.users().await?)
    }

    /// One user ([`Error::NotFound`] for an unknown name).
    pub async fn get(&self, name: &str) -> Result<UserRecord> {
        Ok(self.store.user(name).await?)
    }

    /// Grants a configured workspace to a user ([`Error::NotFound`] for an unknown user
    /// or a workspace this configuration does not have).
    pub async fn grant_workspace(&self, name: &str, workspace: &str) -> Result<UserRecord> {
        if self.service.workspaces().find(Some(workspace)).is_none() {
            return Err(Error::NotFound {
                what: "workspace",
                id: workspace.to_owned(),
            });
        }
        let user = self.store.grant_workspace(name, workspace).await?;
        self.audit(AuditAction::UserGranted, name, Some(workspace.to_owned()))
            .await?;
        Ok(user)
    }

    /// Takes a workspace back ([`Error::NotFound`] for an unknown user, or a workspace
    /// neither configured nor granted).
    pub async fn revoke_workspace(&self, name: &str, workspace: &str) -> Result<UserRecord> {
        let configured = self.service.workspaces().find(Some(workspace)).is_some();
        let (user, removed) = self.store.revoke_workspace(name, workspace).await?;
        if !removed && !configured {
            return Err(Error::NotFound {
                what: "workspace",
                id: workspace.to_owned(),
            });
        }
        self.audit(AuditAction::UserRevoked, name, Some(workspace.to_owned()))
            .await?;
        Ok(user)
    }

    /// Gives a user a new token (shown once) and ends the user's console logins: the
    /// old token stops working at once.
    pub async fn rotate_token(&self, name: &str) -> Result<IssuedToken> {
        let (user, token, logins_ended) = self.store.rotate_user_token(name).await?;
        self.audit(
            AuditAction::UserTokenRotated,
            name,
            Some(format!("{logins_ended} console login(s) ended")),
        )
        .await?;
        Ok(IssuedToken {
            user,
            token,
            logins_ended,
        })
    }

    /// Removes a user: their token stops working, their console logins end at once and
    /// the approval links made as them are revoked; their tasks, approvals and audit rows
    /// stay. [`Error::NotFound`] for an unknown
    /// user; the last owner is refused with [`pp_store::Error::LastOwner`] (as
    /// [`Error::Store`]).
    pub async fn remove(&self, name: &str) -> Result<Removed> {
        let (user, logins_ended) = self.store.remove_user(name).await?;
        // A link re-checks its user when it is used, so one missed here still refuses.
        let links = match self.store.revoke_user_links(name).await? {
            0 => String::new(),
            links => format!("; {links} approval link(s) revoked"),
        };
        self.audit(
            AuditAction::UserRemoved,
            name,
            Some(format!(
                "role {}; {logins_ended} console login(s) ended{links}",
                user.role
            )),
        )
        .await?;
        Ok(Removed { user, logins_ended })
    }

    /// Gives a user another role (their grants stay); returns the user and their role
    /// before. [`Error::NotFound`] for an unknown user; demoting the last owner is
    /// refused with [`pp_store::Error::LastOwner`] (as [`Error::Store`]).
    pub async fn set_role(&self, name: &str, role: Role) -> Result<(UserRecord, Role)> {
        let (user, before) = self.store.set_user_role(name, role).await?;
        if before != role {
            self.audit(
                AuditAction::UserRoleChanged,
                name,
                Some(format!("{before} → {role}")),
            )
            .await?;
        }
        Ok((user, before))
    }

    /// The user whose token is `token`, if any.
    pub async fn by_token(&self, token: String) -> Result<Option<UserRecord>> {
        Ok(self.store.user_by_token(&token).await?)
    }

    /// Starts a console login lasting `ttl` — for the team user `user`, or for the
    /// server's own token when `None` — and returns its secret id.
    pub async fn create_login(&self, user: Option<String>, ttl: Duration) -> Result<String> {
        Ok(match user {
            Some(name) => self.store.create_user_login(&name, ttl).await?,
            None => self.store.create_login(ttl).await?,
        })
    }

    /// Whether `login` names a live (unexpired) console login.
    pub async fn login_valid(&self, login: String) -> Result<bool> {
        Ok(self.store.login_valid(&login).await?)
    }

    /// Who the live console login `login` belongs to; `None` if it is not live.
    pub async fn login_owner(&self, login: String) -> Result<Option<LoginOwner>> {
        Ok(self.store.login_owner(&login).await?)
    }

    /// Ends a console login (logout); unknown logins are not an error.
    pub async fn end_login(&self, login: String) -> Result<()> {
        Ok(self.store.delete_login(&login).await?)
    }

    /// Ends every console login; returns how many there were.
    pub async fn end_all_logins(&self) -> Result<usize> {
        Ok(self.store.delete_all_logins().await?)
    }
}
