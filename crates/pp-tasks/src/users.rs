//! Team users (team mode, docs/team.md): adding them, their workspace grants, token
//! rotation, recognising a token or a console login, and tasks and chat sessions
//! recorded with the user who asked.
//!
//! Which routes a role may use is the server's role matrix; this module only keeps the
//! users and checks their names, roles and workspaces.

use std::time::Duration;

use pp_types::{Role, TaskRecord, UserRecord, valid_user_name};

pub use pp_store::{LoginOwner, USER_TOKEN_PREFIX};

use crate::{CreateTask, Error, Result, TaskService};

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

impl TaskService {
    /// Adds a user with a fresh token (shown once: only its SHA-256 is stored).
    pub async fn add_user(&self, name: &str, role: Role) -> Result<IssuedToken> {
        check_name(name)?;
        let added = self.inner.store.add_user(name, role).await;
        match added {
            Ok((user, token)) => Ok(IssuedToken {
                user,
                token,
                logins_ended: 0,
            }),
            Err(pp_store::Error::NameTaken { name, .. }) => Err(Error::BadRequest(format!(
                "a user named `{name}` already exists"
            ))),
            Err(other) => Err(Error::from_store(other)),
        }
    }

    /// Every user, by name.
    pub async fn users(&self) -> Result<Vec<UserRecord>> {
        Ok(self.inner.store.users().await?)
    }

    /// One user ([`Error::NotFound`] for an unknown name).
    pub async fn user(&self, name: &str) -> Result<UserRecord> {
        Ok(self.inner.store.user(name).await?)
    }

    /// Grants a configured workspace to a user ([`Error::NotFound`] for an unknown user
    /// or a workspace this configuration does not have).
    pub async fn grant_workspace(&self, name: &str, workspace: &str) -> Result<UserRecord> {
        if self.workspaces().find(Some(workspace)).is_none() {
            return Err(Error::NotFound {
                what: "workspace",
                id: workspace.to_owned(),
            });
        }
        Ok(self.inner.store.grant_workspace(name, workspace).await?)
    }

    /// Takes a workspace back ([`Error::NotFound`] for an unknown user, or a workspace
    /// neither configured nor granted).
    pub async fn revoke_workspace(&self, name: &str, workspace: &str) -> Result<UserRecord> {
        let configured = self.workspaces().find(Some(workspace)).is_some();
        let (user, removed) = self.inner.store.revoke_workspace(name, workspace).await?;
        if !removed && !configured {
            return Err(Error::NotFound {
                what: "workspace",
                id: workspace.to_owned(),
            });
        }
        Ok(user)
    }

    /// Gives a user a new token (shown once) and ends the user's console logins: the
    /// old token stops working at once.
    pub async fn rotate_user_token(&self, name: &str) -> Result<IssuedToken> {
        let (user, token, logins_ended) = self.inner.store.rotate_user_token(name).await?;
        Ok(IssuedToken {
            user,
            token,
            logins_ended,
        })
    }

    /// The user whose token is `token`, if any.
    pub async fn user_by_token(&self, token: String) -> Result<Option<UserRecord>> {
        Ok(self.inner.store.user_by_token(&token).await?)
    }

    /// Starts a console login for the user `name` that lasts `ttl`; returns its secret.
    pub async fn create_user_login(&self, name: String, ttl: Duration) -> Result<String> {
        Ok(self.inner.store.create_user_login(&name, ttl).await?)
    }

    /// Who the live console login `login` belongs to; `None` if it is not live.
    pub async fn login_owner(&self, login: String) -> Result<Option<LoginOwner>> {
        Ok(self.inner.store.login_owner(&login).await?)
    }

    /// Like [`TaskService::create`], recording `user` (team mode) as the task's creator
    /// (`TaskRecord::created_by_user`) and on its `task_created` audit row.
    pub async fn create_as_user(
        &self,
        request: CreateTask,
        user: Option<String>,
    ) -> Result<TaskRecord> {
        self.create_recorded(request, None, user).await
    }

    /// Records `user` as the creator of task `id` if none is recorded (chat turns).
    pub async fn set_task_user(&self, id: &pp_types::TaskId, user: &str) -> Result<()> {
        Ok(self.inner.store.set_task_user(id, user).await?)
    }

    /// The task change `id` belongs to (for the role checks of a revert).
    pub async fn change_task(&self, id: &pp_types::ChangeId) -> Result<TaskRecord> {
        let row = self.inner.store.change(id).await?;
        Ok(self.inner.store.task(&row.change.task_id).await?)
    }

    /// Records the team user who created the chat session `id`.
    pub async fn set_session_user(&self, id: &str, user: &str) -> Result<()> {
        Ok(self.inner.store.set_chat_session_user(id, user).await?)
    }

    /// The team user who created the chat session `id` (`None`: none recorded).
    pub async fn session_user(&self, id: &str) -> Result<Option<String>> {
        Ok(self.inner.store.chat_session_user(id).await?)
    }
}
