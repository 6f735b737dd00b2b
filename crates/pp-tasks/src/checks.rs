//! The checks an approved call passes before it runs — once when the person decides and
//! again right before the call executes (the run may have waited for a worker, and the
//! tree may have changed since). Both paths call [`assess`]; nothing else decides this.

use pp_agent::check_edit;
use pp_gate::Jail;
use pp_types::ApprovalRecord;
use serde_json::Value;

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
/// them) against a freshly built `segment`. Touches the disk (gate, fingerprint): call it
/// off the async threads.
///
/// Edited arguments are validated against the tool's schema and checked by the gate.
/// Then the stale check: the call's target (the tool's first path parameter, never a
/// hard-coded argument name) must still have the fingerprint shown on the card. Edits
/// that point at another file skip it (the person chose that call themselves); edits
/// that keep the target are checked like unedited approvals.
pub(crate) fn assess(
    segment: &Segment,
    approval: &ApprovalRecord,
    edited: Option<&Value>,
    hash_max_bytes: u64,
) -> Result<(), Refusal> {
    let tool = segment.registry.get(&approval.tool);
    if let Some(edited) = edited {
        let tool = tool.ok_or_else(|| {
            Refusal::InvalidEdit(format!("tool `{}` is not available", approval.tool))
        })?;
        check_edit(tool.as_ref(), &segment.gate, edited).map_err(Refusal::InvalidEdit)?;
    }
    let param = tool.and_then(|tool| tool.spec().path_params.first().cloned());
    match stale_reason(
        segment.jail(),
        approval,
        edited,
        param.as_deref(),
        hash_max_bytes,
    ) {
        Some(message) => Err(Refusal::Stale(message)),
        None => Ok(()),
    }
}

fn stale_reason(
    jail: &Jail,
    approval: &ApprovalRecord,
    edited: Option<&Value>,
    param: Option<&str>,
    hash_max_bytes: u64,
) -> Option<String> {
    let (Some(target), Some(shown)) = (&approval.target, &approval.fingerprint) else {
        return None;
    };
    if let Some(edited) = edited {
        let edited_target = param.and_then(|param| edited.get(param)?.as_str())?;
        let same = match (jail.check(edited_target), jail.check(target)) {
            (Ok(edited), Ok(original)) => edited == original,
            _ => false,
        };
        if !same {
            return None;
        }
    }
    let now = jail.fingerprint_with(target, hash_max_bytes).ok();
    (now.as_deref() != Some(shown.as_str())).then(|| {
        format!(
            "not run: `{target}` changed after the approval was requested, so the person \
             approved a version they never saw; read it again and ask again if still needed"
        )
    })
}

/// The target of a call for the audit ledger: the tool's first path parameter's value.
pub(crate) fn target_of(segment: &Segment, tool: &str, arguments: &Value) -> Option<String> {
    let tool = segment.registry.get(tool)?;
    let param = tool.spec().path_params.first()?;
    arguments.get(param)?.as_str().map(str::to_owned)
}
