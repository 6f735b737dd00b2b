//! The change log's rows: what an approved call (or a revert) did to one file.

use pp_types::{ApprovalId, Change, ChangeId, ChangeKind, ChangeRoot, FileMode, TaskId};

/// What a file held before a change, as the log records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Before {
    /// Nothing: a revert deletes the file.
    Absent,
    /// The content is kept; the SHA-256 (hex) of the blob.
    Kept(String),
    /// Not kept (too large, unreadable, or the blob could not be stored).
    NotKept,
    /// Kept once, pruned by `[revert] retain_days`.
    Expired,
    /// An empty folder (what a delete removed): a revert creates it again.
    Folder,
    /// No snapshot at all (effects unknown).
    Unknown,
}

impl Before {
    pub(crate) fn column(&self) -> (&'static str, Option<&str>) {
        match self {
            Self::Absent => ("absent", None),
            Self::Kept(sha256) => ("kept", Some(sha256)),
            Self::NotKept => ("not_kept", None),
            Self::Expired => ("expired", None),
            Self::Folder => ("folder", None),
            Self::Unknown => ("none", None),
        }
    }
}

pp_types::wire_enum! {
    /// Where a row is in its life (its `state` column).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum ChangeState {
        /// Recorded after the effect.
        Done => "done",
        /// A revert's intent: its file write may or may not have happened.
        Pending => "pending",
        /// An intent whose write never happened (hidden from lists).
        Abandoned => "abandoned",
    }
}

/// A change to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewChange {
    /// The task.
    pub task_id: TaskId,
    /// The approval that allowed the call (`None` for reverts).
    pub approval_id: Option<ApprovalId>,
    /// The tool (`revert` for reverts).
    pub tool: String,
    /// What it did.
    pub kind: ChangeKind,
    /// The file relative to `root`, links resolved (a move: where it is now).
    pub path: Option<String>,
    /// A move only: where the entry was, relative to `root`, links resolved.
    pub from_path: Option<String>,
    /// What `path` is relative to.
    pub root: ChangeRoot,
    /// Bytes the file holds afterwards.
    pub bytes: Option<u64>,
    /// What the file held before.
    pub before: Before,
    /// The mode and owner of the file before (what a revert that writes it again
    /// gives it); `None` when nothing was there or it was not recorded.
    pub before_mode: Option<FileMode>,
    /// The jail's fingerprint of the file right after the change.
    pub after_fingerprint: Option<String>,
    /// The blob of the content right after the change, when kept.
    pub after_sha256: Option<String>,
}

/// A stored change with what a revert needs besides the wire view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeRow {
    /// The wire view (`revertible` computed from the columns below).
    pub change: Change,
    /// What the file held before.
    pub before: Before,
    /// The mode and owner of the file before; `None` for rows recorded before modes
    /// were kept, and where nothing was there.
    pub before_mode: Option<FileMode>,
    /// The fingerprint right after the change.
    pub after_fingerprint: Option<String>,
    /// The blob of the content right after the change.
    pub after_sha256: Option<String>,
    /// For a revert: the change it undoes.
    pub reverts: Option<ChangeId>,
    /// Done, pending or abandoned.
    pub state: ChangeState,
}
