//! An approval's outcome as its card shows it, and changes described for people.

use pp_types::{
    ApprovalRecord, ApprovalState, AuditAction, Change, ChangeKind, TaskRecord, TaskState,
};
use serde::Serialize;

use super::ChangeLog;

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
/// Several reads, not one snapshot: `task` (`None` if it could not be read) must have
/// been read before this is called, because a task seen ended has its call's outcome in
/// the ledger already (the sink stores it before the closing transaction), so a call
/// finishing between the reads is never shown as failed.
pub(crate) async fn outcome_of(
    log: &ChangeLog,
    approval: &ApprovalRecord,
    task: Option<&TaskRecord>,
) -> Option<Outcome> {
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
    let ledger = log
        .book
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
            let changes = log
                .book
                .approval_changes(&approval.id)
                .await
                .unwrap_or_default();
            let message = if changes.is_empty() {
                format!("Ran `{}`", approval.tool)
            } else if approval.tool == crate::keep::workspace::COMMAND_TOOL {
                command_summary(&approval.tool, &changes)
            } else {
                changes
                    .iter()
                    .map(|row| describe(&row.change))
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            outcome(OutcomeStatus::Done, message)
        }
        Some((action, detail)) => {
            let mut message = format!("Failed: {}", detail.as_deref().unwrap_or("the call failed"));
            // A command that failed still ran: say what it changed.
            if *action == AuditAction::ToolFailed
                && approval.tool == crate::keep::workspace::COMMAND_TOOL
            {
                let changes = log
                    .book
                    .approval_changes(&approval.id)
                    .await
                    .unwrap_or_default();
                if !changes.is_empty() {
                    message.push_str(" — ");
                    message.push_str(&command_summary(&approval.tool, &changes));
                }
            }
            outcome(OutcomeStatus::Failed, message)
        }
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

/// Most paths a command's outcome names; the rest are counted.
const NAMED_PATHS: usize = 8;

/// What a command changed, on one line: "`run_command` changed 3 paths: created
/// `a.txt`, overwritten `b.txt`, deleted `c.txt`".
fn command_summary(tool: &str, changes: &[pp_store::ChangeRow]) -> String {
    let count = changes.len();
    let plural = if count == 1 { "" } else { "s" };
    let mut parts: Vec<String> = changes
        .iter()
        .take(NAMED_PATHS)
        .map(|row| short(&row.change))
        .collect();
    if count > NAMED_PATHS {
        parts.push(format!("and {} more", count - NAMED_PATHS));
    }
    format!(
        "`{tool}` changed {count} path{plural}: {}",
        parts.join(", ")
    )
}

/// One change of a command, in a few words: "created `a.txt`".
fn short(change: &Change) -> String {
    let path = change.path.as_deref().unwrap_or("?");
    let mut text = match change.kind {
        ChangeKind::Created => format!("created `{path}`"),
        ChangeKind::Overwritten | ChangeKind::Edited => format!("overwritten `{path}`"),
        ChangeKind::Deleted => format!("deleted `{path}`"),
        ChangeKind::Moved => format!(
            "moved `{}` → `{path}`",
            change.from_path.as_deref().unwrap_or("?")
        ),
        ChangeKind::FolderCreated => format!("created folder `{path}`"),
        ChangeKind::Reverted => format!("reverted `{path}`"),
        ChangeKind::EffectsUnknown => format!("`{path}` (effects unknown)"),
    };
    if change.reverted_by.is_some() {
        text.push_str(" — reverted");
    }
    text
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
        ChangeKind::EffectsUnknown => match &change.path {
            Some(path) => format!(
                "`{}` changed `{path}` — not revertible (a mode, a link, a special file, or \
                 content beyond the snapshot bound)",
                change.tool
            ),
            None => format!("Ran `{}` — effects unknown to PocketPilot", change.tool),
        },
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

/// What a command's card says of `uncovered` (its `CommandPreview::uncovered`): "a
/// revert could not cover 3 files (1.2 MiB): too large, beyond the snapshot budget, or
/// ignored", or "a revert covers the whole workspace".
pub fn describe_uncovered(uncovered: &pp_types::Uncovered) -> String {
    if uncovered.files == 0 {
        return "a revert covers the whole workspace".to_owned();
    }
    let noun = if uncovered.files == 1 {
        "file"
    } else {
        "files"
    };
    format!(
        "a revert could not cover {} {noun} ({}): too large, beyond the snapshot budget, or \
         ignored",
        uncovered.files,
        format_size(uncovered.bytes)
    )
}

/// `318 B`, `12.5 KiB`, `3.0 MiB`, `1.2 GiB`.
pub fn format_size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    const GIB: u64 = 1024 * 1024 * 1024;
    // Display only: the precision lost converting to f64 does not show.
    #[expect(clippy::cast_precision_loss, reason = "a rounded size for display")]
    let scaled = |unit: u64| bytes as f64 / unit as f64;
    if bytes < KIB {
        format!("{bytes} B")
    } else if bytes < MIB {
        format!("{:.1} KiB", scaled(KIB))
    } else if bytes < GIB {
        format!("{:.1} MiB", scaled(MIB))
    } else {
        format!("{:.1} GiB", scaled(GIB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_well() {
        assert_eq!(format_size(318), "318 B");
        assert_eq!(format_size(1536), "1.5 KiB");
        assert_eq!(format_size(3 * 1024 * 1024), "3.0 MiB");
        assert_eq!(format_size(1288490189), "1.2 GiB");
    }

    #[test]
    fn the_card_tells_what_a_revert_could_not_cover() {
        let none = pp_types::Uncovered::default();
        assert_eq!(
            describe_uncovered(&none),
            "a revert covers the whole workspace"
        );
        let some = pp_types::Uncovered {
            files: 3,
            bytes: 1288490189,
        };
        assert_eq!(
            describe_uncovered(&some),
            "a revert could not cover 3 files (1.2 GiB): too large, beyond the snapshot \
             budget, or ignored"
        );
    }
}
