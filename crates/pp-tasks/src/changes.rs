//! The change log's service side: what an approved call keeps before it runs, what it
//! records after, an approval's outcome, and the operator's revert.
//!
//! Order of an approved write: the tool's snapshot ([`pp_agent::Tool::snapshot`]) is
//! read and its content stored in the snapshot store ([`crate::snapshots`]) before the
//! `tool_started` audit row and the side effect; the change row is written with the
//! call's `tool_executed` audit row, in one transaction, with the file's fingerprint
//! right after the write.
//!
//! Order of a revert ([`TaskService::revert_change`]): check the file still has the
//! fingerprint recorded after the agent's write, or the very content the agent wrote
//! (refused otherwise: no silent clobbering) → keep the agent's version as a snapshot →
//! record the intent (a `pending` change) → write through a jail on the change's root
//! ([`Place`]: the workspace, or the memory file's directory through `pp_tools::memory`)
//! → record it done with its `change_reverted` audit row (one transaction). An intent a
//! crash left `pending` is resolved on the next read by comparing the file with what the
//! revert restores.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use pp_agent::ToolContext;
use pp_gate::{Jail, JailError};
use pp_store::{Before, ChangeRow, ChangeState, NewChange, Store};
use pp_tools::memory;
use pp_types::{
    Actor, ApprovalId, ApprovalRecord, ApprovalState, AuditAction, Change, ChangeId, ChangeKind,
    ChangeRoot, FileMode, FileOp, NewAudit, Prior, TaskId, TaskState,
};
use serde::Serialize;
use serde_json::Value;

use crate::blocking::blocking;
use crate::segment::Segment;
use crate::shared::Shared;
use crate::snapshots::{Snapshots, sha256_hex};
use crate::{Error, Result, TaskService};

/// Reverts of moves, deletes and created folders.
#[path = "changes_entries.rs"]
mod entries;

/// How long a revert intent may stay `pending` before a reader resolves it: longer than
/// any revert takes, so a revert under way in another process is never judged crashed.
const REVERT_GRACE: Duration = Duration::from_secs(30);

/// The tool name of reverts in the change log.
const REVERT_TOOL: &str = "revert";

/// What an approved call is about to change, kept before it runs; turned into change
/// rows once it succeeded ([`Kept::record`]).
#[derive(Debug, Clone)]
pub(crate) struct Kept {
    task_id: TaskId,
    approval_id: ApprovalId,
    tool: String,
    workspace_path: String,
    /// The data directory (snapshots, the memory file); `None` on a server database.
    data_dir: Option<PathBuf>,
    max_bytes: u64,
    hash_max_bytes: u64,
    /// Empty: the tool reports no snapshot (effects unknown).
    files: Vec<KeptFile>,
}

#[derive(Debug, Clone)]
struct KeptFile {
    root: ChangeRoot,
    path: String,
    partial: bool,
    /// What the call does at `path` (write, move, delete, new folder).
    op: FileOp,
    /// Bytes of the file before the call, when known (what a delete removes).
    size: Option<u64>,
    before: Before,
    /// The mode and owner of the file before the call (what a revert gives it back).
    mode: Option<FileMode>,
}

/// Whether what `tool` would replace for `arguments` can be kept under `[revert]
/// max_bytes`, measured without reading contents; `None` for tools without snapshots.
pub(crate) async fn measure(
    shared: &Shared,
    segment: &Segment,
    task: &TaskId,
    tool: &str,
    arguments: &Value,
) -> Option<bool> {
    let tool = segment.registry.get(tool)?;
    let context = ToolContext::for_task(task.as_str(), None);
    let snapshots = tool.snapshot(&context, arguments, 0).await;
    if snapshots.is_empty() {
        return None;
    }
    let max_bytes = shared.settings.revert.max_bytes;
    Some(
        snapshots
            .iter()
            .all(|snapshot| snapshot.keepable(max_bytes)),
    )
}

