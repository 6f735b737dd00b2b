//! Errors of the store.
//!
//! Compare-and-set failures ([`Error::Conflict`], [`Error::AlreadyResolved`]) are ordinary
//! outcomes of a race between processes; callers map them to `409 Conflict`.

use std::fmt;
use std::path::PathBuf;

use pp_types::{ApprovalState, TaskState};

/// Result type of the store.
pub type Result<T> = std::result::Result<T, Error>;

/// Why a store operation failed.
///
/// Nineteen variants, past the style guide's ~12: the two file ones ([`Error::File`],
/// [`Error::NotAStore`]) belong to backup and restore, and one per backend
/// ([`Error::Sqlite`], [`Error::Postgres`]); they could split by backend if more arrive.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No row with this id.
    #[error("{what} {id} not found")]
    NotFound {
        /// `task` or `approval`.
        what: &'static str,
        /// The id asked for.
        id: String,
    },
    /// A task was not in one of the states the change requires (someone else moved it).
    #[error("task {id} is {}, not one of [{}]", current.as_str(), StateList(expected))]
    Conflict {
        /// The task.
        id: String,
        /// Its state when the change was attempted.
        current: TaskState,
        /// The states the change accepts.
        expected: Vec<TaskState>,
    },
    /// An approval was already decided (double click, two tabs, CLI and console at once).
    #[error("approval {id} is already {}", state.as_str())]
    AlreadyResolved {
        /// The approval.
        id: String,
        /// The state it was found in.
        state: ApprovalState,
    },
    /// A running task whose approved call has not produced its outcome yet cannot be
    /// cancelled: the person's approval won the race against the cancel.
    #[error("task {id} is about to run a call the person approved; it cannot be cancelled now")]
    ApprovedCallPending {
        /// The task.
        id: String,
    },
    /// A chat session's latest turn is still `queued`, `running` or `waiting_approval`:
    /// no new message (and no delete) until it ends.
    #[error("session {id} is busy: its turn {task_id} has not ended")]
    SessionBusy {
        /// The session.
        id: String,
        /// The task of the turn that is still active.
        task_id: String,
    },
    /// A name that must be unique is already used (two schedules with one name).
    #[error("a {what} named `{name}` already exists")]
    NameTaken {
        /// `schedule`.
        what: &'static str,
        /// The name asked for.
        name: String,
    },
    /// Removing or demoting this user would leave the team without an owner.
    #[error(
        "`{name}` is the last owner: a team needs one (make another user owner first with \
         `pocketpilot users role NAME owner`)"
    )]
    LastOwner {
        /// The user.
        name: String,
    },
    /// A resolution asked for a state that is not a decision (`pending`).
    #[error("approval {id} cannot be resolved as {}", state.as_str())]
    InvalidResolution {
        /// The approval.
        id: String,
        /// The state asked for.
        state: ApprovalState,
    },
    /// A stored row could not be read back (bad JSON, unknown enum value).
    #[error("corrupt {column} in {table} row {id}")]
    Corrupt {
        /// The table.
        table: &'static str,
        /// The column.
        column: &'static str,
        /// The row's id.
        id: String,
        /// What the decoder said.
        #[source]
        source: serde_json::Error,
    },
    /// A value could not be encoded as JSON for storage.
    #[error("cannot encode {what} as JSON")]
    Encode {
        /// What was being stored.
        what: &'static str,
        /// What the encoder said.
        #[source]
        source: serde_json::Error,
    },
    /// The database file could not be created or opened.
    #[error("cannot open database {}", path.display())]
    Open {
        /// The database file.
        path: PathBuf,
        /// The underlying failure (file system or SQLite).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The database was written by a newer PocketPilot.
    #[error(
        "database schema version {found} is newer than this build supports ({supported}); \
         upgrade PocketPilot"
    )]
    NewerSchema {
        /// The database's `user_version`.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// A backup or restore could not read, write or replace a file.
    #[error("cannot {action} {}", path.display())]
    File {
        /// What was being done (`create`, `replace`, …).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A file offered for restore is not a PocketPilot database this build can use.
    #[error("{} is not a PocketPilot database this build can restore: {reason}", path.display())]
    NotAStore {
        /// The file offered.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The operating system's random source failed (ids, login ids).
    #[error("cannot read random bytes from the operating system")]
    Random(#[source] getrandom::Error),
    /// SQLite failed (busy past the timeout, disk full, constraint, …).
    #[error("database error")]
    Sqlite(#[source] Box<rusqlite::Error>),
    /// PostgreSQL failed (connection lost, pool exhausted, constraint, …).
    #[error("database error: {0}")]
    Postgres(String),
    /// `[store] url` is not an address the store understands.
    #[error("bad store address `{url}`: {reason}")]
    BadUrl {
        /// The address, its password hidden.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The operation exists only on another backend (an SQLite file backup on a server
    /// database).
    #[error("{what} is not available on {backend}: {hint}")]
    Unsupported {
        /// The operation.
        what: &'static str,
        /// `postgres` or `sqlite`.
        backend: &'static str,
        /// What to do instead.
        hint: &'static str,
    },
    /// The blocking task running a store call panicked or was cancelled.
    #[error("the store call did not finish: {0}")]
    Worker(String),
}

impl Error {
    /// [`Error::NotFound`] for the `what` (`task`, `approval`, `schedule`, …) `id`, the
    /// same way on both backends.
    pub(crate) fn not_found(what: &'static str, id: &(impl fmt::Display + ?Sized)) -> Error {
        Error::NotFound {
            what,
            id: id.to_string(),
        }
    }
}

impl From<rusqlite::Error> for Error {
    fn from(error: rusqlite::Error) -> Self {
        Self::Sqlite(Box::new(error))
    }
}

/// `queued, running` for messages.
struct StateList<'a>(&'a [TaskState]);

impl fmt::Display for StateList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, state) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str(", ")?;
            }
            f.write_str(state.as_str())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_what_failed() {
        let conflict = Error::Conflict {
            id: "t_1".into(),
            current: TaskState::Completed,
            expected: vec![TaskState::Queued, TaskState::Interrupted],
        };
        assert_eq!(
            conflict.to_string(),
            "task t_1 is completed, not one of [queued, interrupted]"
        );
        let resolved = Error::AlreadyResolved {
            id: "a_1".into(),
            state: ApprovalState::Approved,
        };
        assert_eq!(resolved.to_string(), "approval a_1 is already approved");
        let missing = Error::NotFound {
            what: "task",
            id: "t_x".into(),
        };
        assert_eq!(missing.to_string(), "task t_x not found");
    }

    #[test]
    fn the_error_stays_small() {
        assert!(
            std::mem::size_of::<Error>() <= 64,
            "{}",
            std::mem::size_of::<Error>()
        );
    }
}
