//! A pending approval's target checked again when a card is shown: has it changed since
//! the person was first shown it, and what would the call change now?

use pp_agent::ToolContext;
use pp_types::{ApprovalId, ApprovalState};
use serde::Serialize;

use crate::error::Result;
use crate::service::TaskService;

/// The target of a pending approval as it is now, next to what the card first showed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CurrentTarget {
    /// Whether the target's fingerprint differs from the one stored with the approval:
    /// approving now would end the approval `stale`, and nothing would be written.
    pub changed: bool,
    /// When `changed`: the unified diff from the target as it is now to what the call
    /// would write, from a fresh preview; `None` when unchanged, or when the call could
    /// no longer apply (an edit whose text is gone) or has no line diff.
    pub diff: Option<String>,
}

impl TaskService {
    /// The target of pending approval `id` checked again now: the tool reports its
    /// target's state ([`pp_agent::Tool::target_state`]) and, when it changed, a fresh
    /// preview gives the diff against the current content. The tools do that work on the
    /// blocking pool; the segment is built there too. `None` when the approval is not
    /// pending, its tool reports no target state, or the workspace cannot be opened.
    pub(crate) async fn current_target(&self, id: &ApprovalId) -> Result<Option<CurrentTarget>> {
        let shared = &self.inner.shared;
        let approval = shared.store.approval(id).await?;
        let task = shared.store.task(&approval.task_id).await?;
        let Some(shown) = approval.fingerprint.as_ref() else {
            return Ok(None);
        };
        if approval.state != ApprovalState::Pending {
            return Ok(None);
        }
        // A workspace that cannot be opened now is reported when the person decides;
        // the card simply cannot say more than it first did.
        let Ok(root) = shared.workspace_root(&task) else {
            return Ok(None);
        };
        let Ok(segment) = shared.segment(&root).await else {
            return Ok(None);
        };
        let Some(tool) = segment.registry.get(&approval.tool) else {
            return Ok(None);
        };
        let context = ToolContext::for_task(task.id.as_str(), None).with_actor(task.created_by);
        let Some(now) = tool.target_state(&context, &approval.arguments).await else {
            return Ok(None);
        };
        let changed = &now.fingerprint != shown;
        let diff = if changed {
            tool.preview(&context, &approval.arguments)
                .await
                .and_then(|preview| preview.diff)
        } else {
            None
        };
        Ok(Some(CurrentTarget { changed, diff }))
    }
}
