//! The checks an approved call passes before it runs — once when the person decides and
//! again right before the call executes (the run may have waited for a worker, and the
//! tree may have changed since). Both paths call [`assess`]; nothing else decides this.

use pp_agent::{ToolContext, ToolRegistry, check_edit};
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
    /// The target is not in the state the deciding person saw (`seen_fingerprint`):
    /// nothing is recorded and the approval stays pending.
    ChangedSinceSeen(String),
}

/// When a call is assessed, and against what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Moment<'a> {
    /// A person decides. With `seen`, the fingerprint of the target as their card showed
    /// it (a precheck's), which must be the target's now; without, the fingerprint stored
    /// with the approval is compared, unless an edit points the call at another target.
    Decision {
        /// The fingerprint the person saw, if their client sent one.
        seen: Option<&'a str>,
    },
    /// Right before the approved call runs: the target must still have the fingerprint
    /// stored with the approval (which the decision may have replaced).
    BeforeRun,
}

/// Assesses an approved call (`edited` replaces its arguments when the person edited
/// them) against a freshly built `segment`, and hands the segment back. A call that may
/// run comes with the fingerprint to store as the one it was approved against (`None`:
/// keep the stored one).
///
/// Edited arguments are validated against the tool's schema and checked by the gate
/// ([`validate_edit`]). Then the stale check ([`Moment`]): the tool reports its target's
/// state now ([`pp_agent::Tool::target_state`], never a hard-coded argument name) for
/// the arguments that would run, which must have the fingerprint the person saw. An
/// edit that points at another target, decided without a seen fingerprint, is approved
/// against that target as it is at the decision.
pub(crate) async fn assess(
    segment: Segment,
    approval: &ApprovalRecord,
    edited: Option<&Value>,
    context: &ToolContext,
    moment: Moment<'_>,
) -> Result<(Segment, std::result::Result<Option<String>, Refusal>)> {
    let segment = match edited {
        Some(edited) => {
            let (segment, verdict) = validate_edit(segment, approval, edited).await?;
            if let Err(refusal) = verdict {
                return Ok((segment, Err(refusal)));
            }
            segment
        }
        None => segment,
    };
    let verdict = stale_check(&segment.registry, approval, edited, context, moment).await;
    Ok((segment, verdict))
}

/// Validates a person's `edited` arguments for `approval`'s tool against its schema and
/// the freshly built gate (on the blocking pool: the jail touches the disk), and hands
/// the segment back. The tool is always the approval's: an edit cannot change it.
pub(crate) async fn validate_edit(
    segment: Segment,
    approval: &ApprovalRecord,
    edited: &Value,
) -> Result<(Segment, std::result::Result<(), Refusal>)> {
    let (tool_name, arguments) = (approval.tool.clone(), edited.clone());
    let (segment, verdict) = blocking(move || {
        let verdict = match segment.registry.get(&tool_name) {
            Some(tool) => check_edit(tool.as_ref(), &segment.gate, &arguments),
            None => Err(format!("tool `{tool_name}` is not available")),
        };
        (segment, verdict)
    })
    .await?;
    Ok((segment, verdict.map_err(Refusal::InvalidEdit)))
}

/// The check repeated right before an approved call runs: the target must still have
/// the fingerprint stored with the approval (which the decision may have replaced).
/// `Err` says why the call must not run.
pub(crate) async fn recheck(
    registry: &ToolRegistry,
    approval: &ApprovalRecord,
    edited: Option<&Value>,
    context: &ToolContext,
) -> std::result::Result<(), String> {
    match stale_check(registry, approval, edited, context, Moment::BeforeRun).await {
        Ok(_) => Ok(()),
        Err(Refusal::InvalidEdit(message) | Refusal::Stale(message))
        | Err(Refusal::ChangedSinceSeen(message)) => Err(message),
    }
}

async fn stale_check(
    registry: &ToolRegistry,
    approval: &ApprovalRecord,
    edited: Option<&Value>,
    context: &ToolContext,
    moment: Moment<'_>,
) -> std::result::Result<Option<String>, Refusal> {
    let tool = registry.get(&approval.tool);
    let executed = edited.unwrap_or(&approval.arguments);
    let now = match tool {
        Some(tool) => tool.target_state(context, executed).await,
        None => None,
    };
    let target = approval.target.as_deref().unwrap_or(approval.tool.as_str());
    // A tool that reports no target has no state to have seen: the stored rule holds.
    if let (Moment::Decision { seen: Some(seen) }, Some(now)) = (moment, now.as_ref()) {
        if now.fingerprint == seen {
            return Ok(Some(seen.to_owned()));
        }
        return Err(Refusal::ChangedSinceSeen(format!(
            "`{target}` changed after you were shown it: nothing was run and the approval \
             is still pending; look at it again and decide"
        )));
    }
    let Some(shown) = &approval.fingerprint else {
        return Ok(None);
    };
    if let (Moment::Decision { .. }, Some(tool), Some(_), Some(now)) =
        (moment, tool, edited, now.as_ref())
        && !same_target(tool.as_ref(), approval, now, context).await
    {
        return Ok(Some(now.fingerprint.clone()));
    }
    if now.as_ref().is_some_and(|now| &now.fingerprint == shown) {
        return Ok(None);
    }
    Err(Refusal::Stale(format!(
        "not run: `{target}` changed after the approval was requested, so the person \
         approved a version they never saw; read it again and ask again if still needed"
    )))
}

/// Whether `now` (the target state of an edit of `approval`'s call) is the state of the
/// target the call designated as asked: an edit that points the call elsewhere has
/// nothing to compare with the fingerprint the card first showed.
pub(crate) async fn same_target(
    tool: &dyn pp_agent::Tool,
    approval: &ApprovalRecord,
    now: &pp_types::TargetState,
    context: &ToolContext,
) -> bool {
    tool.target_state(context, &approval.arguments)
        .await
        .is_some_and(|original| original.identity == now.identity)
}

/// The target of a call for the audit ledger, as the tool names it.
pub(crate) fn target_of(segment: &Segment, tool: &str, arguments: &Value) -> Option<String> {
    target_of_in(&segment.registry, tool, arguments)
}

/// [`target_of`] with the tools of `registry`.
pub(crate) fn target_of_in(
    registry: &ToolRegistry,
    tool: &str,
    arguments: &Value,
) -> Option<String> {
    registry.get(tool)?.target(arguments)
}