/// Takes the approved call's snapshot and stores its contents, before the side effect.
/// A content that cannot be stored leaves that file not revertible; the call still runs.
pub(crate) async fn keep(
    shared: &Shared,
    segment: &Segment,
    approval: &ApprovalRecord,
    workspace_path: &str,
    arguments: &Value,
) -> Result<Kept> {
    let max_bytes = shared.settings.revert.max_bytes;
    let snapshots = match segment.registry.get(&approval.tool) {
        Some(tool) => {
            let context = ToolContext::for_task(approval.task_id.as_str(), None);
            tool.snapshot(&context, arguments, max_bytes).await
        }
        None => Vec::new(),
    };
    let data_dir = shared.data_dir();
    let (store_at, kept_snapshots) = (data_dir.clone(), snapshots);
    let workspace = workspace_path.to_owned();
    let files = blocking(move || {
        let store = store_at
            .as_deref()
            .and_then(|dir| Snapshots::open(dir).ok());
        kept_snapshots
            .into_iter()
            .map(|snapshot| {
                // The mode and owner of a file whose content is kept, read through the
                // same root's jail right after the tool's snapshot, before the call.
                let mode = match &snapshot.prior {
                    Prior::Content(_) => {
                        Place::open(snapshot.root, &workspace, store_at.as_deref())
                            .ok()
                            .and_then(|place| place.jail().file_mode(&snapshot.path).ok())
                            .flatten()
                    }
                    _ => None,
                };
                let size = match &snapshot.prior {
                    Prior::Content(bytes) => Some(bytes.len() as u64),
                    Prior::TooLarge { size } => Some(*size),
                    Prior::Absent | Prior::Unreadable { .. } | Prior::EmptyFolder => None,
                };
                let before = match snapshot.prior {
                    Prior::Absent => Before::Absent,
                    Prior::EmptyFolder => Before::Folder,
                    Prior::Content(bytes) if bytes.len() as u64 <= max_bytes => store
                        .as_ref()
                        .and_then(|store| store.put(&bytes).ok())
                        .map_or(Before::NotKept, Before::Kept),
                    Prior::Content(_) | Prior::TooLarge { .. } | Prior::Unreadable { .. } => {
                        Before::NotKept
                    }
                };
                KeptFile {
                    root: snapshot.root,
                    path: snapshot.path,
                    partial: snapshot.partial,
                    op: snapshot.op,
                    size,
                    before,
                    mode,
                }
            })
            .collect::<Vec<_>>()
    })
    .await?;
    Ok(Kept {
        task_id: approval.task_id.clone(),
        approval_id: approval.id.clone(),
        tool: approval.tool.clone(),
        workspace_path: workspace_path.to_owned(),
        data_dir,
        max_bytes,
        hash_max_bytes: shared.settings.hash_max_bytes,
        files,
    })
}

impl Kept {
    /// The change rows of the call, which succeeded: the state of each file right after
    /// the write (size, fingerprint, content kept when small enough). Reads files: call
    /// it off the async threads.
    pub(crate) fn record(self) -> Vec<NewChange> {
        let new = |kind, path, root, bytes, before, after_fingerprint, after_sha256| NewChange {
            task_id: self.task_id.clone(),
            approval_id: Some(self.approval_id.clone()),
            tool: self.tool.clone(),
            kind,
            path,
            from_path: None,
            root,
            bytes,
            before,
            before_mode: None,
            after_fingerprint,
            after_sha256,
        };
        if self.files.is_empty() {
            return vec![new(
                ChangeKind::EffectsUnknown,
                None,
                ChangeRoot::Workspace,
                None,
                Before::Unknown,
                None,
                None,
            )];
        }
        let data_dir = self.data_dir.as_deref();
        let snapshots = data_dir.and_then(|dir| Snapshots::open(dir).ok());
        self.files
            .iter()
            .map(|file| {
                let kind = match (&file.op, &file.before, file.partial) {
                    (FileOp::MoveFrom(_), ..) => ChangeKind::Moved,
                    (FileOp::Delete, ..) => ChangeKind::Deleted,
                    (FileOp::CreateFolder, ..) => ChangeKind::FolderCreated,
                    (FileOp::Write, Before::Absent, _) => ChangeKind::Created,
                    (FileOp::Write, _, true) => ChangeKind::Edited,
                    (FileOp::Write, _, false) => ChangeKind::Overwritten,
                };
                let place = Place::open(file.root, &self.workspace_path, data_dir).ok();
                if file.op != FileOp::Write {
                    let (bytes, fingerprint) = match &place {
                        Some(place) => entries::after_op(place.jail(), file, self.hash_max_bytes),
                        None => (None, None),
                    };
                    let from_path = match &file.op {
                        FileOp::MoveFrom(from) => Some(from.clone()),
                        _ => None,
                    };
                    return NewChange {
                        from_path,
                        before_mode: file.mode,
                        ..new(
                            kind,
                            Some(file.path.clone()),
                            file.root,
                            bytes,
                            file.before.clone(),
                            fingerprint,
                            None,
                        )
                    };
                }
                let (bytes, fingerprint, after_sha256) = match &place {
                    Some(place) => after_write(
                        place.jail(),
                        snapshots.as_ref(),
                        &file.path,
                        self.max_bytes,
                        self.hash_max_bytes,
                    ),
                    None => (None, None, None),
                };
                NewChange {
                    before_mode: file.mode,
                    ..new(
                        kind,
                        Some(file.path.clone()),
                        file.root,
                        bytes,
                        file.before.clone(),
                        fingerprint,
                        after_sha256,
                    )
                }
            })
            .collect()
    }
}

