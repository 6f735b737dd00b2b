//! The task service: creates tasks, runs them on a bounded pool of workers, turns the
//! agent loop's checkpoints into durable approvals, resolves approvals exactly once and
//! resumes from the stored checkpoint with a freshly built jail and gate.
//!
//! Main types: [`TaskService`] (create, run, resolve, cancel, retry, recover),
//! [`TaskSettings`], [`Workspaces`], [`ModelSource`], [`ApprovalView`] (everything an
//! approval card shows), [`Caller`] and [`TaskService::authorize`] (who acts and whether
//! they may), the change log and reverts ([`TaskService::changes`]). The services beside
//! it are crates of their own above this one, each reaching tasks through
//! [`TaskService`] and the store through a narrow handle of its own: team users
//! (`pp-users`), chat sessions (`pp-chat`), notifications (`pp-notify`), the operator's
//! skills and memory (`pp-knowledge`, which needs no tasks at all), schedules
//! (`pp-schedules`) and webhook channels (`pp-channels`). It sits above `pp-agent`,
//! `pp-gate`, `pp-tools`, `pp-model` and `pp-store`, and below them, `pp-server` and
//! `pp-cli`. Every state change goes through the
//! store's compare-and-set transactions, so several processes sharing one database (an
//! SQLite file, or a team server's PostgreSQL) never run or resolve the same thing twice.
//!
//! The store ([`pp_store::Store`]) is async and is awaited directly: nothing here blocks
//! an async thread on it (its SQLite backend runs each call on tokio's blocking pool).
//! The service's own blocking work — opening workspaces, reading and hashing files,
//! snapshots — runs on the blocking pool too.
//!
//! ```
//! use pp_tasks::TaskSettings;
//! let settings = TaskSettings::default();
//! assert_eq!(settings.workers, 2);
//! assert_eq!(settings.timeout.as_secs(), 600);
//! ```
//!
//! The store is reachable from outside only through the service: it is neither
//! re-exported nor handed out, so neither of these compiles.
//!
//! ```compile_fail
//! use pp_tasks::store::Store;
//! ```
//!
//! ```compile_fail
//! fn past_the_service(service: &pp_tasks::TaskService) {
//!     let _ = service.store();
//! }
//! ```

#![warn(unreachable_pub)]

mod access;
mod admin;
mod blocking;
mod changelog;
mod changeset;
mod checks;
mod client;
mod conversation;
mod error;
mod keep;
mod links;
mod model;
mod precheck;
mod provenance;
mod queries;
mod remote;
mod resolve;
mod retry;
mod runner;
mod segment;
mod service;
mod settings;
mod shared;
mod sink;
mod task_search;
#[cfg(test)]
mod test_records;
mod view;
mod workers;

pub use access::{Action, Caller};
pub use changelog::{
    ChangeLog, CutTarget, MAY_HAVE_RUN, MayHaveRun, Outcome, OutcomeStatus, PathState,
    RevertRefusal, describe, describe_uncovered, format_size,
};
pub use changeset::{ChangesetDecision, ChangesetView, DecisionResult, DecisionStatus};
pub use client::link::{ClientLink, TaskShare};
pub use client::{CallReply, ClientSession, ClientSettings, Waiting};
pub use conversation::SUMMARY_INSTRUCTION;
pub use error::{Error, Result};
pub use links::{CreatedLink, LINK_TTL_DEFAULT, LINK_TTL_MAX, LinkView};
pub use model::ModelSource;
pub use precheck::{Precheck, PrecheckStatus};
pub use provenance::{Input, InputKind, MAX_INPUTS, MAX_SOURCE_CHARS, Provenance};
pub use queries::EventsPage;
pub use resolve::{Decision, ResolveRequest};
pub use segment::{Segment, arguments_hash};
pub use service::{CreateTask, TaskService};
pub use settings::{
    CommandSnapshot, RemoteSettings, RevertSettings, TaskSettings, TeamWorker, Workspace,
    Workspaces,
};
pub use task_search::TasksPage;
pub use view::{ApprovalRow, ApprovalView, CurrentTarget, EditedCall};

/// The store's query inputs the server builds (it depends on no store crate): the task
/// list's filter and the audit ledger's.
pub use pp_store::{AuditFilter, Recovered, TaskFilter};
