//! Why a channel call failed, and the API code of each reason.

/// Why a channel call failed.
#[derive(Debug, thiserror::Error)]
pub enum ChannelsError {
    /// A field is empty or malformed (name, template). API code `bad_request`.
    #[error("{0}")]
    BadRequest(String),
    /// No such channel or workspace. API code `not_found`.
    #[error("{what} `{id}` not found")]
    NotFound {
        /// What was looked up.
        what: &'static str,
        /// The name.
        id: String,
    },
    /// Another channel has the name. API code `conflict`.
    #[error("a channel named `{0}` already exists")]
    NameTaken(String),
    /// The store failed.
    #[error(transparent)]
    Store(pp_store::Error),
    /// A secret could not be generated, sealed or opened, or blocking work failed.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ChannelsError {
    /// The API's error code for this error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadRequest(_) => "bad_request",
            Self::NotFound { .. } => "not_found",
            Self::NameTaken(_) => "conflict",
            Self::Store(_) | Self::Internal(_) => "internal",
        }
    }
}

impl From<pp_store::Error> for ChannelsError {
    fn from(error: pp_store::Error) -> Self {
        match error {
            pp_store::Error::NotFound { what, id } => Self::NotFound { what, id },
            pp_store::Error::NameTaken { name, .. } => Self::NameTaken(name),
            other => Self::Store(other),
        }
    }
}

impl From<pp_tasks::Error> for ChannelsError {
    fn from(error: pp_tasks::Error) -> Self {
        Self::Internal(error.to_string())
    }
}

/// Result type of the channels service.
pub type Result<T> = std::result::Result<T, ChannelsError>;
