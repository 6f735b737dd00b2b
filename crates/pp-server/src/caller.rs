//! Who is calling: the team user behind a request (team mode) or the single-user
//! operator, and which tasks, workspaces and approvals that caller may see or act on.
//!
//! [`crate::auth::require_auth`] puts a [`Caller`] in every authenticated request's
//! extensions; the route table's [`crate::routes::Access`] refuses a role that may not use
//! a route at all (403), and the handlers use the methods here for the object-level rules
//! (another member's task answers 404, as if it did not exist).

use std::collections::HashMap;

use pp_types::{Role, TaskId, TaskRecord, UserRecord};

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// The identity of an authenticated request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Caller {
    /// The team user; `None` for the single-user operator (no team mode).
    pub(crate) user: Option<String>,
    /// The role: the single-user operator is an owner.
    pub(crate) role: Role,
    /// The workspaces granted (an owner has every workspace whatever this says).
    pub(crate) workspaces: Vec<String>,
}

impl Caller {
    /// The single-user operator (no team mode): an owner.
    pub(crate) fn operator() -> Self {
        Self {
            user: None,
            role: Role::Owner,
            workspaces: Vec::new(),
        }
    }

    /// A team user.
    pub(crate) fn from_user(user: UserRecord) -> Self {
        Self {
            user: Some(user.name),
            role: user.role,
            workspaces: user.workspaces,
        }
    }

    /// Whether the caller works in `workspace` (owners: every workspace).
    pub(crate) fn has_workspace(&self, workspace: &str) -> bool {
        self.role == Role::Owner || self.workspaces.iter().any(|name| name == workspace)
    }

    /// Whether the caller may see `task` (and its events, approvals and changes): an
    /// owner every task, a member the tasks they created, an approver or viewer every
    /// task of a granted workspace.
    pub(crate) fn sees_task(&self, task: &TaskRecord) -> bool {
        match self.role {
            Role::Owner => true,
            Role::Member => {
                self.user.is_some() && task.created_by_user.as_deref() == self.user.as_deref()
            }
            Role::Approver | Role::Viewer => self.has_workspace(&task.workspace),
        }
    }

    /// Whether the caller may decide on an approval of `task` (or revert its changes):
    /// an owner, or an approver of the task's workspace.
    pub(crate) fn resolves_for(&self, task: &TaskRecord) -> bool {
        match self.role {
            Role::Owner => true,
            Role::Approver => self.has_workspace(&task.workspace),
            Role::Member | Role::Viewer => false,
        }
    }

    /// Whether the caller sees the chat session created by `creator` (owners: all).
    pub(crate) fn sees_session(&self, creator: Option<&str>) -> bool {
        self.role == Role::Owner || (self.user.is_some() && creator == self.user.as_deref())
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

    /// 403 unless the caller may decide on approvals (and reverts) of `task`.
    pub(crate) fn check_resolve(&self, task: &TaskRecord) -> ApiResult<()> {
        if self.resolves_for(task) {
            Ok(())
        } else {
            Err(ApiError::Forbidden(format!(
                "your role may not decide for workspace `{}`",
                task.workspace
            )))
        }
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
    /// Task → visible; a task's workspace and creator never change.
    seen: HashMap<TaskId, bool>,
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
        if self.sees_all() {
            return true;
        }
        if let Some(known) = self.seen.get(id) {
            return *known;
        }
        let visible = match state.service().task(id).await {
            Ok(task) => self.caller.sees_task(&task),
            Err(_) => false,
        };
        self.seen.insert(id.clone(), visible);
        visible
    }
}
