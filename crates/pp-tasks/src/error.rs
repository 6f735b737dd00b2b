//! Errors of the task service.

use pp_types::{ApprovalState, TaskState};

/// What went wrong in a task-service call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No task, approval, session or workspace with that id or name.
    #[error("{what} `{id}` not found")]
    NotFound {
        /// What was looked up.
        what: &'static str,
        /// The id or name.
        id: String,
    },
    /// The approval was already resolved (double click, another tab, the CLI).
    #[error("approval {id} is already {}", state.as_str())]
    AlreadyResolved {
        /// The approval.
        id: String,
        /// Its state.
        state: ApprovalState,
    },
    /// A decision sent the fingerprint of the target as the person saw it, and the
    /// target is no longer in that state: nothing ran and the approval stays pending.
    #[error("{0}")]
    ChangedSinceSeen(String),
    /// An approval link that no longer decides (used, expired, revoked, or its approval
    /// decided another way): the message says by whom and how (`410 gone`).
    #[error("{0}")]
    Gone(String),
    /// The task is not in a state that allows this.
    #[error("task {id} is {}: {action} is not possible", state.as_str())]
    InvalidState {
        /// The task.
        id: String,
        /// Its state.
        state: TaskState,
        /// What was attempted.
        action: &'static str,
    },
    /// A chat session's latest turn has not ended (`queued`, `running` or
    /// `waiting_approval`): no new message, no delete, until it does.
    #[error("session {id} is busy: turn task {task_id} has not ended")]
    SessionBusy {
        /// The session.
        id: String,
        /// The task of the active turn.
        task_id: pp_types::TaskId,
    },
    /// Edited arguments failed the tool's schema or the gate; the approval stays pending.
    #[error("invalid edited arguments: {0}")]
    InvalidArguments(String),
    /// Team mode: the credentials name no user (a wrong or rotated token, a user that
    /// no longer exists).
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// Team mode: the user's role or workspace grants do not allow this action now.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// A link or a chat button tried to approve a call it may not (`[remote]
    /// approve_capabilities`, an overwriting move): nothing was recorded.
    #[error("{0}")]
    NotRemotelyApprovable(String),
    /// Bad input (empty prompt, unknown decision, …).
    #[error("{0}")]
    BadRequest(String),
    /// The workspace could not be opened.
    #[error("workspace {path} cannot be opened")]
    Workspace {
        /// The workspace root.
        path: String,
        /// Why.
        #[source]
        source: pp_gate::JailError,
    },
    /// The store failed (conflicts that mean something else arrive as their own variant:
    /// see the `From` impl).
    #[error(transparent)]
    Store(pp_store::Error),
    /// The task's model could not be built.
    #[error("model: {0}")]
    Model(String),
    /// The toolbox could not equip a run segment (a provider failed, or offered a tool
    /// the policy cannot classify).
    #[error("tools: {0}")]
    Tools(String),
    /// The memory file could not be reached (a revert of a `memory_write`).
    #[error(transparent)]
    Memory(#[from] pp_tools::memory::MemoryError),
    /// Work the service handed to a blocking thread did not finish (it panicked or the
    /// runtime is shutting down).
    #[error("internal error: {0}")]
    Internal(String),
}

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;

impl From<pp_store::Error> for Error {
    /// A store error keeps its meaning: a missing row becomes [`Error::NotFound`], a
    /// decided approval [`Error::AlreadyResolved`], a busy session [`Error::SessionBusy`];
    /// anything else (a compare-and-set conflict included) stays [`Error::Store`].
    fn from(error: pp_store::Error) -> Self {
        Self::from_store(error)
    }
}

impl Error {
    /// Maps store conflicts to service errors where the meaning is the same.
    pub(crate) fn from_store(error: pp_store::Error) -> Self {
        match error {
            pp_store::Error::NotFound { what, id } => Self::NotFound { what, id },
            pp_store::Error::AlreadyResolved { id, state } => Self::AlreadyResolved { id, state },
            pp_store::Error::SessionBusy { id, task_id } => Self::SessionBusy {
                id,
                task_id: pp_types::TaskId(task_id),
            },
            other => Self::Store(other),
        }
    }

    /// Whether this is a store compare-and-set conflict (someone else moved the task
    /// first): front ends answer it like [`Error::InvalidState`].
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Store(pp_store::Error::Conflict { .. }))
    }
}
