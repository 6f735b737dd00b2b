//! What an approved call keeps before it runs (its snapshot, the contents in the
//! snapshot store) and the change rows it records after it succeeded.

use std::path::PathBuf;

use pp_agent::ToolContext;
use pp_gate::Jail;
use pp_store::{Before, NewChange};
use pp_tools::memory::Memory;
use pp_types::{
    ApprovalId, ApprovalRecord, ChangeKind, ChangeRoot, FileMode, FileOp, Prior, TaskId,
};
use serde_json::Value;

pub(crate) mod place;
pub(crate) mod snapshots;
pub(crate) mod workspace;

use crate::blocking::blocking;
use crate::error::Result;
use crate::segment::Segment;
use crate::settings::TaskSettings;
use place::Place;
use snapshots::Snapshots;

/// What an approved call is about to change, kept before it runs; turned into change
/// rows once it succeeded ([`Kept::record`]).
#[derive(Debug, Clone)]
pub(crate) struct Kept {
    task_id: TaskId,
    approval_id: ApprovalId,
    tool: String,
    workspace_path: String,
    /// The data directory (snapshots); `None` on a server database.
    data_dir: Option<PathBuf>,
    /// The memory (the file, or the team's in the database), if it can be reached.
    memory: Option<Memory>,
    max_bytes: u64,
    hash_max_bytes: u64,
    /// Empty: the tool reports no snapshot (effects unknown), unless `command` holds
    /// the workspace's.
    files: Vec<KeptFile>,
    /// An approved `run_command`'s snapshot of the whole workspace (its rows are the
    /// difference after it ran); `None` for other tools, and for a command whose
    /// workspace could not be walked (effects unknown).
    command: Option<workspace::Taken>,
    /// The workspace held for this call (a command alone, other approved calls
    /// together) until its rows are recorded: dropped with the last clone.
    guard: Option<std::sync::Arc<crate::shared::WorkspaceGuard>>,
}

#[derive(Debug, Clone)]
pub(crate) struct KeptFile {
    pub(crate) root: ChangeRoot,
    pub(crate) path: String,
    pub(crate) partial: bool,
    /// What the call does at `path` (write, move, delete, new folder).
    pub(crate) op: FileOp,
    /// Bytes of the file before the call, when known (what a delete removes).
    pub(crate) size: Option<u64>,
    pub(crate) before: Before,
    /// The mode and owner of the file before the call (what a revert gives it back).
    pub(crate) mode: Option<FileMode>,
}

/// Whether what `tool` would replace for `arguments` can be kept under `[revert]
/// max_bytes`, measured without reading contents; `None` for tools without snapshots.
pub(crate) async fn measure(
    max_bytes: u64,
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
    Some(
        snapshots
            .iter()
            .all(|snapshot| snapshot.keepable(max_bytes)),
    )
}

/// Takes the approved call's snapshot and stores its contents, before the side effect.
/// A content that cannot be stored leaves that file not revertible; the call still runs.
pub(crate) async fn keep(
    settings: &TaskSettings,
    data_dir: Option<PathBuf>,
    memory: Option<Memory>,
    registry: &pp_agent::ToolRegistry,
    approval: &ApprovalRecord,
    workspace_path: &str,
    arguments: &Value,
) -> Result<Kept> {
    let max_bytes = settings.revert.max_bytes;
    if approval.tool == workspace::COMMAND_TOOL {
        // Before the command's own clock starts (the sandbox's `timeout_secs` counts from
        // its spawn), on the blocking pool.
        let (rules, root, store_at) = (
            settings.snapshot_rules(),
            workspace_path.to_owned(),
            data_dir.clone(),
        );
        let command = blocking(move || {
            let jail = Jail::new(std::path::Path::new(&root)).ok()?;
            let store = store_at
                .as_deref()
                .and_then(|dir| Snapshots::open(dir).ok());
            workspace::take(&jail, store.as_ref(), &rules)
        })
        .await?;
        return Ok(Kept {
            task_id: approval.task_id.clone(),
            approval_id: approval.id.clone(),
            tool: approval.tool.clone(),
            workspace_path: workspace_path.to_owned(),
            data_dir,
            memory,
            max_bytes,
            hash_max_bytes: settings.hash_max_bytes,
            files: Vec::new(),
            command,
            guard: None,
        });
    }
    let snapshots = match registry.get(&approval.tool) {
        Some(tool) => {
            let context = ToolContext::for_task(approval.task_id.as_str(), None);
            tool.snapshot(&context, arguments, max_bytes).await
        }
        None => Vec::new(),
    };
    let (store_at, kept_snapshots, memory_at) = (data_dir.clone(), snapshots, memory.clone());
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
                    Prior::Content(_) => Place::open(snapshot.root, &workspace, memory_at.as_ref())
                        .ok()
                        .and_then(|place| place.jail().file_mode(&snapshot.path).ok())
                        .flatten(),
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
        memory,
        max_bytes,
        hash_max_bytes: settings.hash_max_bytes,
        files,
        command: None,
        guard: None,
    })
}

