//! The change log: what approved calls did to files on disk, and what a call is about
//! to replace (the snapshot a revert restores).

use serde::{Deserialize, Serialize};

use crate::{ApprovalId, ChangeId, TaskId, Timestamp};

crate::wire_enum! {
    /// What one change did to its file.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum ChangeKind {
        /// The call created a file that did not exist.
        Created => "created",
        /// The call replaced a file's whole content.
        Overwritten => "overwritten",
        /// The call changed part of a file.
        Edited => "edited",
        /// The operator reverted an earlier change.
        Reverted => "reverted",
        /// An approved call ran whose tool reports no file snapshot (MCP, shell, …): what it
        /// changed is unknown to PocketPilot.
        EffectsUnknown => "effects_unknown",
        /// The call moved or renamed a file or folder: [`Change::from_path`] is where it was,
        /// [`Change::path`] where it is now.
        Moved => "moved",
        /// The call deleted a file, a link or an empty folder.
        Deleted => "deleted",
        /// The call created a folder (one change per folder it created, parents too).
        FolderCreated => "folder_created",
    }
}

crate::wire_enum! {
    /// Which folder a change's path is relative to.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
    pub enum ChangeRoot {
        /// The task's workspace (file tools).
        #[default]
        Workspace => "workspace",
        /// The data directory, where the memory file lives (`memory_write`).
        Memory => "memory",
    }
}

impl ChangeRoot {
    /// Whether this is the workspace (the default).
    pub fn is_workspace(&self) -> bool {
        *self == Self::Workspace
    }
}

/// One entry of the change log, as the API, the console and the CLI show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The id (`c_…`).
    pub id: ChangeId,
    /// The task whose call (or whose change's revert) it is.
    pub task_id: TaskId,
    /// The approval that allowed the call; `None` for reverts.
    pub approval_id: Option<ApprovalId>,
    /// The tool that made it (`revert` for reverts).
    pub tool: String,
    /// What it did.
    pub kind: ChangeKind,
    /// The file relative to [`Change::root`], links resolved; `None` when unknown. For
    /// a move, where the file is now.
    pub path: Option<String>,
    /// For a move (`moved`) only: where the file was, relative to [`Change::root`],
    /// links resolved. Absent from the JSON otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_path: Option<String>,
    /// What `path` is relative to: `workspace` (the default; absent in older JSON) or
    /// `memory` (the data directory of the memory file).
    #[serde(default)]
    pub root: ChangeRoot,
    /// Bytes the file holds after the change; `None` when unknown or deleted.
    pub bytes: Option<u64>,
    /// When it was recorded.
    pub at: Timestamp,
    /// Whether `POST /api/changes/{id}/revert` can undo it now: what it replaced was
    /// kept, it is not reverted yet and its snapshot has not expired.
    pub revertible: bool,
    /// The change (of kind `reverted`) that undid it.
    pub reverted_by: Option<ChangeId>,
}

/// How many changes of each kind a task has (task JSON `changes`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeCounts {
    /// Files created.
    pub created: u64,
    /// Files replaced whole.
    pub overwritten: u64,
    /// Files edited.
    pub edited: u64,
    /// Changes the operator reverted (the reverts themselves).
    pub reverted: u64,
    /// Approved calls with effects unknown to PocketPilot.
    pub effects_unknown: u64,
    /// Files or folders moved or renamed.
    #[serde(default)]
    pub moved: u64,
    /// Files, links or empty folders deleted.
    #[serde(default)]
    pub deleted: u64,
    /// Folders created.
    #[serde(default)]
    pub folder_created: u64,
}

impl ChangeCounts {
    /// Counts one change of `kind`.
    pub fn add(&mut self, kind: ChangeKind) {
        let slot = match kind {
            ChangeKind::Created => &mut self.created,
            ChangeKind::Overwritten => &mut self.overwritten,
            ChangeKind::Edited => &mut self.edited,
            ChangeKind::Reverted => &mut self.reverted,
            ChangeKind::EffectsUnknown => &mut self.effects_unknown,
            ChangeKind::Moved => &mut self.moved,
            ChangeKind::Deleted => &mut self.deleted,
            ChangeKind::FolderCreated => &mut self.folder_created,
        };
        *slot = slot.saturating_add(1);
    }
}

/// A file's permission bits and owner, kept with a change so a revert gives the file
/// it writes again the mode (and, where the process may, the owner) it had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMode {
    /// Permission bits (`0o7777`: rwx for owner, group, others, plus setuid, setgid,
    /// sticky).
    pub mode: u32,
    /// The owning user id, where the platform has one.
    pub uid: Option<u32>,
    /// The owning group id, where the platform has one.
    pub gid: Option<u32>,
}

