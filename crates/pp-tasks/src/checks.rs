//! The checks an approved call passes before it runs — once when the person decides and
//! again right before the call executes (the run may have waited for a worker, and the
//! tree may have changed since). Both paths call [`assess`]; nothing else decides this.

use pp_agent::{ToolContext, check_edit};
use pp_types::ApprovalRecord;
use serde_json::Value;

use crate::blocking::blocking;
use crate::error::Result;
use crate::segment::Segment;

/// Why an approved call must not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The edited arguments fail the tool's schema or the freshly built gate.
    InvalidEdit(String),
    /// The target changed after the person was shown it.
    Stale(String),
}

/// Assesses an approved call (`edited` replaces its arguments when the person edited
/// them) against a freshly built `segment`, and hands the segment back.
///
/// Edited arguments are validated against the tool's schema and checked by the gate
/// (on the blocking pool: the jail touches the disk). Then the stale check: the tool
/// reports its target's state now ([`pp_agent::Tool::target_state`], never a hard-coded
/// argument name), which must still have the fingerprint shown on the card. Edits that
/// point at another target skip it (the person chose that call themselves); edits that
/// keep the target are checked like unedited approvals.
pub(crate) async fn assess(
    segment: Segment,
    approval: &ApprovalRecord,
    edited: Option<&Value>,
    context: &ToolContext,
) -> Result<(Segment, std::result::Result<(), Refusal>)> {
    let segment = if let Some(edited) = edited {
        let (tool_name, arguments) = (approval.tool.clone(), edited.clone());
        let (segment, verdict) = blocking(move || {
            let verdict = match segment.registry.get(&tool_name) {
                Some(tool) => check_edit(tool.as_ref(), &segment.gate, &arguments),
                None => Err(format!("tool `{tool_name}` is not available")),
            };
            (segment, verdict)
        })
        .await?;
        if let Err(message) = verdict {
            return Ok((segment, Err(Refusal::InvalidEdit(message))));
        }
        segment
    } else {
        segment
    };
    let verdict = stale_check(&segment, approval, edited, context).await;
    Ok((segment, verdict))
}

async fn stale_check(
    segment: &Segment,
    approval: &ApprovalRecord,
    edited: Option<&Value>,
    context: &ToolContext,
) -> std::result::Result<(), Refusal> {
    let Some(shown) = &approval.fingerprint else {
        return Ok(());
    };
    let tool = segment.registry.get(&approval.tool);
    let now = match tool {
        Some(tool) => tool.target_state(context, &approval.arguments).await,
        None => None,
    };
    if let (Some(tool), Some(edited), Some(now)) = (tool, edited, now.as_ref()) {
        let edited_state = tool.target_state(context, edited).await;
        if edited_state.is_none_or(|state| state.identity != now.identity) {
            return Ok(());
        }
    }
    if now.as_ref().is_some_and(|now| &now.fingerprint == shown) {
        return Ok(());
    }
    let target = approval.target.as_deref().unwrap_or(approval.tool.as_str());
    Err(Refusal::Stale(format!(
        "not run: `{target}` changed after the approval was requested, so the person \
         approved a version they never saw; read it again and ask again if still needed"
    )))
}

/// The target of a call for the audit ledger, as the tool names it.
pub(crate) fn target_of(segment: &Segment, tool: &str, arguments: &Value) -> Option<String> {
    segment.registry.get(tool)?.target(arguments)
}
