//! Embedded SQLite storage for PocketPilot: tasks, their append-only events, approvals
//! with the checkpoints to resume from, the audit ledger, the change log (what approved
//! calls did to files, and reverts), chat sessions and their turns, console logins, and
//! the model calls each task made with their token usage and estimated cost, and schedules
//! with their history (each occurrence fired once across processes:
//! [`Store::fire_schedule`]), and webhook channels with their delivery log and the
//! seen-signature record that refuses replays across processes
//! ([`Store::claim_signature`]), and team users with their roles, workspace grants and
//! hashed tokens (`users.rs`: [`Store::add_user`], [`Store::user_by_token`]).
//!
//! [`Store`] is the one type: open it with [`Store::open`], share it with an `Arc`, and
//! call its synchronous methods (async callers wrap them in a blocking task). Every state
//! change is a compare-and-set inside one `BEGIN IMMEDIATE` transaction, so several
//! processes sharing one database file (the server and the CLI) can never claim, run or
//! resolve the same row twice: the loser gets [`Error::Conflict`] or
//! [`Error::AlreadyResolved`]. The records themselves ([`pp_types::TaskRecord`],
//! [`pp_types::ApprovalRecord`], …) live in `pp-types`; this crate adds the inputs
//! ([`NewTask`], [`TaskChange`], [`NewApproval`], [`Resolve`], [`AuditFilter`]).
//!
//! Every time the store writes or compares comes from its [`pp_types::Clock`]
//! ([`Store::open_with_clock`]; [`Store::open`] uses the system clock), so tests move a
//! [`pp_types::ManualClock`] instead of sleeping. [`Store::backup_to`] and
//! [`Store::restore_file`] copy the database out and back; [`Store::prune`] drops the
//! history of tasks finished long ago.
//!
//! This crate depends only on `pp-types` inside the workspace and is the only user of
//! `rusqlite`. The schema lives in `migrations/` and is applied on open.
//!
//! ```
//! use pp_store::{NewTask, Store, TaskChange};
//! use pp_types::{Actor, TaskState};
//!
//! let dir = tempfile::tempdir()?;
//! let store = Store::open(&dir.path().join("pocketpilot.db"))?;
//! let task = store.create_task(NewTask {
//!     prompt: "Summarise notes.md".into(),
//!     workspace: "home".into(),
//!     workspace_path: "/srv/home".into(),
//!     created_by: Actor::Operator,
//!     origin: None,
//!     script: None,
//! })?;
//! let claimed = store.claim_queued()?.ok_or("nothing queued")?;
//! assert_eq!(claimed.id, task.id);
//! assert!(store.claim_queued()?.is_none(), "a task is claimed once");
//!
//! let done = TaskChange {
//!     final_text: Some("Three points.".into()),
//!     ..TaskChange::to(TaskState::Completed)
//! };
//! let (task, _events) = store.transition(&task.id, &[TaskState::Running], done)?;
//! assert!(task.finished_at.is_some());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod approvals;
mod audit;
mod backup;
mod cancel;
mod changes;
mod channels;
mod chat;
mod error;
mod events;
mod ids;
mod logins;
mod model_calls;
mod prune;
mod rows;
mod schedules;
mod schema;
mod task_search;
mod tasks;
mod users;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use pp_types::{Clock, SystemClock, Timestamp};
use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

pub use approvals::{NewApproval, Resolve};
pub use audit::AuditFilter;
pub use changes::{Before, ChangeRow, ChangeState, NewChange};
pub use channels::{
    Channel, ChannelChange, DELIVERIES_KEPT, DeliveryRecord, DeliveryStatus, NewChannel,
};
pub use chat::{ACTIVE_TURN_STATES, ChatSession, ChatTurn, NewChatSession};
pub use error::{Error, Result};
pub use model_calls::{ModelCallRow, NewModelCall};
pub use prune::PruneReport;
pub use schedules::{
    FireOccurrence, Fired, NewSchedule, Overlap, Schedule, ScheduleEvent, ScheduleEventKind,
    ScheduleSpec,
};
pub use schema::SCHEMA_VERSION;
pub use task_search::TaskFilter;
pub use tasks::{NewTask, TaskChange};
pub use users::{LoginOwner, USER_TOKEN_PREFIX};

/// The PocketPilot database: one SQLite file in WAL mode.
///
/// `Send + Sync`; share it with an `Arc`. Within a process the mutex serialises use of
/// the one connection; across processes SQLite's locks and the `BEGIN IMMEDIATE`
/// transactions do.
#[derive(Debug)]
pub struct Store {
    /// The connection. A mutex rather than a pool: writes are serialised by SQLite
    /// anyway, and the operations are short.
    connection: Mutex<Connection>,
    /// The database file, as given to [`Store::open`].
    path: PathBuf,
    /// Where every stored time comes from (creation, changes, heartbeats, lease and
    /// session expiry checks, pruning): shared with the task service through
    /// [`Store::clock`] so both agree, and replaceable in tests.
    clock: Arc<dyn Clock>,
}

impl Store {
    /// Opens the database at `path`, creating it (mode 0600 on Unix) and applying any
    /// missing migrations. Times come from the system clock.
    ///
    /// On Unix an existing database file, `-wal` or `-shm` file that its group or other
    /// users may read or write is tightened to mode 0600: it holds file contents from
    /// checkpoints. The parent directory must exist. Fails with [`Error::NewerSchema`]
    /// when the file was written by a newer build.
    pub fn open(path: &Path) -> Result<Store> {
        Self::open_with_clock(path, Arc::new(SystemClock))
    }

    /// Like [`Store::open`], with every time taken from `clock`.
    pub fn open_with_clock(path: &Path, clock: Arc<dyn Clock>) -> Result<Store> {
        let open_error = |source: Box<dyn std::error::Error + Send + Sync>| Error::Open {
            path: path.to_owned(),
            source,
        };
        schema::create_file(path).map_err(|error| open_error(Box::new(error)))?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut connection = Connection::open_with_flags(path, flags)
            .and_then(|connection| schema::configure(&connection).map(|()| connection))
            .map_err(|error| open_error(Box::new(error)))?;
        schema::migrate(&mut connection)?;
        Ok(Store {
            connection: Mutex::new(connection),
            path: path.to_owned(),
            clock,
        })
    }

    /// The store's clock, for callers that must agree with it (running time, leases).
    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::clone(&self.clock)
    }

    /// The current time by the store's clock.
    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64> {
        Ok(schema::user_version(&self.connection())?)
    }

    fn connection(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves no transaction open (dropping a
        // `Transaction` rolls it back), so the connection is still sound.
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `work` in one `BEGIN IMMEDIATE` transaction: the write lock is taken first, so
    /// what `work` reads cannot change before it writes. Commits only if `work` succeeds.
    fn write<T>(&self, work: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut connection = self.connection();
        let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let value = work(&transaction)?;
        transaction.commit()?;
        Ok(value)
    }

    /// Runs `work` on the connection (one statement: no transaction needed).
    fn read<T>(&self, work: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        work(&self.connection())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Store>();
    }
}
