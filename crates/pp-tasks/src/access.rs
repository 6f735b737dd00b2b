//! Who acts, and whether they may (team mode, docs/team.md): the [`Caller`] every front
//! end builds (the server from a bearer token or a console login, the CLI from `--user`
//! and the user's token: [`TaskService::authenticate`]), and the one check of an action
//! on a stored object, [`TaskService::authorize`].
//!
//! The check reads the user's role and grants from the store at the moment of the action,
//! not from the [`Caller`] built when the request started: revoking a grant stops the
//! user from resolving, cancelling, retrying, reverting, creating tasks or sending chat
//! turns there at once. It never stops a task that is already queued or running.
//!
//! Which routes a role may use at all is the server's role matrix (`Access` next to each
//! route); this module holds the object-level rules both front ends share.

use pp_store::Store;
use pp_types::{Role, TaskRecord, UserRecord};

use crate::error::{Error, Result};
use crate::service::TaskService;

/// The store as the access checks see it: a user by name or by token; nothing else
/// (adding users, grants and logins are `pp-users`').
struct CallerBook<'a>(&'a Store);

impl CallerBook<'_> {
    /// One user ([`Error::NotFound`] for an unknown name).
    async fn user(&self, name: &str) -> Result<UserRecord> {
        Ok(self.0.user(name).await?)
    }

    /// The user whose token is `token`, if any.
    async fn user_by_token(&self, token: &str) -> Result<Option<UserRecord>> {
        Ok(self.0.user_by_token(token).await?)
    }
}

/// The identity an action is taken for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The team user; `None` for the single-user operator (no team mode).
    pub user: Option<String>,
    /// The role: the single-user operator is an owner.
    pub role: Role,
    /// The workspaces granted (an owner has every workspace whatever this says).
    pub workspaces: Vec<String>,
}

