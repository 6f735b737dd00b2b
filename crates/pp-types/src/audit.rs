//! What the audit ledger records: a closed set of actions.

use serde::{Deserialize, Serialize};

/// One kind of audit row. The wire, the ledger and eval cases use the snake-case names
/// ([`AuditAction::as_str`]); adding an action is a change to this list, nowhere else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditAction {
    /// A task was created.
    TaskCreated,
    /// The operator cancelled a task (recorded with the cancel itself).
    TaskCancelled,
    /// The operator retried an interrupted task.
    TaskRetried,
    /// A person approved a call.
    ApprovalApproved,
    /// A person rejected a call.
    ApprovalRejected,
    /// An approval went stale: its target changed after the person saw it.
    ApprovalStale,
    /// An approved call passed its last checks and is about to run: written before the
    /// side effect, so a crash between the effect and its result still leaves a trace.
    ToolStarted,
    /// An approved call ran and succeeded.
    ToolExecuted,
    /// An approved call ran and failed.
    ToolFailed,
    /// The gate denied a call.
    ToolDenied,
    /// The operator uploaded a file.
    FileUploaded,
    /// The operator downloaded a file.
    FileDownloaded,
    /// Someone logged in to the console.
    ConsoleLogin,
    /// The operator created or changed a skill (its `SKILL.md` or a file of it).
    SkillUpdated,
    /// The operator removed a skill.
    SkillRemoved,
    /// The operator replaced the memory file (`memory.md` in the data directory).
    MemoryUpdated,
    /// A chat session was started (its turns are audited as tasks).
    SessionCreated,
    /// The operator deleted a chat session (its turns' tasks and ledger rows stay).
    SessionDeleted,
    /// The operator reverted a change an approved call made (the change log's `reverted`).
    ChangeReverted,
}

impl AuditAction {
    /// Every action, in declaration order.
    pub const ALL: [Self; 19] = [
        Self::TaskCreated,
        Self::TaskCancelled,
        Self::TaskRetried,
        Self::ApprovalApproved,
        Self::ApprovalRejected,
        Self::ApprovalStale,
        Self::ToolStarted,
        Self::ToolExecuted,
        Self::ToolFailed,
        Self::ToolDenied,
        Self::FileUploaded,
        Self::FileDownloaded,
        Self::ConsoleLogin,
        Self::SkillUpdated,
        Self::SkillRemoved,
        Self::MemoryUpdated,
        Self::SessionCreated,
        Self::SessionDeleted,
        Self::ChangeReverted,
    ];

    /// The snake-case name used on the wire and in the ledger.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TaskCreated => "task_created",
            Self::TaskCancelled => "task_cancelled",
            Self::TaskRetried => "task_retried",
            Self::ApprovalApproved => "approval_approved",
            Self::ApprovalRejected => "approval_rejected",
            Self::ApprovalStale => "approval_stale",
            Self::ToolStarted => "tool_started",
            Self::ToolExecuted => "tool_executed",
            Self::ToolFailed => "tool_failed",
            Self::ToolDenied => "tool_denied",
            Self::FileUploaded => "file_uploaded",
            Self::FileDownloaded => "file_downloaded",
            Self::ConsoleLogin => "console_login",
            Self::SkillUpdated => "skill_updated",
            Self::SkillRemoved => "skill_removed",
            Self::MemoryUpdated => "memory_updated",
            Self::SessionCreated => "session_created",
            Self::SessionDeleted => "session_deleted",
            Self::ChangeReverted => "change_reverted",
        }
    }

    /// The action named `name`, if there is one.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|action| action.as_str() == name)
    }
}

impl std::fmt::Display for AuditAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for AuditAction {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_serde() {
        for action in AuditAction::ALL {
            assert_eq!(AuditAction::parse(action.as_str()), Some(action));
            let json = serde_json::to_value(action).unwrap();
            assert_eq!(json, serde_json::Value::String(action.as_str().to_owned()));
        }
        assert_eq!(AuditAction::parse("made_up"), None);
    }
}
