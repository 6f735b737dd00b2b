//! PocketPilot's storage: embedded SQLite by default, PostgreSQL for a team server: tasks, their append-only events, approvals
//! with the checkpoints to resume from, the audit ledger, the change log (what approved
//! calls did to files, and reverts), chat sessions and their turns, console logins, and
//! the model calls each task made with their token usage and estimated cost, and schedules
//! with their history (each occurrence fired once across processes:
//! [`Store::fire_schedule`]), and webhook channels with their delivery log and the
//! seen-signature record that refuses replays across processes
//! ([`Store::claim_signature`]), and team users with their roles, workspace grants and
//! hashed tokens (`users.rs`: [`Store::add_user`], [`Store::user_by_token`]).
//!
//! [`Store`] is the one type, an async interface over the backend a [`StoreUrl`] names
//! (`sqlite/`: rusqlite, its synchronous calls queued and run in batches, one transaction
//! each, on the blocking pool: `store/queue.rs`; `postgres/`:
//! `tokio-postgres` with a `deadpool-postgres` pool, for a team server). Open it with
//! [`Store::connect`] (or [`Store::open`] for an SQLite file from blocking code), clone it
//! freely, and await its methods. Every state change is a compare-and-set inside one
//! transaction, so several processes sharing one database (the server and the CLI,
//! several workers) can never claim, run or resolve the same row twice: the loser gets
//! [`Error::Conflict`] or [`Error::AlreadyResolved`].
//!
//! The layout, from the ground up: `types/` holds what the store takes and keeps besides
//! the records of `pp-types` ([`pp_types::TaskRecord`], [`pp_types::ApprovalRecord`], …):
//! the inputs ([`NewTask`], [`TaskChange`], [`NewApproval`], [`Resolve`], [`AuditFilter`],
//! …) and its own rows ([`ChangeRow`], [`Schedule`], [`Channel`], [`ChatSession`], …);
//! `error.rs`, `ids.rs` and `url.rs` ([`StoreUrl`]) sit beside it. `mapping/` turns rows
//! into records once for both backends (each backend reads a row's columns in order into
//! a `Raw*` struct, which decodes itself there). `sqlite/` and `postgres/` are the two
//! implementations of the same operations, each using only that core, never the other.
//! `store/` is [`Store`]: its methods are generated from one table
//! (`store/methods.rs`) that sends each call to the backend's method of the same name.
//!
//! Every time the store writes or compares comes from its [`pp_types::Clock`]
//! ([`Store::open_with_clock`]; [`Store::open`] uses the system clock), so tests move a
//! [`pp_types::ManualClock`] instead of sleeping. [`Store::backup_to`] and
//! [`Store::restore_file`] copy the database out and back; [`Store::prune`] drops the
//! history of tasks finished long ago.
//!
//! This crate depends only on `pp-types` inside the workspace. It is the only user of
//! `tokio-postgres`, and the only one that keeps PocketPilot's data in SQLite (`pp-docs`
//! also uses `rusqlite`, for in-memory tables of documents). Each backend's schema
//! lives in `migrations/<backend>/` and is applied on open ([`SCHEMA_VERSION`]: the
//! number of SQLite migrations).
//!
//! ```
//! use pp_store::{NewTask, Store, TaskChange};
//! use pp_types::{Actor, TaskState};
//!
//! let dir = tempfile::tempdir()?;
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let store = Store::open(&dir.path().join("pocketpilot.db"))?;
//! let task = store.create_task(NewTask {
//!     prompt: "Summarise notes.md".into(),
//!     workspace: "home".into(),
//!     workspace_path: "/srv/home".into(),
//!     created_by: Actor::Operator,
//!     origin: None,
//!     script: None,
//! }).await?;
//! let claimed = store.claim_queued().await?.ok_or("nothing queued")?;
//! assert_eq!(claimed.id, task.id);
//! assert!(store.claim_queued().await?.is_none(), "a task is claimed once");
//!
//! let done = TaskChange {
//!     final_text: Some("Three points.".into()),
//!     ..TaskChange::to(TaskState::Completed)
//! };
//! let (task, _events) = store.transition(&task.id, &[TaskState::Running], done).await?;
//! assert!(task.finished_at.is_some());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod ids;
mod mapping;
mod postgres;
mod sqlite;
mod store;
mod types;
mod url;

pub use error::{Error, Result};
pub use sqlite::SCHEMA_VERSION;
pub use store::Store;
pub use types::{
    ACTIVE_TURN_STATES, ApprovalLink, AuditFilter, Before, ChangeRow, ChangeState, Changeset,
    Channel, ChannelChange, ChatSession, ChatTurn, DELIVERIES_KEPT, DeliveryRecord, DeliveryStatus,
    FireOccurrence, Fired, LinkEnd, LoginOwner, ModelCallRow, NewApproval, NewApprovalLink,
    NewChange, NewChannel, NewChatSession, NewModelCall, NewRemoteMessage, NewSchedule,
    NewStartedCall, NewTask, NewWorker, Overlap, PruneReport, Recovered, RemoteMessage, Resolve,
    Schedule, ScheduleEvent, ScheduleEventKind, ScheduleSpec, SkillFile, StartedCall, StartedFile,
    TaskChange, TaskFilter, TeamImport, TeamMemory, TeamSkill, USER_TOKEN_PREFIX, WorkerRecord,
};
pub use url::StoreUrl;

/// The reason an approved call of a changeset ends with when its task is cancelled
/// before the changeset's last decision: it never ran.
pub const NOT_RUN_CANCELLED: &str = "Not run — task cancelled";

/// The error (and the `task_cancelled` event's message) of a task recovery ended
/// `cancelled`: its cancel was requested and its process stopped before the running call
/// had ended ([`Store::request_cancel`]).
pub const CANCELLED_AFTER_STOP: &str =
    "cancelled by the operator; its process stopped before the running call had ended";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Store>();
    }
}
