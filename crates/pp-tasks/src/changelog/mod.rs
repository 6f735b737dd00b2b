//! The change log's service side: what an approved call keeps before it runs, what it
//! records after, an approval's outcome, and the operator's revert ([`ChangeLog`], from
//! [`TaskService::changes`]).
//!
//! Order of an approved write: the tool's snapshot ([`pp_agent::Tool::snapshot`]) is
//! read and its content stored in the snapshot store (`snapshots.rs`) before the
//! `tool_started` audit row and the side effect; the change row is written with the
//! call's `tool_executed` audit row, in one transaction, with the file's fingerprint
//! right after the write.
//!
//! Order of a revert ([`ChangeLog::revert`]): check the file still has the fingerprint
//! recorded after the agent's write, or the very content the agent wrote (refused
//! otherwise: no silent clobbering) → keep the agent's version as a snapshot → record the
//! intent (a `pending` change) → write through a jail on the change's root (`Place`: the
//! workspace, or the memory file's directory through `pp_tools::memory`) → record it done
//! with its `change_reverted` audit row (one transaction). An intent a crash left
//! `pending` is resolved on the next read by comparing the file with what the revert
//! restores.
//!
//! The change log reaches the store only through [`ChangeBook`] (the store calls it
//! makes, nothing else) and tasks only through the [`TaskService`]'s methods.

mod cut;
mod entries;
mod finish;
mod outcome;
mod revert;

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

use pp_store::{ChangeRow, NewChange, Store};
use pp_types::{
    Actor, ApprovalId, AuditAction, Change, ChangeId, NewAudit, TaskId, TaskRecord, Timestamp,
};

pub(crate) use cut::may_have_run;
pub use cut::{CutTarget, MAY_HAVE_RUN, MayHaveRun, PathState};
pub(crate) use outcome::outcome_of;
pub use outcome::{Outcome, OutcomeStatus, describe, describe_uncovered, format_size};

use crate::access::Caller;
use crate::blocking::blocking;
use crate::error::{Error, Result};
use crate::keep::snapshots::Snapshots;
use crate::service::TaskService;
use crate::settings::TaskSettings;

/// How long a revert intent may stay `pending` before a reader resolves it: longer than
/// any revert takes, so a revert under way in another process is never judged crashed.
const REVERT_GRACE: Duration = Duration::from_secs(30);

/// The tool name of reverts in the change log.
const REVERT_TOOL: &str = "revert";

/// Why a revert was refused: a value, not an error (the file is untouched).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RevertRefusal {
    /// The file changed after the agent's write; reverting would clobber that change.
    ChangedSince {
        /// What to tell the person.
        message: String,
        /// Unified diff from the agent's version to the file now, when both are kept
        /// text.
        diff: Option<String>,
    },
    /// Nothing kept, too large, already reverted, or a kind that cannot be reverted.
    NotRevertible(String),
}

/// The store as the change log sees it: the change rows, their reverts and the ledger
/// rows of an approval; nothing else.
/// Who reverts: the actor and the team user (team mode) the `change_reverted` row names.
#[derive(Debug, Clone)]
struct By {
    actor: Actor,
    user: Option<String>,
}

#[derive(Clone)]
struct ChangeBook(Store);

impl ChangeBook {
    async fn change(&self, id: &ChangeId) -> pp_store::Result<ChangeRow> {
        self.0.change(id).await
    }

    async fn task_changes(&self, task: &TaskId) -> pp_store::Result<Vec<ChangeRow>> {
        self.0.task_changes(task).await
    }

    async fn approval_changes(&self, approval: &ApprovalId) -> pp_store::Result<Vec<ChangeRow>> {
        self.0.approval_changes(approval).await
    }

    async fn approval_ledger(
        &self,
        approval: &ApprovalId,
    ) -> pp_store::Result<Vec<(AuditAction, Option<String>)>> {
        self.0.approval_ledger(approval).await
    }

    async fn pending_reverts(&self, task: Option<&TaskId>) -> pp_store::Result<Vec<ChangeRow>> {
        self.0.pending_reverts(task).await
    }

    async fn begin_revert(
        &self,
        of: &ChangeId,
        new: NewChange,
    ) -> pp_store::Result<Option<ChangeRow>> {
        self.0.begin_revert(of, new).await
    }

    async fn finish_revert(
        &self,
        revert: &ChangeId,
        after_fingerprint: Option<&str>,
        bytes: Option<u64>,
        audit: NewAudit,
    ) -> pp_store::Result<ChangeRow> {
        self.0
            .finish_revert(revert, after_fingerprint, bytes, audit)
            .await
    }

