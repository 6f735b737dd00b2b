//! Why a document could not be read.

/// Why a document, a table or an invoice could not be read. Every message is written
/// for the model and the person: it says what is wrong and, where it helps, what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "message", rename_all = "snake_case")]
pub enum DocsError {
    /// The format is not one this crate reads (or the content does not match it).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The file is broken (truncated, junk, a loop in its structure).
    #[error("the file cannot be read: {0}")]
    Malformed(String),
    /// The file is encrypted.
    #[error("the file is encrypted; PocketPilot does not read encrypted documents")]
    Encrypted,
    /// The input is larger than the cap.
    #[error("the file is larger than {limit} bytes")]
    TooLarge {
        /// The cap in bytes.
        limit: u64,
    },
    /// The arguments of the call are wrong (pages, op, columns, …).
    #[error("{0}")]
    BadRequest(String),
    /// The parser went over a limit and was stopped (`cpu`, `memory`, `time`, `output`).
    #[error("the parser was stopped: {0}")]
    Limit(String),
    /// The parser process died (a crash, a signal).
    #[error("the parser crashed: {0}")]
    Crashed(String),
    /// The parser process could not be started or spoke nonsense.
    #[error("the parser could not run: {0}")]
    Process(String),
    /// The caller stopped the work (the task was cancelled or ran out of time) and the
    /// child was killed.
    #[error("stopped: the task was cancelled or ran out of time")]
    Interrupted,
    /// A SQL query was refused or failed.
    #[error("sql: {0}")]
    Sql(String),
}
