//! The worker registry's records: a worker to register and a registered one.

use pp_types::Timestamp;

/// A worker process to register: where it runs and which workspaces (by name) it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWorker {
    /// The host name (for people reading the registry).
    pub host: String,
    /// Its process id on that host.
    pub pid: u32,
    /// The workspace names this worker can run tasks in.
    pub workspaces: Vec<String>,
}

/// A registered worker process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerRecord {
    /// `w_…`.
    pub id: String,
    /// The host name it gave.
    pub host: String,
    /// Its process id on that host.
    pub pid: u32,
    /// The workspace names it can run tasks in.
    pub workspaces: Vec<String>,
    /// When it registered.
    pub started_at: Timestamp,
    /// Its last heartbeat.
    pub heartbeat_at: Timestamp,
}