/// The folder a change's path is relative to ([`ChangeRoot`]), opened through a jail,
/// and how a revert writes there.
enum Place {
    /// The task's workspace: a revert writes with the jail's atomic write.
    Workspace(Jail),
    /// The memory file's directory (the data directory, beside the database), through
    /// `pp_tools::memory`'s jail: a revert writes only the memory file, with its
    /// compare-and-swap under its write lock (as `memory_write` and the operator do).
    Memory(Jail),
}

impl Place {
    /// The jail on `root`: the workspace `workspace`, or the data directory `data_dir`
    /// (none on a server database: the memory's changes cannot be reached then). Opens
    /// a folder: call it on the blocking pool.
    fn open(root: ChangeRoot, workspace: &str, data_dir: Option<&Path>) -> Result<Self> {
        match root {
            ChangeRoot::Workspace => Jail::new(Path::new(workspace))
                .map(Self::Workspace)
                .map_err(|source| Error::Workspace {
                    path: workspace.to_owned(),
                    source,
                }),
            ChangeRoot::Memory => match data_dir {
                Some(data_dir) => Ok(Self::Memory(memory::jail(data_dir)?)),
                None => Err(no_data_dir()),
            },
        }
    }

    /// [`Place::open`] on the blocking pool, shared with the blocking work after it.
    async fn open_off_thread(
        root: ChangeRoot,
        workspace: String,
        data_dir: Option<PathBuf>,
    ) -> Result<Arc<Self>> {
        blocking(move || Self::open(root, &workspace, data_dir.as_deref()).map(Arc::new)).await?
    }

    fn jail(&self) -> &Jail {
        match self {
            Self::Workspace(jail) | Self::Memory(jail) => jail,
        }
    }

    /// Whether a revert may write `path` here: anything in the workspace; only the
    /// memory file in the data directory (never the database or the snapshots).
    fn allows(&self, path: &str) -> bool {
        match self {
            Self::Workspace(_) => true,
            Self::Memory(_) => path == memory::MEMORY_FILE,
        }
    }

    /// Puts `content` at `path` with `mode` (`None`: deletes it), where the agent's
    /// version `agent` is now (the memory's write is a compare-and-swap on that
    /// version). `Err` says why nothing was written.
    fn restore(
        &self,
        path: &str,
        content: Option<&[u8]>,
        mode: Option<&FileMode>,
        agent: &Current,
    ) -> std::result::Result<(), NotWritten> {
        match (self, content) {
            (Self::Workspace(jail), Some(bytes)) => jail
                .restore_file(path, bytes, mode, true)
                .map(|_| ())
                .map_err(NotWritten::from),
            (Self::Workspace(jail), None) => match jail.remove_file(path) {
                Ok(()) | Err(JailError::NotFound { .. }) => Ok(()),
                Err(error) => Err(NotWritten::from(error)),
            },
            (Self::Memory(jail), content) => {
                let expected = match agent {
                    Current::Absent => memory::ABSENT_VERSION.to_owned(),
                    Current::Content(bytes) => memory::version_of(bytes),
                    Current::TooLarge => {
                        return Err(NotWritten::Failed("the memory is too large".to_owned()));
                    }
                };
                match content {
                    Some(bytes) => {
                        let text = std::str::from_utf8(bytes).map_err(|_| {
                            NotWritten::Failed("the kept memory is not UTF-8".to_owned())
                        })?;
                        memory::replace_if(jail, &expected, text).map(|_| ())
                    }
                    None => memory::remove_if(jail, &expected),
                }
                .map_err(|error| match error {
                    memory::MemoryError::VersionMismatch { .. } => {
                        NotWritten::Changed(error.to_string())
                    }
                    memory::MemoryError::Jail(error) => NotWritten::from(error),
                    memory::MemoryError::TooLarge => NotWritten::Failed(error.to_string()),
                })
            }
        }
    }
}

/// Why a revert's own write did not happen (nothing was written either way).
#[derive(Debug)]
enum NotWritten {
    /// The target is no longer what the change left (a folder or a link where the
    /// file was, a file where nothing was, the memory saved meanwhile): `changed_since`.
    Changed(String),
    /// Anything else (the disk, a kept content gone): `not_revertible`.
    Failed(String),
}

impl From<JailError> for NotWritten {
    fn from(error: JailError) -> Self {
        if target_changed(&error) {
            Self::Changed(error.to_string())
        } else {
            Self::Failed(error.to_string())
        }
    }
}