/// What a file held before a call changed it, as a tool's snapshot reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prior {
    /// Nothing existed at the path: a revert deletes what the call created.
    Absent,
    /// The whole content (it was no larger than the limit asked for).
    Content(Vec<u8>),
    /// A file larger than the limit: its content was not read.
    TooLarge {
        /// Its size in bytes.
        size: u64,
    },
    /// The file could not be read (permissions, not a regular file, a link).
    Unreadable {
        /// Why.
        reason: String,
    },
    /// An empty folder (a delete): a revert creates it again.
    EmptyFolder,
}

/// What a call does at a snapshot's path; decides the kind of its change.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum FileOp {
    /// Writes the file: `created`, `overwritten` or (with [`Snapshot::partial`])
    /// `edited`.
    #[default]
    Write,
    /// Moves the entry at this (workspace-relative, links resolved) path to the
    /// snapshot's path (`moved`); the prior is what the destination holds now (a file
    /// an overwriting move replaces, or nothing).
    MoveFrom(String),
    /// Deletes the entry (`deleted`); the prior is what it holds.
    Delete,
    /// Creates a folder (`folder_created`); the prior is absent.
    CreateFolder,
}

/// One file a call is about to change and what it holds now
/// (`pp_agent::Tool::snapshot`). Taken right before an approved call runs, and measured
/// (with a limit of 0 bytes) when the approval is requested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// What `path` is relative to: the workspace, or the memory file's directory.
    pub root: ChangeRoot,
    /// The path the call changes, relative to `root`, links resolved.
    pub path: String,
    /// Whether the call changes part of the file (an edit) rather than writing it whole;
    /// the change log says `edited` instead of `overwritten`.
    pub partial: bool,
    /// What the call does there (a write unless the tool says otherwise).
    pub op: FileOp,
    /// What is there now.
    pub prior: Prior,
}

impl Snapshot {
    /// Whether the prior state can be kept under `max_bytes` (absent, or a readable file
    /// no larger than that).
    pub fn keepable(&self, max_bytes: u64) -> bool {
        match &self.prior {
            Prior::Absent | Prior::EmptyFolder => true,
            Prior::Content(bytes) => bytes.len() as u64 <= max_bytes,
            Prior::TooLarge { size } => *size <= max_bytes,
            Prior::Unreadable { .. } => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_count() {
        let mut counts = ChangeCounts::default();
        for kind in ChangeKind::ALL {
            assert_eq!(ChangeKind::parse(kind.as_str()), Some(kind));
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, serde_json::Value::String(kind.as_str().to_owned()));
            counts.add(kind);
        }
        counts.add(ChangeKind::Edited);
        assert_eq!(counts.edited, 2);
        assert_eq!(counts.created, 1);
    }

    #[test]
    fn roots_round_trip_and_default_to_the_workspace() {
        for root in ChangeRoot::ALL {
            assert_eq!(ChangeRoot::parse(root.as_str()), Some(root));
            let json = serde_json::to_value(root).unwrap();
            assert_eq!(json, serde_json::Value::String(root.as_str().to_owned()));
        }
        let change = Change {
            id: ChangeId("c_1".into()),
            task_id: TaskId("t_1".into()),
            approval_id: None,
            tool: "write_file".into(),
            kind: ChangeKind::Created,
            path: Some("a.md".into()),
            from_path: None,
            root: ChangeRoot::Memory,
            bytes: Some(1),
            at: Timestamp::from_millis(0),
            revertible: true,
            reverted_by: None,
        };
        let mut old = serde_json::to_value(&change).unwrap();
        assert_eq!(old["root"], "memory");
        old.as_object_mut().unwrap().remove("root");
        let change: Change = serde_json::from_value(old).unwrap();
        assert_eq!(change.root, ChangeRoot::Workspace);
        assert_eq!(serde_json::to_value(&change).unwrap()["root"], "workspace");
        assert_eq!(
            serde_json::to_value(&change).unwrap().get("from_path"),
            None,
            "from_path is only there for moves"
        );
        let moved = Change {
            kind: ChangeKind::Moved,
            from_path: Some("old.md".into()),
            ..change
        };
        let json = serde_json::to_value(&moved).unwrap();
        assert_eq!(
            (&json["kind"], &json["from_path"]),
            (&"moved".into(), &"old.md".into())
        );
    }

    #[test]
    fn keepable_follows_the_limit() {
        let snapshot = |prior| Snapshot {
            root: ChangeRoot::Workspace,
            path: "a".into(),
            partial: false,
            op: FileOp::Write,
            prior,
        };
        assert!(snapshot(Prior::Absent).keepable(0));
        assert!(snapshot(Prior::TooLarge { size: 10 }).keepable(10));
        assert!(!snapshot(Prior::TooLarge { size: 11 }).keepable(10));
        assert!(!snapshot(Prior::Unreadable { reason: "x".into() }).keepable(10));
        assert!(snapshot(Prior::EmptyFolder).keepable(0));
    }
}
