//! Records for the unit tests of rules that read a task (access checks, worker claims).

use pp_types::{Actor, TaskId, TaskRecord, TaskState, Timestamp};

/// Task `t_1` in `workspace`, in `state`, created by the operator for team user `by`.
pub(crate) fn task(workspace: &str, state: TaskState, by: Option<&str>) -> TaskRecord {
    TaskRecord {
        id: TaskId("t_1".into()),
        prompt: "p".into(),
        workspace: workspace.into(),
        workspace_path: String::new(),
        state,
        created_by: Actor::Operator,
        created_by_user: by.map(str::to_owned),
        origin: None,
        script: None,
        script_position: 0,
        running_ms: 0,
        final_text: None,
        failure_reason: None,
        error: None,
        created_at: Timestamp::from_millis(0),
        updated_at: Timestamp::from_millis(0),
        finished_at: None,
        changes: Default::default(),
        usage: Default::default(),
    }
}
