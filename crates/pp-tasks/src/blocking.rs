//! Running blocking work (file IO, hashing, opening jails) off the async worker threads.
//! The store needs none of this: it is async, and its SQLite backend runs its own calls
//! on the blocking pool.

use crate::error::{Error, Result};

/// Runs `work` on tokio's blocking pool and waits for it, so a slow disk never
/// stalls the runtime threads that serve HTTP and drive other tasks.
///
/// A panic inside `work` becomes [`Error::Internal`] instead of unwinding into the caller.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| Error::Internal(format!("blocking work did not finish: {error}")))
}