/// Whether `error`, met at a path a change recorded (links resolved, inside the
/// root), means the place is no longer what the change left: a folder, a link leading
/// outside, a loop, a missing or replaced folder, something new in the way. I/O
/// failures are not (the disk, permissions): those are errors.
fn target_changed(error: &JailError) -> bool {
    !matches!(error, JailError::Io { .. } | JailError::RootInvalid { .. })
}

/// Whether `path` (a change's path, recorded links resolved) still resolves to
/// itself: no link was put at it or in its folders since. `entry`: resolved as an
/// entry (its last name not followed).
fn resolves_to_itself(jail: &Jail, path: &str, entry: bool) -> bool {
    let probe = if entry {
        jail.probe_entry(path)
    } else {
        jail.probe(path)
    };
    probe.is_ok_and(|probe| probe.resolved == Path::new(path))
}

/// Size, fingerprint and kept content of `path` right after a write.
fn after_write(
    jail: &Jail,
    snapshots: Option<&Snapshots>,
    path: &str,
    max_bytes: u64,
    hash_max_bytes: u64,
) -> (Option<u64>, Option<String>, Option<String>) {
    let fingerprint = jail.fingerprint_with(path, hash_max_bytes).ok();
    let size = jail
        .probe(path)
        .ok()
        .filter(|probe| probe.is_file())
        .map(|probe| probe.size);
    let kept = match (size, snapshots) {
        (Some(size), Some(snapshots)) if size <= max_bytes => jail
            .read(path, max_bytes)
            .ok()
            .filter(|content| !content.truncated)
            .and_then(|content| snapshots.put(&content.bytes).ok()),
        _ => None,
    };
    (size, fingerprint, kept)
}

/// A card's outcome of an approved (or otherwise decided) call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// `running`, `done`, `not_run` or `failed`.
    pub status: OutcomeStatus,
    /// What happened, for people: "Written `reports/x.md` (318 B)".
    pub message: String,
}

/// Where a decided call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeStatus {
    /// Approved; no result yet.
    Running,
    /// It ran and succeeded.
    Done,
    /// It did not run (rejected, stale, cancelled, the task ended first).
    NotRun,
    /// It ran and failed.
    Failed,
}

/// The outcome of `approval` from its state, the ledger's rows about it, its changes
/// and its task's state; `None` while pending. Never says written when nothing was.
///
/// Several reads, not one snapshot: the task is read first, because a task seen ended
/// has its call's outcome in the ledger already (the sink stores it before the closing
/// transaction), so a call finishing between the reads is never shown as failed.
pub(crate) async fn outcome_of(store: &Store, approval: &ApprovalRecord) -> Option<Outcome> {
    let outcome = |status, message: String| Some(Outcome { status, message });
    match approval.state {
        ApprovalState::Pending => return None,
        ApprovalState::Rejected => {
            return outcome(OutcomeStatus::NotRun, "Not run — rejected".into());
        }
        ApprovalState::Stale => {
            return outcome(
                OutcomeStatus::NotRun,
                "Not run — the file changed since you saw it".into(),
            );
        }
        ApprovalState::Cancelled => {
            return outcome(OutcomeStatus::NotRun, "Not run — task cancelled".into());
        }
        ApprovalState::Approved => {}
    }
    let task = store.task(&approval.task_id).await.ok();
    let ledger = store
        .approval_ledger(&approval.id)
        .await
        .unwrap_or_default();
    let result = ledger.iter().rev().find(|(action, _)| {
        matches!(
            action,
            AuditAction::ToolExecuted | AuditAction::ToolFailed | AuditAction::ToolDenied
        )
    });
    match result {
        Some((AuditAction::ToolExecuted, _)) => {
            let changes = store
                .approval_changes(&approval.id)
                .await
                .unwrap_or_default();
            let message = if changes.is_empty() {
                format!("Ran `{}`", approval.tool)
            } else {
                changes
                    .iter()
                    .map(|row| describe(&row.change))
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            outcome(OutcomeStatus::Done, message)
        }
        Some((_, detail)) => outcome(
            OutcomeStatus::Failed,
            format!("Failed: {}", detail.as_deref().unwrap_or("the call failed")),
        ),
        None => {
            let started = ledger
                .iter()
                .any(|(action, _)| *action == AuditAction::ToolStarted);
            let task = task?;
            match task.state {
                TaskState::Running | TaskState::Queued => {
                    outcome(OutcomeStatus::Running, "Running".into())
                }
                _ if started => outcome(
                    OutcomeStatus::Failed,
                    "Failed: the process stopped while the call ran; check the file".into(),
                ),
                TaskState::Cancelled => {
                    outcome(OutcomeStatus::NotRun, "Not run — task cancelled".into())
                }
                _ => outcome(
                    OutcomeStatus::NotRun,
                    "Not run — the task ended before the call ran".into(),
                ),
            }
        }
    }
}

/// One change for people: "Written `a.md` (318 B)".
pub fn describe(change: &Change) -> String {
    let path = change.path.as_deref().unwrap_or("?");
    let size = change
        .bytes
        .map(|bytes| format!(" ({})", format_size(bytes)))
        .unwrap_or_default();
    let mut text = match change.kind {
        ChangeKind::Created | ChangeKind::Overwritten => format!("Written `{path}`{size}"),
        ChangeKind::Edited => format!("Edited `{path}`{size}"),
        ChangeKind::Reverted => format!("Reverted `{path}`{size}"),
        ChangeKind::EffectsUnknown => {
            format!("Ran `{}` — effects unknown to PocketPilot", change.tool)
        }
        ChangeKind::Moved => format!(
            "Moved `{}` → `{path}`",
            change.from_path.as_deref().unwrap_or("?")
        ),
        ChangeKind::Deleted => format!("Deleted `{path}`{size}"),
        ChangeKind::FolderCreated => format!("Created folder `{path}`"),
    };
    if change.reverted_by.is_some() {
        text.push_str(" — reverted");
    }
    text
}

/// `318 B`, `12.5 KiB`, `3.0 MiB`.
pub fn format_size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    // Display only: the precision lost converting to f64 does not show.
    #[expect(clippy::cast_precision_loss, reason = "a rounded size for display")]
    let scaled = |unit: u64| bytes as f64 / unit as f64;
    if bytes < KIB {
        format!("{bytes} B")
    } else if bytes < MIB {
        format!("{:.1} KiB", scaled(KIB))
    } else {
        format!("{:.1} MiB", scaled(MIB))
    }
}

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

