//! What the audit ledger records: a closed set of actions.

crate::wire_enum! {
    /// One kind of audit row. The wire, the ledger and eval cases use the snake-case names
    /// ([`AuditAction::as_str`]); adding an action is a change to this list, nowhere else.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum AuditAction {
        /// A task was created.
        TaskCreated => "task_created",
        /// The operator cancelled a task (recorded with the cancel itself).
        TaskCancelled => "task_cancelled",
        /// The operator retried an interrupted task.
        TaskRetried => "task_retried",
        /// A person approved a call.
        ApprovalApproved => "approval_approved",
        /// A person rejected a call.
        ApprovalRejected => "approval_rejected",
        /// An approval went stale: its target changed after the person saw it.
        ApprovalStale => "approval_stale",
        /// An approved call passed its last checks and is about to run: written before the
        /// side effect, so a crash between the effect and its result still leaves a trace.
        ToolStarted => "tool_started",
        /// An approved call ran and succeeded.
        ToolExecuted => "tool_executed",
        /// An approved call ran and failed.
        ToolFailed => "tool_failed",
        /// The gate denied a call.
        ToolDenied => "tool_denied",
        /// The operator uploaded a file.
        FileUploaded => "file_uploaded",
        /// The operator downloaded a file.
        FileDownloaded => "file_downloaded",
        /// Someone logged in to the console.
        ConsoleLogin => "console_login",
        /// The operator created or changed a skill (its `SKILL.md` or a file of it).
        SkillUpdated => "skill_updated",
        /// The operator removed a skill.
        SkillRemoved => "skill_removed",
        /// The operator replaced the memory file (`memory.md` in the data directory).
        MemoryUpdated => "memory_updated",
        /// A chat session was started (its turns are audited as tasks).
        SessionCreated => "session_created",
        /// The operator deleted a chat session (its turns' tasks and ledger rows stay).
        SessionDeleted => "session_deleted",
        /// The operator reverted a change an approved call made (the change log's `reverted`).
        ChangeReverted => "change_reverted",
        /// A person created a schedule (its name is the row's `target`).
        ScheduleCreated => "schedule_created",
        /// A person changed a schedule (paused, resumed or edited it).
        ScheduleUpdated => "schedule_updated",
        /// A person removed a schedule.
        ScheduleRemoved => "schedule_removed",
        /// A person ran a schedule now (`schedules run`, "Run now"); its task has the row.
        ScheduleRun => "schedule_run",
        /// A team user was added (the row's `target` is the user's name, `detail` the role).
        UserAdded => "user_added",
        /// A team user was removed: their logins ended; their tasks and audit rows stay.
        UserRemoved => "user_removed",
        /// A team user's role was changed (`detail`: `old → new`).
        UserRoleChanged => "user_role_changed",
        /// A workspace was granted to a team user (`detail`: the workspace).
        UserGranted => "user_granted",
        /// A workspace was taken back from a team user (`detail`: the workspace).
        UserRevoked => "user_revoked",
        /// A team user was given a new token (their old token and logins ended).
        UserTokenRotated => "user_token_rotated",

        // Webhook channels (the operator, or in team mode the owner who acted).
        /// A webhook channel was created.
        ChannelCreated => "channel_created",
        /// A webhook channel was changed (template, workspace, enabled), or its secret
        /// re-sealed with the team key.
        ChannelUpdated => "channel_updated",
        /// A webhook channel was removed.
        ChannelRemoved => "channel_removed",
        /// A webhook channel's secret was replaced.
        ChannelRotated => "channel_rotated",

        // Remote decisions (docs/remote.md).
        /// A tap on a chat app's card was refused: not an allowed user or chat, not a
        /// card the bot sent, or a button id that does not match (at most one row per
        /// chat per minute; `detail` says who and why).
        RemoteTapRefused => "remote_tap_refused",
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
