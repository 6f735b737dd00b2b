//! "This call may already have run": the card of an approval that asks again a call a
//! crash cut between its `tool_started` row and its result, with each target before
//! that call (the started call's snapshot) against the target now.

use std::path::Path;
use std::time::Duration;

use pp_store::{Before, StartedCall, StartedFile};
use pp_types::{ApprovalRecord, ChangeRoot, TaskRecord, Timestamp};
use serde::Serialize;

use super::ChangeLog;
use crate::blocking::blocking;
use crate::keep::place::{Current, Place, current};
use crate::keep::snapshots::Snapshots;

/// The notice every such card starts with.
pub const MAY_HAVE_RUN: &str = "this call may already have run";

/// A card's notice that the call it asks may already have run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MayHaveRun {
    /// For people: "this call may already have run: …".
    pub message: String,
    /// The earlier approval whose call started and has no recorded result.
    pub approval_id: String,
    /// When that call started.
    pub started_at: Timestamp,
    /// Each target the call changes, before that call and now.
    pub targets: Vec<CutTarget>,
}

pp_types::wire_enum! {
    /// What is at a target's path.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum PathState {
        /// Nothing.
        Absent => "absent",
        /// A file.
        File => "file",
        /// An empty folder.
        Folder => "folder",
        /// Not known (not kept, or this process cannot read the target).
        Unknown => "unknown",
    }
}

/// One target of a call that may already have run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CutTarget {
    /// The path, relative to `root`.
    pub path: String,
    /// The workspace, or the memory file's folder.
    pub root: ChangeRoot,
    /// What was there right before the call started (from the change log).
    pub before: PathState,
    /// Its size then, when known.
    pub before_size: Option<u64>,
    /// What is there now; `unknown` where this process cannot read the target.
    pub now: PathState,
    /// Its size now, when known.
    pub now_size: Option<u64>,
    /// Whether the target now differs from before the call (then the call, or something
    /// else, changed it); `null` when that cannot be told.
    pub changed: Option<bool>,
    /// The unified diff from the target before the call to the target now, when both
    /// are known text and they differ.
    pub diff: Option<String>,
}

