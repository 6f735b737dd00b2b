//! Every pending card checked when it is read: would the call apply to its target as the
//! person first saw it, has the target changed since, would it fail, would it change
//! nothing — with a fingerprint of the very state the answer was computed from, which a
//! decision sends back (`seen_fingerprint`) so only what was shown can be approved.

use std::collections::HashMap;

use pp_agent::{Tool, ToolContext};
use pp_types::{ApprovalId, ApprovalRecord, ApprovalState, EffectPreview, EffectScope, WriteLabel};
use serde::Serialize;
use serde_json::Value;

use crate::checks::{Refusal, same_target, validate_edit};
use crate::error::{Error, Result};
use crate::segment::Segment;
use crate::service::TaskService;

/// How many times the target is read again when it changed while it was being read.
const READS: usize = 3;

pp_types::wire_enum! {
    /// What deciding a pending card would do now, in order of precedence: `will_fail` >
    /// `no_change` > `changed` > `ready`; `unavailable` when this process cannot read the
    /// target at all.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum PrecheckStatus {
        /// The call applies to the target as the card first showed it.
        Ready => "ready",
        /// The target changed since the approval was requested; the diff is against the
        /// target as it is now.
        Changed => "changed",
        /// The call cannot apply; the message says why (folder missing, text no longer
        /// present, source gone, …).
        WillFail => "will_fail",
        /// Applying the call would leave the target as it is.
        NoChange => "no_change",
        /// This process cannot read the target (team mode: the workspace is on another
        /// host).
        Unavailable => "unavailable",
    }
}

/// A pending card's target checked now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Precheck {
    /// What deciding would do now.
    pub status: PrecheckStatus,
    /// Why (`will_fail`, `no_change`, `unavailable`); `null` otherwise.
    pub message: Option<String>,
    /// An opaque token of the target state this precheck saw, from the same read as
    /// `diff`; a decision sends it back as `seen_fingerprint`. `null` when unavailable.
    pub fingerprint: Option<String>,
    /// The unified diff from the target as it is now to what the call would leave;
    /// `null` when there is none (a new file, a move, a failing call) and in list rows.
    pub diff: Option<String>,
    /// The new file's content (capped) when the call creates one now; not in list rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Create, overwrite, move, … as things are now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<WriteLabel>,
    /// New file, edit or whole-file replacement, as things are now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<EffectScope>,
    /// Lines the call would add now, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added: Option<u32>,
    /// Lines the call would remove now, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed: Option<u32>,
}

impl Precheck {
    /// A precheck with only a status and why: nothing about the target is known.
    fn bare(status: PrecheckStatus, message: Option<String>) -> Self {
        Self {
            status,
            message,
            fingerprint: None,
            diff: None,
            content: None,
            label: None,
            scope: None,
            added: None,
            removed: None,
        }
    }

    /// A precheck that cannot be made (here, or for this caller), with why.
    pub fn unavailable(message: String) -> Self {
        Self::bare(PrecheckStatus::Unavailable, Some(message))
    }

    /// A call that cannot apply, with why (nothing about the target is known).
    fn will_fail(message: String) -> Self {
        Self::bare(PrecheckStatus::WillFail, Some(message))
    }

    /// The row form for the inbox list: everything but the diff and the content.
    pub fn summary(mut self) -> Self {
        self.diff = None;
        self.content = None;
        self
    }
}

