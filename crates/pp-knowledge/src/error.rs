//! What the operator services can fail with.

/// Why a skills or memory operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The skill operation was refused or failed (not found, invalid, read-only, exists,
    /// the jail refused).
    #[error(transparent)]
    Skill(#[from] pp_tools::skills::SkillsError),
    /// The memory operation was refused or failed (stale version, too large, the jail
    /// refused).
    #[error(transparent)]
    Memory(#[from] pp_tools::memory::MemoryError),
    /// The change was made but its audit row could not be written.
    #[error(transparent)]
    Audit(#[from] pp_store::Error),
    /// The file work panicked or was cancelled.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Runs `work` on tokio's blocking pool and waits for it: skill folders and the memory
/// file are read and written there, never on the threads that serve HTTP.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| Error::Internal(format!("blocking work did not finish: {error}")))
}