impl TaskService {
    /// The task's changes, oldest first ([`Error::NotFound`] for an unknown task).
    /// Revert intents a crash left behind are resolved first.
    pub async fn task_changes(&self, task: &TaskId) -> Result<Vec<Change>> {
        let shared = &self.inner.shared;
        let record = shared.store.task(task).await?;
        resolve_pending(shared, Some(&record.id), REVERT_GRACE).await?;
        Ok(shared
            .store
            .task_changes(task)
            .await?
            .into_iter()
            .map(|row| row.change)
            .collect())
    }

    /// Resolves every revert intent a crash left `pending` (older than `grace`), as
    /// `serve` does at start-up; returns how many were resolved.
    pub async fn recover_reverts(&self, grace: Duration) -> Result<usize> {
        resolve_pending(&self.inner.shared, None, grace).await
    }

    /// Reverts change `id` as `actor` (an operator action): restores what the agent's
    /// call replaced — or deletes the file it created — through a jail on the change's
    /// root (the workspace, or the memory file's directory), after keeping the agent's
    /// version as a snapshot. Refused when the file changed since the agent's write, when
    /// nothing was kept, or when it is already reverted.
    ///
    /// The revert runs on a task of its own: a caller that goes away (a closed request)
    /// does not stop it between recording its intent and writing the file.
    pub async fn revert_change(
        &self,
        id: &ChangeId,
        actor: Actor,
    ) -> Result<std::result::Result<Change, RevertRefusal>> {
        let (shared, id) = (Arc::clone(&self.inner.shared), id.clone());
        tokio::spawn(async move { revert(&shared, &id, actor).await })
            .await
            .map_err(|error| Error::Internal(format!("the revert did not finish: {error}")))?
    }

