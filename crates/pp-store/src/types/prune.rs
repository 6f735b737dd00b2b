//! What retention removed.

/// What [`crate::Store::prune`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Finished tasks that lost at least one event or audit row.
    pub tasks: usize,
    /// Events removed.
    pub events: usize,
    /// Audit rows removed (of those tasks, and rows tied to no task).
    pub audit: usize,
}