/// Prechecks `arguments` (the call's, or a person's edit of them) of `approval` with
/// `segment`'s tools. `None` when the tool reports no target.
pub(crate) async fn precheck_call(
    segment: &Segment,
    approval: &ApprovalRecord,
    arguments: &Value,
    context: &ToolContext,
) -> Option<Precheck> {
    let Some(tool) = segment.registry.get(&approval.tool) else {
        // Approving could only end "not run": say so on the card.
        return Some(Precheck::will_fail(format!(
            "the tool `{}` is not available any more (was its MCP server removed from the \
             config?); approving cannot run it",
            approval.tool
        )));
    };
    let tool = tool.as_ref();
    let (state, preview) = consistent_read(tool, arguments, context).await?;
    // A command has no target that could change under the person's feet: nothing to
    // check, unless it is certain to fail (its working folder is not there).
    if let Some(preview) = preview.as_ref().filter(|preview| preview.command.is_some()) {
        return preview.will_fail.clone().map(Precheck::will_fail);
    }
    // Compared with the fingerprint the card first showed, when the checked arguments
    // still designate the same target (an edit pointing elsewhere has nothing to compare).
    let changed = match approval.fingerprint.as_deref() {
        None => false,
        Some(shown) if arguments == &approval.arguments => shown != state.fingerprint,
        Some(shown) => {
            same_target(tool, approval, &state, context).await && shown != state.fingerprint
        }
    };
    let status = if changed {
        PrecheckStatus::Changed
    } else {
        PrecheckStatus::Ready
    };
    let mut precheck = Precheck {
        fingerprint: Some(state.fingerprint),
        ..Precheck::bare(status, None)
    };
    let Some(preview) = preview else {
        precheck.message = Some("what the call would change cannot be described now".into());
        return Some(precheck);
    };
    if let Some(why) = preview.will_fail {
        precheck.status = PrecheckStatus::WillFail;
        precheck.message = Some(why);
    } else if preview.no_change {
        precheck.status = PrecheckStatus::NoChange;
        precheck.message = Some(
            preview
                .notice
                .unwrap_or_else(|| "applying it would leave the target as it is".into()),
        );
    } else {
        precheck.message = preview.notice;
    }
    precheck.diff = preview.diff;
    precheck.content = preview.content;
    precheck.label = Some(preview.label);
    precheck.scope = preview.scope;
    precheck.added = preview.added;
    precheck.removed = preview.removed;
    Some(precheck)
}

/// The target's state and a preview taken from the same read: a preview fingerprints
/// its target before reading it, so when the state read after the preview has the same
/// fingerprint, nothing changed in between. Read again (up to [`READS`] times) when it
/// did; after that, the preview's own fingerprint stands (a decision against it is then
/// refused as changed, which is the truth).
async fn consistent_read(
    tool: &dyn Tool,
    arguments: &Value,
    context: &ToolContext,
) -> Option<(pp_types::TargetState, Option<EffectPreview>)> {
    let mut last = None;
    for _ in 0..READS {
        let preview = tool.preview(context, arguments).await;
        let mut state = tool.target_state(context, arguments).await?;
        match &preview {
            Some(preview) if preview.fingerprint != state.fingerprint => {
                state.fingerprint.clone_from(&preview.fingerprint);
                last = Some((state, Some(preview.clone())));
            }
            _ => return Some((state, preview)),
        }
    }
    last
}

impl TaskService {
    /// The precheck of pending approval `id` (or of `edited` arguments for it): `None`
    /// when it is not pending or its tool reports no target; `unavailable` when this
    /// process cannot open the task's workspace. Edited arguments are validated first
    /// ([`Error::InvalidArguments`]), like a resolve's.
    pub async fn precheck(
        &self,
        id: &ApprovalId,
        edited: Option<&Value>,
    ) -> Result<Option<Precheck>> {
        let shared = &self.inner.shared;
        let approval = shared.store.approval(id).await?;
        if approval.state != ApprovalState::Pending {
            if edited.is_some() {
                return Err(Error::AlreadyResolved {
                    id: id.to_string(),
                    state: approval.state,
                });
            }
            return Ok(None);
        }
        let task = shared.store.task(&approval.task_id).await?;
        let segment = match shared.workspace_root(&task) {
            Ok(root) => shared.segment(&root).await,
            Err(error) => Err(error),
        };
        let segment = match segment {
            Ok(segment) => segment,
            Err(Error::NotFound { .. }) if shared.settings.team.is_some() => {
                return Ok(Some(Precheck::unavailable(
                    self.runs_elsewhere(&task).await,
                )));
            }
            Err(error) => return Ok(Some(Precheck::unavailable(unavailable(&error)))),
        };
        let context = ToolContext::for_task(task.id.as_str(), None).with_actor(task.created_by);
        let segment = match edited {
            Some(edited) => {
                let (segment, verdict) = validate_edit(segment, &approval, edited).await?;
                if let Err(Refusal::InvalidEdit(message)) = verdict {
                    return Err(Error::InvalidArguments(message));
                }
                segment
            }
            None => segment,
        };
        let arguments = edited.unwrap_or(&approval.arguments);
        Ok(precheck_call(&segment, &approval, arguments, &context).await)
    }