/// An action on a stored object, as [`TaskService::authorize`] checks it.
#[derive(Debug, Clone, Copy)]
pub enum Action<'a> {
    /// Deciding on an approval of this task.
    Resolve(&'a TaskRecord),
    /// Reverting a change this task made.
    Revert(&'a TaskRecord),
    /// Cancelling this task.
    Cancel(&'a TaskRecord),
    /// Retrying this task.
    Retry(&'a TaskRecord),
    /// Working in a workspace: creating a task or a chat session there, or sending a
    /// new turn to one's own chat session there.
    Work {
        /// The workspace's name.
        workspace: &'a str,
    },
    /// Changing (deleting) one's own chat session: `creator` is who created session `id`.
    OwnSession {
        /// The session.
        id: &'a str,
        /// The team user who created it.
        creator: Option<&'a str>,
    },
    /// Something only owners do (changing memory, skills, schedules, channels): what.
    OwnerOnly(&'static str),
}

impl Caller {
    /// The single-user operator (no team mode): an owner.
    pub fn operator() -> Self {
        Self {
            user: None,
            role: Role::Owner,
            workspaces: Vec::new(),
        }
    }

    /// A team user as the store knows them.
    pub fn from_user(user: UserRecord) -> Self {
        Self {
            user: Some(user.name),
            role: user.role,
            workspaces: user.workspaces,
        }
    }

    /// Whether the caller works in `workspace` (owners: every workspace).
    pub fn has_workspace(&self, workspace: &str) -> bool {
        self.role == Role::Owner || self.workspaces.iter().any(|name| name == workspace)
    }

    /// Whether the caller may see `task` (and its events, approvals and changes): an
    /// owner every task, a member the tasks they created, an approver or viewer every
    /// task of a granted workspace.
    pub fn sees_task(&self, task: &TaskRecord) -> bool {
        match self.role {
            Role::Owner => true,
            Role::Member => {
                self.user.is_some() && task.created_by_user.as_deref() == self.user.as_deref()
            }
            Role::Approver | Role::Viewer => self.has_workspace(&task.workspace),
        }
    }

    /// Whether the caller sees the chat session created by `creator` (owners: all).
    pub fn sees_session(&self, creator: Option<&str>) -> bool {
        self.role == Role::Owner || (self.user.is_some() && creator == self.user.as_deref())
    }

    /// Whether this caller, as they are now, may take `action`: [`Error::NotFound`] for
    /// a task they may not see (cancel, retry: the same answer as a missing one),
    /// [`Error::Forbidden`] for a role or a workspace that does not allow it.
    pub fn permits(&self, action: Action<'_>) -> Result<()> {
        let not_granted = |workspace: &str| {
            Err(Error::Forbidden(format!(
                "workspace `{workspace}` is not granted to you"
            )))
        };
        match (action, self.role) {
            (_, Role::Owner) => Ok(()),
            (Action::OwnerOnly(what), _) => {
                Err(Error::Forbidden(format!("only owners may {what}")))
            }
            (Action::Resolve(task) | Action::Revert(task), Role::Approver) => {
                if self.has_workspace(&task.workspace) {
                    Ok(())
                } else {
                    not_granted(&task.workspace)
                }
            }
            (Action::Resolve(task) | Action::Revert(task), Role::Member | Role::Viewer) => {
                Err(Error::Forbidden(format!(
                    "your role ({}) may not decide for workspace `{}`",
                    self.role, task.workspace
                )))
            }
            (Action::Cancel(task) | Action::Retry(task), _) if !self.sees_task(task) => {
                Err(Error::NotFound {
                    what: "task",
                    id: task.id.to_string(),
                })
            }
            (
                Action::Cancel(_)
                | Action::Retry(_)
                | Action::Work { .. }
                | Action::OwnSession { .. },
                Role::Viewer,
            ) => Err(Error::Forbidden(
                "your role (viewer) may only read".to_owned(),
            )),
            (Action::OwnSession { id, creator }, Role::Approver | Role::Member) => {
                if self.sees_session(creator) {
                    Ok(())
                } else {
                    Err(Error::NotFound {
                        what: "session",
                        id: id.to_owned(),
                    })
                }
            }
            (Action::Cancel(task) | Action::Retry(task), Role::Approver | Role::Member) => {
                if self.has_workspace(&task.workspace) {
                    Ok(())
                } else {
                    not_granted(&task.workspace)
                }
            }
            (Action::Work { workspace }, Role::Approver | Role::Member) => {
                if self.has_workspace(workspace) {
                    Ok(())
                } else {
                    not_granted(workspace)
                }
            }
        }
    }
}

impl TaskService {
    /// The team user `name`, authenticated by their `token` (the CLI's `--user NAME`
    /// with the token from `POCKETPILOT_TOKEN` or a token file): the same [`Caller`] the
    /// API builds from a bearer token. [`Error::Unauthorized`] when the token is not
    /// `name`'s (an unknown name, a wrong or rotated token).
    pub async fn authenticate(&self, name: &str, token: String) -> Result<Caller> {
        match CallerBook(self.store()).user_by_token(&token).await? {
            Some(user) if user.name == name => Ok(Caller::from_user(user)),
            _ => Err(Error::Unauthorized(format!(
                "the token is not a valid token of user `{name}`"
            ))),
        }
    }

    /// Whether `caller` may take `action` now: the user's role and grants are read from
    /// the store at this moment (a grant revoked since the caller was authenticated
    /// counts at once), then [`Caller::permits`] decides. The single-user operator may
    /// do anything. A user who no longer exists gets [`Error::Unauthorized`].
    pub async fn authorize(&self, caller: &Caller, action: Action<'_>) -> Result<()> {
        let Some(name) = &caller.user else {
            return Ok(());
        };
        let now = match CallerBook(self.store()).user(name).await {
            Ok(user) => Caller::from_user(user),
            Err(Error::NotFound { .. }) => {
                return Err(Error::Unauthorized(format!(
                    "user `{name}` no longer exists"
                )));
            }
            Err(other) => return Err(other),
        };
        now.permits(action)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pp_types::TaskState;

    fn caller(name: &str, role: Role, workspaces: &[&str]) -> Caller {
        Caller {
            user: Some(name.to_owned()),
            role,
            workspaces: workspaces.iter().map(|name| (*name).to_owned()).collect(),
        }
    }

    fn task(workspace: &str, by: &str) -> TaskRecord {
        crate::test_records::task(workspace, TaskState::WaitingApproval, Some(by))
    }

    fn kind(result: &Result<()>) -> &'static str {
        match result {
            Ok(()) => "ok",
            Err(Error::Forbidden(_)) => "forbidden",
            Err(Error::NotFound { .. }) => "not_found",
            Err(_) => "other",
        }
    }

    #[test]
    fn each_role_may_act_only_where_granted() {
        let mine = task("finance", "carol");
        let theirs = task("finance", "dave");
        let carol = caller("carol", Role::Member, &["finance"]);
        let revoked = caller("carol", Role::Member, &[]);
        let abe = caller("abe", Role::Approver, &["finance"]);
        let abe_revoked = caller("abe", Role::Approver, &["legal"]);
        let vic = caller("vic", Role::Viewer, &["finance"]);
        let olga = caller("olga", Role::Owner, &[]);
        let turn = Action::Work {
            workspace: "finance",
        };
        for (who, action, expected) in [
            (&carol, Action::Cancel(&mine), "ok"),
            (&carol, Action::Retry(&mine), "ok"),
            (&carol, turn, "ok"),
            (&carol, Action::Cancel(&theirs), "not_found"),
            (&carol, Action::Resolve(&mine), "forbidden"),
            (&revoked, Action::Cancel(&mine), "forbidden"),
            (&revoked, Action::Retry(&mine), "forbidden"),
            (&revoked, turn, "forbidden"),
            (&abe, Action::Resolve(&theirs), "ok"),
            (&abe, Action::Revert(&theirs), "ok"),
            (&abe, Action::Cancel(&theirs), "ok"),
            (&abe_revoked, Action::Resolve(&theirs), "forbidden"),
            (&abe_revoked, Action::Revert(&theirs), "forbidden"),
            (&abe_revoked, Action::Cancel(&theirs), "not_found"),
            (&abe_revoked, turn, "forbidden"),
            (&abe, Action::OwnerOnly("change the memory"), "forbidden"),
            (&vic, Action::Resolve(&theirs), "forbidden"),
            (&vic, Action::Cancel(&theirs), "forbidden"),
            (&vic, turn, "forbidden"),
            (
                &carol,
                Action::OwnSession {
                    id: "s_1",
                    creator: Some("carol"),
                },
                "ok",
            ),
            (
                &carol,
                Action::OwnSession {
                    id: "s_1",
                    creator: Some("dave"),
                },
                "not_found",
            ),
            (
                &vic,
                Action::OwnSession {
                    id: "s_1",
                    creator: Some("vic"),
                },
                "forbidden",
            ),
            (&olga, Action::Resolve(&theirs), "ok"),
            (&olga, Action::OwnerOnly("change the memory"), "ok"),
            (&Caller::operator(), Action::Revert(&theirs), "ok"),
        ] {
            assert_eq!(kind(&who.permits(action)), expected, "{who:?} {action:?}");
        }
    }
}
