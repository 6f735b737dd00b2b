//! Who is calling: the team user behind a request (team mode) or the single-user
//! operator, and which tasks, workspaces and approvals that caller may see or act on.
//!
//! [`crate::auth::require_auth`] puts a [`Caller`] in every authenticated request's
//! extensions; the route table's [`crate::routes::Access`] refuses a role that may not use
//! a route at all (403), and the handlers use the methods here for the object-level rules
//! (another member's task answers 404, as if it did not exist), and before every action
//! (resolve, revert, cancel, retry, a chat turn) [`Caller::authorize`] checks the role
//! and the grants as the store holds them at that moment.

use std::collections::HashMap;
use std::ops::Deref;

use pp_types::{Role, TaskId, TaskRecord, UserRecord, Via};

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// The identity of an authenticated request: [`pp_tasks::Caller`], the same value the
/// CLI's `--user` builds, with the server's lookups on top.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller(pp_tasks::Caller, Via);

impl Deref for Caller {
    type Target = pp_tasks::Caller;

    fn deref(&self) -> &pp_tasks::Caller {
        &self.0
    }
}

impl Caller {
    /// The single-user operator (no team mode): an owner.
    pub(crate) fn operator() -> Self {
        Self(pp_tasks::Caller::operator(), Via::Api)
    }

    /// A team user.
    pub(crate) fn from_user(user: UserRecord) -> Self {
        Self(pp_tasks::Caller::from_user(user), Via::Api)
    }

    /// The same caller, deciding `via` the console (a login cookie) or the API (a
    /// bearer token).
    pub(crate) fn deciding_via(self, via: Via) -> Self {
        Self(self.0, via)
    }

    /// Where this caller's decisions come from: `console` or `api`.
    pub(crate) fn via(&self) -> Via {
        self.1
    }

    /// The task `id`, or 404 when it does not exist or the caller may not see it (the
    /// same answer, so a member learns nothing about other people's tasks).
    pub(crate) async fn visible_task(
        &self,
        state: &AppState,
        id: &TaskId,
    ) -> ApiResult<TaskRecord> {
        let task = state.service().task(id).await?;
        if self.sees_task(&task) {
            Ok(task)
        } else {
            Err(hidden("task", id.as_str()))
        }
    }

    /// Whether the caller may take `action` now, with their role and grants read from
    /// the store at this moment ([`pp_tasks::TaskService::authorize`]): 403 for a role
    /// or a workspace (revoked since, too) that does not allow it. Every action route
    /// calls it before acting.
    pub(crate) async fn authorize(
        &self,
        state: &AppState,
        action: pp_tasks::Action<'_>,
    ) -> ApiResult<()> {
        Ok(state.service().authorize(&self.0, action).await?)
    }
}

/// The 404 an object the caller may not see answers with (worded as for a missing one).
pub(crate) fn hidden(what: &str, id: &str) -> ApiError {
    ApiError::NotFound(format!("{what} `{id}` not found"))
}

/// Remembers which tasks a caller may see, so a list or a stream looks each task up once.
#[derive(Debug)]
pub(crate) struct Visibility {
    /// Whose view it is.
    caller: Caller,
    /// Task → (visible, its workspace granted); a task's workspace and creator never
    /// change.
    seen: HashMap<TaskId, (bool, bool)>,
}

impl Visibility {
    /// A fresh cache for `caller`.
    pub(crate) fn new(caller: Caller) -> Self {
        Self {
            caller,
            seen: HashMap::new(),
        }
    }

    /// Whether everything is visible (owners), so no lookup is needed.
    pub(crate) fn sees_all(&self) -> bool {
        self.caller.role == Role::Owner
    }

    /// Whether the caller may see task `id` (a task that cannot be read is hidden).
    pub(crate) async fn sees(&mut self, state: &AppState, id: &TaskId) -> bool {
        self.look(state, id).await.0
    }

    /// Whether the caller may read task `id`'s workspace as it is now (a precheck reads
    /// the target's current content): owners, and users granted the workspace. A member
    /// whose grant was revoked still sees their own tasks, not the files.
    pub(crate) async fn reads_workspace(&mut self, state: &AppState, id: &TaskId) -> bool {
        self.look(state, id).await.1
    }

    async fn look(&mut self, state: &AppState, id: &TaskId) -> (bool, bool) {
        if self.sees_all() {
            return (true, true);
        }
        if let Some(known) = self.seen.get(id) {
            return *known;
        }
        let known = match state.service().task(id).await {
            Ok(task) => (
                self.caller.sees_task(&task),
                self.caller.has_workspace(&task.workspace),
            ),
            Err(_) => (false, false),
        };
        self.seen.insert(id.clone(), known);
        known
    }
}
