//! Errors of this crate.

/// Why a model could not be built.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The script is not a JSON list of turns.
    #[error("invalid script: {0}")]
    InvalidScript(#[source] serde_json::Error),
    /// A turn has neither content nor tool calls.
    #[error("invalid script: turn {turn} has neither `content` nor `tool_calls`")]
    EmptyTurn {
        /// The 0-based turn index.
        turn: usize,
    },
}

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;