    async fn abandon_revert(&self, revert: &ChangeId) -> pp_store::Result<()> {
        self.0.abandon_revert(revert).await
    }

    async fn expire_snapshots(
        &self,
        older_than: Duration,
    ) -> pp_store::Result<(usize, HashSet<String>)> {
        self.0.expire_snapshots(older_than).await
    }

    /// Now, by the store's clock.
    fn now(&self) -> Timestamp {
        self.0.clock().now()
    }
}

/// The change log of a task service: the changes tasks made, their reverts and the
/// snapshots kept for them. Cheap to clone.
#[derive(Clone)]
pub struct ChangeLog {
    service: TaskService,
    book: ChangeBook,
}

impl std::fmt::Debug for ChangeLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeLog").finish_non_exhaustive()
    }
}

impl TaskService {
    /// The change log of this service's tasks: their changes, reverts and snapshots.
    pub fn changes(&self) -> ChangeLog {
        ChangeLog {
            service: self.clone(),
            book: ChangeBook(self.store().clone()),
        }
    }
}

impl ChangeLog {
    fn settings(&self) -> &TaskSettings {
        self.service.settings()
    }

    /// The task's changes, oldest first ([`Error::NotFound`] for an unknown task).
    /// Revert intents a crash left behind are resolved first.
    pub async fn of_task(&self, task: &TaskId) -> Result<Vec<Change>> {
        let record = self.service.task(task).await?;
        revert::resolve_pending(self, Some(&record.id), REVERT_GRACE).await?;
        Ok(self
            .book
            .task_changes(task)
            .await?
            .into_iter()
            .map(|row| row.change)
            .collect())
    }

    /// The task change `id` belongs to (for the role checks of a revert).
    pub async fn task_of(&self, id: &ChangeId) -> Result<TaskRecord> {
        let row = self.book.change(id).await?;
        self.service.task(&row.change.task_id).await
    }

    /// Resolves every revert intent a crash left `pending` (older than `grace`), as
    /// `serve` does at start-up; returns how many were resolved.
    pub async fn recover(&self, grace: Duration) -> Result<usize> {
        revert::resolve_pending(self, None, grace).await
    }

    /// Reverts change `id` as `actor` (an operator action): restores what the agent's
    /// call replaced — or deletes the file it created — through a jail on the change's
    /// root (the workspace, or the memory file's directory), after keeping the agent's
    /// version as a snapshot. Refused when the file changed since the agent's write, when
    /// nothing was kept, or when it is already reverted.
    ///
    /// The revert runs on a task of its own: a caller that goes away (a closed request)
    /// does not stop it between recording its intent and writing the file.
    pub async fn revert(
        &self,
        id: &ChangeId,
        actor: Actor,
    ) -> Result<std::result::Result<Change, RevertRefusal>> {
        self.revert_as(id, actor, &Caller::operator()).await
    }

    /// [`ChangeLog::revert`] for `caller`, whose team user the `change_reverted` row
    /// names (whether they may is the caller's check: [`TaskService::authorize`]).
    pub async fn revert_as(
        &self,
        id: &ChangeId,
        actor: Actor,
        caller: &Caller,
    ) -> Result<std::result::Result<Change, RevertRefusal>> {
        let (log, id) = (self.clone(), id.clone());
        let by = By {
            actor,
            user: caller.user.clone(),
        };
        tokio::spawn(async move { revert::revert(&log, &id, by).await })
            .await
            .map_err(|error| Error::Internal(format!("the revert did not finish: {error}")))?
    }

    /// Drops snapshots older than `[revert] retain_days` (their changes can no longer
    /// be reverted); returns how many changes expired and how many blobs were removed.
    pub async fn prune_snapshots(&self) -> Result<(usize, usize)> {
        let retain = self.settings().revert.retain;
        let (expired, referenced) = self.book.expire_snapshots(retain).await?;
        let cutoff = self.book.now().saturating_sub(retain);
        let Some(data_dir): Option<PathBuf> = self.service.data_dir() else {
            return Ok((expired, 0));
        };
        let removed = blocking(move || {
            Snapshots::open(&data_dir).and_then(|snapshots| snapshots.prune(&referenced, cutoff))
        })
        .await?
        .map_err(|error| Error::Internal(format!("pruning snapshots: {error}")))?;
        Ok((expired, removed))
    }
}