/// The notice for `approval`'s card: `None` unless it asks again a cut call. A store or
/// file read that fails leaves the parts it would show `unknown`.
pub(crate) async fn may_have_run(
    log: &ChangeLog,
    approval: &ApprovalRecord,
    task: Option<&TaskRecord>,
) -> Option<MayHaveRun> {
    let call = log.book.0.cut_call_asked_by(&approval.id).await.ok()??;
    let workspace = task.and_then(|task| log.service.workspace_root(task).ok());
    let (data_dir, memory) = (log.service.data_dir(), log.service.memory());
    let max_bytes = log.settings().revert.max_bytes;
    let files = call.files.clone();
    let targets = blocking(move || {
        files
            .iter()
            .map(|file| {
                let at = Places {
                    workspace: workspace.as_deref(),
                    data_dir: data_dir.as_deref(),
                    memory: memory.as_ref(),
                };
                compare(file, &at, max_bytes)
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    Some(notice(&call, targets))
}

fn notice(call: &StartedCall, targets: Vec<CutTarget>) -> MayHaveRun {
    MayHaveRun {
        message: format!(
            "{MAY_HAVE_RUN}: the process stopped after `{}` started ({}) and before its \
             result was recorded; compare the target now with before the call before \
             approving it again",
            call.tool,
            call.started_at.to_rfc3339_seconds()
        ),
        approval_id: call.approval_id.to_string(),
        started_at: call.started_at,
        targets,
    }
}

/// Where a cut call's files are looked at: the workspace, the snapshot store's data
/// directory and the memory.
struct Places<'a> {
    workspace: Option<&'a str>,
    data_dir: Option<&'a Path>,
    memory: Option<&'a pp_tools::memory::Memory>,
}

/// `file` before the call against now. Reads files: off the async threads.
fn compare(file: &StartedFile, at: &Places<'_>, max_bytes: u64) -> CutTarget {
    let kept = match &file.before {
        Before::Kept(sha256) => at
            .data_dir
            .and_then(|dir| Snapshots::open(dir).ok())
            .and_then(|snapshots| snapshots.get(sha256).ok()),
        _ => None,
    };
    let before = match &file.before {
        Before::Absent => PathState::Absent,
        Before::Folder => PathState::Folder,
        Before::Kept(_) | Before::NotKept | Before::Expired => PathState::File,
        Before::Unknown => PathState::Unknown,
    };
    let now = at
        .workspace
        .and_then(|workspace| Place::open(file.root, workspace, at.memory).ok())
        .and_then(|place| current(place.jail(), &file.path, max_bytes).ok());
    let (now_state, now_size, now_bytes) = match &now {
        Some(Current::Absent) => (PathState::Absent, None, None),
        Some(Current::Content(bytes)) => (PathState::File, Some(bytes.len() as u64), Some(bytes)),
        Some(Current::TooLarge) => (PathState::File, None, None),
        None => (PathState::Unknown, None, None),
    };
    let changed = match (before, now_state) {
        (PathState::Unknown, _) | (_, PathState::Unknown) => None,
        (before, now) if before != now => Some(true),
        (PathState::Absent, PathState::Absent) => Some(false),
        _ => match (&kept, now_bytes) {
            (Some(kept), Some(now)) => Some(kept != now),
            _ => match (file.size, now_size) {
                (Some(before), Some(now)) if before != now => Some(true),
                _ => None,
            },
        },
    };
    let diff = match (changed, &kept, now_bytes, before, now_state) {
        (Some(true), Some(kept), Some(now), ..) => text_diff(&file.path, kept, now),
        (Some(true), None, Some(now), PathState::Absent, _) => text_diff(&file.path, &[], now),
        (Some(true), Some(kept), None, _, PathState::Absent) => text_diff(&file.path, kept, &[]),
        _ => None,
    };
    CutTarget {
        path: file.path.clone(),
        root: file.root,
        before,
        before_size: file.size,
        now: now_state,
        now_size,
        changed,
        diff,
    }
}

/// The unified diff from `before` to `now` when both are text.
fn text_diff(path: &str, before: &[u8], now: &[u8]) -> Option<String> {
    let (before, now) = (
        std::str::from_utf8(before).ok()?,
        std::str::from_utf8(now).ok()?,
    );
    Some(
        similar::TextDiff::configure()
            .timeout(Duration::from_millis(500))
            .diff_lines(before, now)
            .unified_diff()
            .context_radius(3)
            .header(&format!("before the call/{path}"), &format!("now/{path}"))
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept_file(path: &str, before: Before, size: Option<u64>) -> StartedFile {
        StartedFile {
            root: ChangeRoot::Workspace,
            path: path.to_owned(),
            before,
            size,
        }
    }

    #[test]
    #[expect(clippy::disallowed_methods, reason = "the test's own temporary tree")]
    fn a_kept_file_is_compared_with_the_file_now() {
        let data = tempfile::tempdir().unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let root = workspace.path().to_str().unwrap();
        let sha256 = Snapshots::open(data.path())
            .unwrap()
            .put(b"one\ntwo\n")
            .unwrap();
        std::fs::write(workspace.path().join("a.txt"), "one\nTWO\n").unwrap();
        std::fs::write(workspace.path().join("same.txt"), "one\ntwo\n").unwrap();

        let changed = compare(
            &kept_file("a.txt", Before::Kept(sha256.clone()), Some(8)),
            &Places {
                workspace: Some(root),
                data_dir: Some(data.path()),
                memory: None,
            },
            1024,
        );
        assert_eq!(
            (
                changed.before,
                changed.now,
                changed.now_size,
                changed.changed
            ),
            (PathState::File, PathState::File, Some(8), Some(true))
        );
        let diff = changed.diff.unwrap();
        assert!(diff.contains("-two") && diff.contains("+TWO"), "{diff}");

        let same = compare(
            &kept_file("same.txt", Before::Kept(sha256), Some(8)),
            &Places {
                workspace: Some(root),
                data_dir: Some(data.path()),
                memory: None,
            },
            1024,
        );
        assert_eq!((same.changed, same.diff), (Some(false), None));

        // Deleted since (before: a file not kept), and nothing readable here.
        let gone = compare(
            &kept_file("gone.txt", Before::NotKept, Some(3)),
            &Places {
                workspace: Some(root),
                data_dir: None,
                memory: None,
            },
            1024,
        );
        assert_eq!((gone.now, gone.changed), (PathState::Absent, Some(true)));
        let elsewhere = compare(
            &kept_file("a.txt", Before::Absent, None),
            &Places {
                workspace: None,
                data_dir: None,
                memory: None,
            },
            1024,
        );
        assert_eq!(
            (elsewhere.now, elsewhere.changed, elsewhere.diff),
            (PathState::Unknown, None, None)
        );
    }
}