    /// Drops snapshots older than `[revert] retain_days` (their changes can no longer
    /// be reverted); returns how many changes expired and how many blobs were removed.
    pub async fn prune_snapshots(&self) -> Result<(usize, usize)> {
        let shared = &self.inner.shared;
        let retain = shared.settings.revert.retain;
        let (expired, referenced) = shared.store.expire_snapshots(retain).await?;
        let cutoff = shared.store.clock().now().saturating_sub(retain);
        let Some(data_dir) = shared.data_dir() else {
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

/// Why nothing beside a server database can be kept or reverted.
fn no_data_dir() -> Error {
    Error::Internal(
        "no data directory: snapshots and the memory file live beside the SQLite database; \
         on a server database name it with TaskService::with_data_dir"
            .to_owned(),
    )
}

/// The snapshot store in the data directory, opened on the blocking pool.
async fn open_snapshots(shared: &Shared) -> Result<Arc<Snapshots>> {
    let data_dir = shared.data_dir().ok_or_else(no_data_dir)?;
    blocking(move || Snapshots::open(&data_dir).map(Arc::new))
        .await?
        .map_err(|error| Error::Internal(format!("opening the snapshot store: {error}")))
}

/// What is at a path now.
enum Current {
    Absent,
    Content(Vec<u8>),
    TooLarge,
}

fn current(jail: &Jail, path: &str, max_bytes: u64) -> std::result::Result<Current, JailError> {
    if !jail.exists(path)? {
        return Ok(Current::Absent);
    }
    let content = jail.read(path, max_bytes)?;
    Ok(if content.truncated {
        Current::TooLarge
    } else {
        Current::Content(content.bytes)
    })
}

fn not_revertible(
    message: impl Into<String>,
) -> Result<std::result::Result<Change, RevertRefusal>> {
    Ok(Err(RevertRefusal::NotRevertible(message.into())))
}

/// [`TaskService::revert_change`]: the store calls awaited, the file work (fingerprints,
/// snapshots, the write) on the blocking pool.
async fn revert(
    shared: &Shared,
    id: &ChangeId,
    actor: Actor,
) -> Result<std::result::Result<Change, RevertRefusal>> {
    let store = &shared.store;
    let row = store.change(id).await?;
    resolve_pending(shared, Some(&row.change.task_id), REVERT_GRACE).await?;
    let row = store.change(id).await?;
    let refusal = match (&row.change.kind, &row.before, &row.change.reverted_by) {
        (ChangeKind::Reverted, ..) => Some("a revert cannot itself be reverted".to_owned()),
        (ChangeKind::EffectsUnknown, ..) => {
            Some("its effects are unknown to PocketPilot: nothing was kept".to_owned())
        }
        (_, _, Some(by)) => Some(format!("it was already reverted by {by}")),
        (_, Before::NotKept, _) => Some(format!(
            "what it replaced was not kept (larger than [revert] max_bytes = {} bytes, or \
             unreadable)",
            shared.settings.revert.max_bytes
        )),
        (_, Before::Expired, _) => Some(format!(
            "its snapshot was pruned after [revert] retain_days ({} days)",
            shared.settings.revert.retain.as_secs() / 86_400
        )),
        (_, Before::Unknown, _) => Some("nothing was kept".to_owned()),
        _ if row.state != ChangeState::Done => Some("a revert of it is under way".to_owned()),
        _ => None,
    };
    if let Some(reason) = refusal {
        return not_revertible(format!("change {id} cannot be reverted: {reason}"));
    }
    let (Some(path), Some(recorded)) = (row.change.path.clone(), row.after_fingerprint.clone())
    else {
        return not_revertible(format!(
            "change {id} cannot be reverted: the file's state after the write is unknown"
        ));
    };
    let task = store.task(&row.change.task_id).await?;
    let root = shared.workspace_root(&task)?;
    let place = Place::open_off_thread(row.change.root, root, shared.data_dir()).await?;
    if !place.allows(&path) {
        return not_revertible(format!(
            "change {id} cannot be reverted: `{path}` is not a file a revert may write"
        ));
    }
    if entries::is_entry_kind(row.change.kind) {
        return entries::revert(shared, place, &row, &path, &recorded, actor).await;
    }
    let snapshots = open_snapshots(shared).await?;
    let checked = {
        let (place, snapshots, row, path) = (
            Arc::clone(&place),
            Arc::clone(&snapshots),
            row.clone(),
            path.clone(),
        );
        let (hash_max_bytes, max_bytes) = (
            shared.settings.hash_max_bytes,
            shared.settings.revert.max_bytes,
        );
        blocking(move || {
            keep_agent_version(
                place.jail(),
                &snapshots,
                &row,
                &path,
                &recorded,
                (hash_max_bytes, max_bytes),
            )
        })
        .await??
    };
    let (kept, agent_version) = match checked {
        Ok(checked) => checked,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let restores = match &row.before {
        Before::Kept(sha256) => Some(sha256.clone()),
        _ => None,
    };
    let intent = NewChange {
        task_id: row.change.task_id.clone(),
        approval_id: None,
        tool: REVERT_TOOL.to_owned(),
        kind: ChangeKind::Reverted,
        path: Some(path.clone()),
        from_path: None,
        root: row.change.root,
        bytes: None,
        before: kept,
        before_mode: None,
        after_fingerprint: None,
        after_sha256: restores.clone(),
    };
    let Some(pending) = store.begin_revert(id, intent).await? else {
        return not_revertible(format!(
            "change {id} cannot be reverted: it was reverted meanwhile"
        ));
    };
    let written = {
        let (place, path, mode) = (Arc::clone(&place), path.clone(), row.before_mode);
        blocking(move || match &restores {
            Some(sha256) => snapshots
                .get(sha256)
                .map_err(|error| NotWritten::Failed(error.to_string()))
                .and_then(|bytes| {
                    place.restore(&path, Some(&bytes), mode.as_ref(), &agent_version)
                }),
            None => place.restore(&path, None, None, &agent_version),
        })
        .await?
    };
    match written {
        Ok(()) => {}
        Err(NotWritten::Changed(error)) => {
            store.abandon_revert(&pending.change.id).await?;
            return Ok(Err(RevertRefusal::ChangedSince {
                message: format!(
                    "`{path}` changed after the agent's write ({error}), so nothing was written"
                ),
                diff: None,
            }));
        }
        Err(NotWritten::Failed(error)) => {
            store.abandon_revert(&pending.change.id).await?;
            return not_revertible(format!("change {id} cannot be reverted: `{path}`: {error}"));
        }
    }
    let done = finish(shared, place, &pending, &row, actor, None).await?;
    Ok(Ok(done.change))
}

/// The file checks of a revert, on the blocking pool: refused when `path` changed since
/// the agent's write (fingerprint `recorded`, or the very content it wrote); otherwise
/// keeps the agent's version as a snapshot, so a revert loses nothing, and returns it.
fn keep_agent_version(
    jail: &Jail,
    snapshots: &Snapshots,
    row: &ChangeRow,
    path: &str,
    recorded: &str,
    (hash_max_bytes, max_bytes): (u64, u64),
) -> Result<std::result::Result<(Before, Current), RevertRefusal>> {
    let id = &row.change.id;
    // The fingerprint of what is at `path` now, if it is still reached as the change
    // left it: a folder there, a link put at it or in its folders (one leading outside
    // included) mean it changed since, not that the revert failed.
    let now = match jail.fingerprint_with(path, hash_max_bytes) {
        Ok(now) if resolves_to_itself(jail, path, false) => Some(now),
        Ok(_) => None,
        Err(error) if target_changed(&error) => None,
        Err(error) => {
            return Err(Error::Internal(format!("fingerprinting `{path}`: {error}")));
        }
    };
    let agent_version = match now {
        Some(_) => match current(jail, path, max_bytes) {
            Ok(version) => Some(version),
            Err(error) if target_changed(&error) => None,
            Err(error) => return Err(Error::Internal(format!("reading `{path}`: {error}"))),
        },
        None => None,
    };
    // The same content as the agent wrote counts as unchanged even if the file was
    // rewritten (new inode or times): reverting it loses nothing.
    let same_content = match (&agent_version, &row.after_sha256) {
        (Some(Current::Content(bytes)), Some(sha256)) => sha256_hex(bytes) == *sha256,
        _ => false,
    };
    let unchanged = now.as_deref() == Some(recorded) || same_content;
    let agent_version = match (unchanged, agent_version) {
        (true, Some(version)) => version,
        (_, version) => {
            let diff = version
                .as_ref()
                .and_then(|version| changed_since_diff(snapshots, row, path, version));
            return Ok(Err(RevertRefusal::ChangedSince {
                message: format!(
                    "`{path}` changed after the agent's write; reverting would overwrite that \
                     change, so nothing was written"
                ),
                diff,
            }));
        }
    };
    let kept = match &agent_version {
        Current::Absent => Before::Absent,
        Current::Content(bytes) => Before::Kept(
            snapshots
                .put(bytes)
                .map_err(|error| Error::Internal(format!("keeping `{path}`: {error}")))?,
        ),
        Current::TooLarge => {
            return Ok(Err(RevertRefusal::NotRevertible(format!(
                "change {id} cannot be reverted: the agent's version of `{path}` is larger \
                 than [revert] max_bytes and could not be kept"
            ))));
        }
    };
    Ok(Ok((kept, agent_version)))
}

/// Records revert `pending` (of change `of`) done, with its audit row: the file's state
/// after the revert is read on the blocking pool.
async fn finish(
    shared: &Shared,
    place: Arc<Place>,
    pending: &ChangeRow,
    of: &ChangeRow,
    actor: Actor,
    note: Option<&str>,
) -> Result<ChangeRow> {
    let path = pending.change.path.clone().unwrap_or_default();
    let hash_max_bytes = shared.settings.hash_max_bytes;
    let (fingerprint, bytes) = {
        let path = path.clone();
        blocking(move || {
            let jail = place.jail();
            let fingerprint = jail.fingerprint_with(&path, hash_max_bytes).ok();
            let bytes = jail
                .probe(&path)
                .ok()
                .filter(|probe| probe.is_file())
                .map(|probe| probe.size);
            (fingerprint, bytes)
        })
        .await?
    };
    let what = match (of.change.kind, &of.before) {
        (ChangeKind::Moved, _) => format!(
            "moved `{path}` back to `{}`",
            of.change.from_path.as_deref().unwrap_or("?")
        ),
        (ChangeKind::Deleted, _) => "restored what the agent deleted".to_owned(),
        (ChangeKind::FolderCreated, _) => "removed the folder the agent created".to_owned(),
        (_, Before::Absent) => "deleted the file the agent created".to_owned(),
        _ => "restored the content the agent replaced".to_owned(),
    };
    let audit = NewAudit {
        actor: Some(actor),
        tool: Some(of.change.tool.clone()),
        target: Some(path),
        approval_id: of.change.approval_id.clone(),
        detail: Some(format!(
            "reverted change {} ({}): {what}{}",
            of.change.id,
            of.change.kind.as_str(),
            note.unwrap_or_default()
        )),
        ..NewAudit::new(AuditAction::ChangeReverted)
    };
    Ok(shared
        .store
        .finish_revert(&pending.change.id, fingerprint.as_deref(), bytes, audit)
        .await?)
}

/// The diff a refused revert shows: the agent's version (kept after its write) to the
/// file now; `None` when either is not kept text.
fn changed_since_diff(
    snapshots: &Snapshots,
    row: &ChangeRow,
    path: &str,
    now: &Current,
) -> Option<String> {
    let agent = match &row.after_sha256 {
        Some(sha256) => snapshots.get(sha256).ok()?,
        None => return None,
    };
    let now = match now {
        Current::Absent => Vec::new(),
        Current::Content(bytes) => bytes.clone(),
        Current::TooLarge => return None,
    };
    let (agent, now) = (
        std::str::from_utf8(&agent).ok()?,
        std::str::from_utf8(&now).ok()?,
    );
    Some(
        similar::TextDiff::configure()
            .timeout(Duration::from_millis(500))
            .diff_lines(agent, now)
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{path}"), &format!("b/{path}"))
            .to_string(),
    )
}

/// Resolves revert intents left `pending` longer than `grace` (of `task`, or all): done
/// when the file holds what the revert restores (the write happened before a crash),
/// abandoned otherwise (the agent's version stays kept in the intent's row either way).
async fn resolve_pending(shared: &Shared, task: Option<&TaskId>, grace: Duration) -> Result<usize> {
    let store = &shared.store;
    let pending = store.pending_reverts(task).await?;
    let now = store.clock().now();
    let mut resolved = 0;
    for intent in pending {
        if intent.change.at.saturating_add(grace) > now {
            continue;
        }
        let (Some(of), Some(path)) = (intent.reverts.as_ref(), intent.change.path.clone()) else {
            store.abandon_revert(&intent.change.id).await?;
            continue;
        };
        let of = store.change(of).await?;
        let task = store.task(&intent.change.task_id).await?;
        let Ok(root) = shared.workspace_root(&task) else {
            continue;
        };
        let Ok(place) = Place::open_off_thread(of.change.root, root, shared.data_dir()).await
        else {
            continue;
        };
        let restored = {
            let (place, of) = (Arc::clone(&place), of.clone());
            let max_bytes = shared.settings.revert.max_bytes;
            blocking(move || was_restored(place.jail(), &of, &path, max_bytes)).await?
        };
        if restored {
            finish(
                shared,
                place,
                &intent,
                &of,
                Actor::Operator,
                Some(" (completed after an interruption)"),
            )
            .await?;
        } else {
            store.abandon_revert(&intent.change.id).await?;
        }
        resolved += 1;
    }
    Ok(resolved)
}

/// Whether `path` holds what the revert of `of` restores (on the blocking pool).
fn was_restored(jail: &Jail, of: &ChangeRow, path: &str, max_bytes: u64) -> bool {
    let restored = match (&of.before, current(jail, path, max_bytes)) {
        (Before::Folder, _) => jail
            .probe_entry(path)
            .is_ok_and(|probe| probe.kind == Some(pp_gate::EntryKind::Dir)),
        (Before::Absent, Ok(Current::Absent)) => true,
        (Before::Kept(sha256), Ok(Current::Content(bytes))) => sha256_hex(&bytes) == *sha256,
        _ => false,
    };
    // A move's revert also put the entry back where it was.
    restored
        && of
            .change
            .from_path
            .as_deref()
            .is_none_or(|from| jail.probe_entry(from).is_ok_and(|probe| probe.exists()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_well() {
        assert_eq!(format_size(318), "318 B");
        assert_eq!(format_size(1536), "1.5 KiB");
        assert_eq!(format_size(3 * 1024 * 1024), "3.0 MiB");
    }
}