impl Kept {
    /// Holds the workspace with this call (taken before the checks and [`keep`]) until
    /// its rows are recorded or it is dropped.
    pub(crate) fn holding(mut self, guard: crate::shared::WorkspaceGuard) -> Self {
        self.guard = Some(std::sync::Arc::new(guard));
        self
    }

    /// Whether this is an approved command's: its rows are recorded whether it
    /// succeeded or failed (it ran either way).
    pub(crate) fn is_command(&self) -> bool {
        self.tool == workspace::COMMAND_TOOL
    }

    /// What each target held right before the call, as the started-call row keeps it
    /// (what a retry's "this call may already have run" compares with the target now).
    pub(crate) fn started_files(&self) -> Vec<pp_store::StartedFile> {
        self.files
            .iter()
            .map(|file| pp_store::StartedFile {
                root: file.root,
                path: file.path.clone(),
                before: file.before.clone(),
                size: file.size,
            })
            .collect()
    }

    /// The change rows of the call, which succeeded: the state of each file right after
    /// the write (size, fingerprint, content kept when small enough). Reads files: call
    /// it off the async threads.
    pub(crate) fn record(self) -> Vec<NewChange> {
        if let Some(taken) = &self.command {
            let jail = Jail::new(std::path::Path::new(&self.workspace_path)).ok();
            let store = self
                .data_dir
                .as_deref()
                .and_then(|dir| Snapshots::open(dir).ok());
            let owner = workspace::Owner {
                task_id: &self.task_id,
                approval_id: &self.approval_id,
                hash_max_bytes: self.hash_max_bytes,
            };
            if let Some(jail) = jail {
                return workspace::record(&jail, store.as_ref(), taken, &owner);
            }
        }
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
                let place = Place::open(file.root, &self.workspace_path, self.memory.as_ref()).ok();
                // A move, a delete or a new folder is measured as an entry; a write by
                // its content, which is kept as the agent's version.
                let (bytes, fingerprint, after_sha256) = match (&place, &file.op) {
                    (None, _) => (None, None, None),
                    (Some(place), FileOp::Write) => after_write(
                        place.jail(),
                        snapshots.as_ref(),
                        &file.path,
                        self.max_bytes,
                        self.hash_max_bytes,
                    ),
                    (Some(place), _) => {
                        let (bytes, fingerprint) =
                            after_op(place.jail(), file, self.hash_max_bytes);
                        (bytes, fingerprint, None)
                    }
                };
                let from_path = match &file.op {
                    FileOp::MoveFrom(from) => Some(from.clone()),
                    _ => None,
                };
                NewChange {
                    from_path,
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

/// Bytes and entry fingerprint of `file`'s path right after the call: for a move the
/// size of the moved file, for a delete the size of what was deleted (the entry itself
/// is gone), for a folder none.
fn after_op(jail: &Jail, file: &KeptFile, hash_max_bytes: u64) -> (Option<u64>, Option<String>) {
    let fingerprint = jail.fingerprint_entry(&file.path, hash_max_bytes).ok();
    let bytes = match file.op {
        FileOp::Delete => file.size,
        FileOp::MoveFrom(_) => jail
            .probe_entry(&file.path)
            .ok()
            .filter(|probe| probe.is_file())
            .map(|probe| probe.size),
        FileOp::Write | FileOp::CreateFolder => None,
    };
    (bytes, fingerprint)
}
