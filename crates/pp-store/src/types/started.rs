//! Started calls: what an approved call's targets held right before it ran, kept until
//! a retry needs to say "this call may already have run" ([`crate::Store::call_started`]).

use pp_types::{ApprovalId, ChangeRoot, TaskId, Timestamp};
use serde::{Deserialize, Serialize};

use super::Before;

/// One target of a started call as the change log's snapshot saw it before the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartedFile {
    /// What `path` is relative to.
    pub root: ChangeRoot,
    /// The file, relative to `root`, links resolved.
    pub path: String,
    /// What it held before the call (`Kept`: the blob's SHA-256 in the snapshot store).
    pub before: Before,
    /// Its size before the call, when known.
    pub size: Option<u64>,
}

/// An approved call about to run ([`crate::Store::call_started`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewStartedCall {
    /// The approval that allowed it.
    pub approval_id: ApprovalId,
    /// Its task.
    pub task_id: TaskId,
    /// The tool.
    pub tool: String,
    /// The target the approval names.
    pub target: Option<String>,
    /// Its targets before the call; empty when the tool reports none.
    pub files: Vec<StartedFile>,
}

/// A stored started call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartedCall {
    /// The approval that allowed it.
    pub approval_id: ApprovalId,
    /// Its task.
    pub task_id: TaskId,
    /// The tool.
    pub tool: String,
    /// The target the approval names.
    pub target: Option<String>,
    /// When it started (by the store's clock).
    pub started_at: Timestamp,
    /// Its targets before the call.
    pub files: Vec<StartedFile>,
    /// Whether a retry found it with no recorded result: it may or may not have run.
    pub cut: bool,
    /// The approval that asks it again after the retry.
    pub asked_again_by: Option<ApprovalId>,
}

/// The `files` column: one JSON object per file.
#[derive(Serialize, Deserialize)]
struct FileColumn {
    root: String,
    path: String,
    before: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    before_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
}

/// The `files` column of `files`.
pub(crate) fn files_column(files: &[StartedFile]) -> String {
    let columns: Vec<FileColumn> = files
        .iter()
        .map(|file| {
            let (before, sha256) = file.before.column();
            FileColumn {
                root: file.root.as_str().to_owned(),
                path: file.path.clone(),
                before: before.to_owned(),
                before_sha256: sha256.map(str::to_owned),
                size: file.size,
            }
        })
        .collect();
    serde_json::to_string(&columns).unwrap_or_else(|_| "[]".to_owned())
}

/// The files of a `files` column; `None` when it does not decode.
pub(crate) fn files_of(column: &str) -> Option<Vec<StartedFile>> {
    let columns: Vec<FileColumn> = serde_json::from_str(column).ok()?;
    columns
        .into_iter()
        .map(|column| {
            let before = match (column.before.as_str(), column.before_sha256) {
                ("absent", _) => Before::Absent,
                ("kept", Some(sha256)) => Before::Kept(sha256),
                ("not_kept", _) => Before::NotKept,
                ("expired", _) => Before::Expired,
                ("folder", _) => Before::Folder,
                ("none", _) => Before::Unknown,
                _ => return None,
            };
            Some(StartedFile {
                root: ChangeRoot::parse(&column.root)?,
                path: column.path,
                before,
                size: column.size,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_round_trip_through_their_column() {
        let files = vec![
            StartedFile {
                root: ChangeRoot::Workspace,
                path: "a.txt".to_owned(),
                before: Before::Kept("ab12".to_owned()),
                size: Some(3),
            },
            StartedFile {
                root: ChangeRoot::Workspace,
                path: "new.txt".to_owned(),
                before: Before::Absent,
                size: None,
            },
        ];
        assert_eq!(files_of(&files_column(&files)), Some(files));
        assert_eq!(files_of("[{\"root\":\"nowhere\"}]"), None);
    }
}
