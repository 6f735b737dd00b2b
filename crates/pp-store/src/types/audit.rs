//! Which audit rows to list.

use pp_types::{Actor, AuditAction, TaskId};

/// Which audit rows [`crate::Store::list_audit`] returns: all conditions must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditFilter {
    /// Only this actor's rows.
    pub actor: Option<Actor>,
    /// Only rows about this task.
    pub task_id: Option<TaskId>,
    /// Only this action (`task_created`, `approval_approved`, …).
    pub action: Option<String>,
    /// None of these actions (`console_login` rows crowd out the rest).
    pub exclude: Vec<AuditAction>,
    /// Only rows older than this id (paging: pass the last id of the previous page).
    pub before_id: Option<i64>,
    /// At most this many rows.
    pub limit: usize,
}

impl Default for AuditFilter {
    /// Everything, 100 rows at a time.
    fn default() -> Self {
        Self {
            actor: None,
            task_id: None,
            action: None,
            exclude: Vec::new(),
            before_id: None,
            limit: 100,
        }
    }
}