    /// The prechecks of `approvals`, pending ones only: one segment per workspace, not
    /// per card. `full`: with diffs and content (a changeset's cards); otherwise the
    /// list rows' summaries.
    pub(crate) async fn precheck_rows(
        &self,
        approvals: &[(ApprovalRecord, Option<pp_types::TaskRecord>)],
        full: bool,
    ) -> Vec<Option<Precheck>> {
        let shared = &self.inner.shared;
        let mut segments: HashMap<String, std::result::Result<Segment, String>> = HashMap::new();
        let mut elsewhere: HashMap<String, String> = HashMap::new();
        let mut rows = Vec::with_capacity(approvals.len());
        for (approval, task) in approvals {
            let Some(task) = task
                .as_ref()
                .filter(|_| approval.state == ApprovalState::Pending)
            else {
                rows.push(None);
                continue;
            };
            let root = match shared.workspace_root(task) {
                Ok(root) => root,
                Err(Error::NotFound { .. }) if shared.settings.team.is_some() => {
                    // One look at the worker registry per workspace, not per row.
                    let message = match elsewhere.get(&task.workspace) {
                        Some(message) => message.clone(),
                        None => {
                            let message = self.runs_elsewhere(task).await;
                            elsewhere.insert(task.workspace.clone(), message.clone());
                            message
                        }
                    };
                    rows.push(Some(Precheck::unavailable(message)));
                    continue;
                }
                Err(error) => {
                    rows.push(Some(Precheck::unavailable(unavailable(&error))));
                    continue;
                }
            };
            if !segments.contains_key(&root) {
                let built = shared
                    .segment(&root)
                    .await
                    .map_err(|error| unavailable(&error));
                segments.insert(root.clone(), built);
            }
            let row = match segments.get(&root) {
                Some(Ok(segment)) => {
                    let context =
                        ToolContext::for_task(task.id.as_str(), None).with_actor(task.created_by);
                    let precheck =
                        precheck_call(segment, approval, &approval.arguments, &context).await;
                    if full {
                        precheck
                    } else {
                        precheck.map(Precheck::summary)
                    }
                }
                Some(Err(message)) => Some(Precheck::unavailable(message.clone())),
                None => None,
            };
            rows.push(row);
        }
        rows
    }
}

impl TaskService {
    /// Why a card cannot be checked here in team mode: the workspace is on another
    /// host. Says where the call will be checked and run, and whether that worker is
    /// alive; a decision made here is recorded and carried out there.
    async fn runs_elsewhere(&self, task: &pp_types::TaskRecord) -> String {
        let name = &task.workspace;
        let hosts: Vec<String> = match self.live_workers().await {
            Ok(workers) => workers
                .into_iter()
                .filter(|worker| worker.workspaces.iter().any(|have| have == name))
                .map(|worker| worker.host)
                .collect(),
            Err(_) => Vec::new(),
        };
        if hosts.is_empty() {
            format!(
                "the workspace `{name}` is not on this server, and no live worker has it \
                 now: a decision made here is recorded, and the call is checked and run \
                 when a worker that has `{name}` starts"
            )
        } else {
            format!(
                "the workspace `{name}` is not on this server: a decision made here is \
                 recorded, and the call is checked right before it runs by a live worker \
                 that has it ({})",
                hosts.join(", ")
            )
        }
    }
}

/// Why a precheck is unavailable, for the card.
fn unavailable(error: &Error) -> String {
    format!("the target cannot be checked from this process: {error}")
}
