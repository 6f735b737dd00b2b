//! Why a scheduler call failed, and the API code of each reason.

/// Why a scheduler call failed.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    /// The cron expression is not valid: `field` is one of [`FIELDS`](crate::FIELDS) or
    /// [`WHOLE_EXPRESSION`](crate::WHOLE_EXPRESSION), `token` the part at fault. API code
    /// `invalid_cron`.
    #[error("invalid cron expression: {field} `{token}`: {reason}")]
    InvalidCron {
        /// The field at fault (`minute`, …, `day_of_week`, or `expression`).
        field: &'static str,
        /// The token at fault (or the whole expression).
        token: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The time zone is not an IANA name this build knows. API code `unknown_time_zone`.
    #[error("unknown time zone `{zone}`")]
    UnknownTimeZone {
        /// The name given.
        zone: String,
    },
    /// A field is empty or malformed (name, prompt). API code `bad_request`.
    #[error("{0}")]
    BadRequest(String),
    /// No such schedule, workspace or chat session. API code `not_found`.
    #[error("{what} `{id}` not found")]
    NotFound {
        /// What was looked up.
        what: &'static str,
        /// The id or name.
        id: String,
    },
    /// The schedule's chat session has a turn that has not ended (run now). API code
    /// `session_busy`.
    #[error("session {id} is busy: turn task {task_id} has not ended")]
    SessionBusy {
        /// The session.
        id: String,
        /// The task of the active turn.
        task_id: String,
    },
    /// Another schedule has the name. API code `conflict`.
    #[error("a schedule named `{0}` already exists")]
    NameTaken(String),
    /// The store failed.
    #[error(transparent)]
    Store(pp_store::Error),
    /// Work handed to a blocking thread did not finish, or the task service failed.
    #[error("internal error: {0}")]
    Internal(String),
}

impl SchedulerError {
    /// The API's error code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidCron { .. } => "invalid_cron",
            Self::UnknownTimeZone { .. } => "unknown_time_zone",
            Self::BadRequest(_) => "bad_request",
            Self::NotFound { .. } => "not_found",
            Self::SessionBusy { .. } => "session_busy",
            Self::NameTaken(_) => "conflict",
            Self::Store(_) | Self::Internal(_) => "internal",
        }
    }
}

impl From<pp_store::Error> for SchedulerError {
    fn from(error: pp_store::Error) -> Self {
        match error {
            pp_store::Error::NotFound { what, id } => Self::NotFound { what, id },
            pp_store::Error::NameTaken { name, .. } => Self::NameTaken(name),
            pp_store::Error::SessionBusy { id, task_id } => Self::SessionBusy { id, task_id },
            other => Self::Store(other),
        }
    }
}

impl From<pp_tasks::Error> for SchedulerError {
    /// A store failure the task service passed on stays [`SchedulerError::Store`]; any
    /// other failure of the service is internal here.
    fn from(error: pp_tasks::Error) -> Self {
        match error {
            pp_tasks::Error::Store(error) => Self::Store(error),
            other => Self::Internal(other.to_string()),
        }
    }
}

/// Result type of the scheduler.
pub type Result<T> = std::result::Result<T, SchedulerError>;
