//! Everything an approval card shows.

use std::collections::HashMap;

use pp_types::{
    Actor, ApprovalRecord, ApprovalState, EffectScope, Risk, TaskId, TaskRecord, Timestamp, Via,
    WriteLabel,
};
use serde::Serialize;
use serde_json::Value;

use crate::changelog::{ChangeLog, MayHaveRun, Outcome, may_have_run, outcome_of};
use crate::error::Result;
use crate::precheck::{Precheck, PrecheckStatus};
use crate::provenance::Provenance;
use crate::service::TaskService;

/// Deprecated: a pending card's target checked again, as `precheck` says it now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CurrentTarget {
    /// Whether the precheck's status is `changed`.
    pub changed: bool,
    /// When `changed`: the precheck's diff.
    pub diff: Option<String>,
}

impl CurrentTarget {
    /// The deprecated `current` field of a card whose precheck is `precheck`.
    pub(crate) fn of(precheck: &Precheck) -> Self {
        let changed = precheck.status == PrecheckStatus::Changed;
        Self {
            changed,
            diff: if changed { precheck.diff.clone() } else { None },
        }
    }
}

/// The call an approval with edited arguments ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EditedCall {
    /// The arguments that ran (they replaced the model's entirely).
    pub arguments: Value,
    /// Who edited and approved it: the team user, or the actor (`operator`, …).
    pub by: Option<String>,
    /// Its effect as described at the decision: target, label, diff or content, line
    /// counts; `null` for a tool that describes none (and on rows decided before this
    /// was recorded).
    pub preview: Option<pp_types::EffectPreview>,
}

/// An approval as the inbox and the CLI show it (without the full checkpoint).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalView {
    /// The approval's id.
    pub id: String,
    /// The task it belongs to.
    pub task_id: TaskId,
    /// The changeset it belongs to: the approval-needing calls of one model turn,
    /// decided together (`GET /api/changesets/{id}`); absent on approvals requested
    /// before changesets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changeset_id: Option<String>,
    /// The task's prompt.
    pub prompt: String,
    /// Who started the task (`operator`, `scheduler`, `webhook`, `mcp_client`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by: Option<Actor>,
    /// Which schedule, webhook channel or MCP client started it (the task's `origin`),
    /// shown on the card so a person knows where an unattended request came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// Pending, approved, rejected, stale or cancelled.
    pub state: ApprovalState,
    /// The tool.
    pub tool: String,
    /// Its capability.
    pub capability: String,
    /// Its risk (the inbox highlights `high`).
    pub risk: Risk,
    /// Create or overwrite.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<WriteLabel>,
    /// The target path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The workspace-relative path the target designates once `..` and links inside the
    /// workspace are resolved (from the preview), shown next to the target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    /// The arguments as the model wrote them.
    pub arguments: Value,
    /// A unified diff for overwrites and edits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// The new content for creates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Why part of the preview cannot be shown (e.g. the current content is unreadable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// New file, edit, or whole-file replacement, as the tool's preview said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<EffectScope>,
    /// Lines the call adds, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added: Option<u32>,
    /// Lines the call removes, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed: Option<u32>,
    /// `move_file`: the destination as the model wrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// `move_file`: the destination, workspace-relative with links resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination_resolved: Option<String>,
    /// `move_file` with `overwrite: true`: the existing file the move replaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// Bytes of the file deleted, or replaced by an overwriting move.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// `run_command`: the exact argv, working directory and sandbox limits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<pp_types::CommandPreview>,
    /// A call to an MCP server's tool: the server, the tool and the resolved action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp: Option<pp_types::McpCallPreview>,
    /// The target checked at read time ([`Precheck`]): on a pending card read with
    /// [`TaskService::approval_view_checked`] (with the diff) or in the rows of
    /// [`TaskService::approval_views_checked`] (without); `null` for a tool that reports no
    /// target, and on decided cards.
    pub precheck: Option<Precheck>,
    /// Deprecated (one release): derived from `precheck` — `changed` is
    /// `precheck.status == "changed"`, with its diff.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current: Option<CurrentTarget>,
    /// When it was requested.
    pub created_at: Timestamp,
    /// When it was resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<Timestamp>,
    /// Who resolved it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_by: Option<Actor>,
    /// The team user who resolved it (team mode), or the person a remote decision came
    /// from (`telegram:…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_by_user: Option<String>,
    /// Where the person decided: `console`, `api`, `cli`, `link` or `telegram`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_via: Option<Via>,
    /// The reason (rejections, stale approvals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Arguments it was approved with, if edited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edited_arguments: Option<Value>,
    /// Approved with edited arguments: the call that ran — its arguments, its effect as
    /// described at the decision, and who edited it. The card shows this, not the call
    /// the model asked for (`arguments`, `diff`, … above).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edited: Option<EditedCall>,
    /// Whether the change can be undone (`false`: what it replaces is over `[revert]
    /// max_bytes`); absent for tools without a file effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revertible: Option<bool>,
    /// What really happened to the call; absent while pending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// Why the call is asked for: the model's text of that turn and what the task took
    /// in since the person's last message ([`Provenance::of`]); on every card.
    pub provenance: Provenance,
    /// Set when this approval asks again, after a retry, a call that started and has no
    /// recorded result (the process stopped in between): "this call may already have
    /// run", with each target before that call and now. `null` otherwise.
    pub may_have_run: Option<MayHaveRun>,
}

/// An approval as a row of the inbox list (`GET /api/approvals`): what a person needs to
/// triage it — origin, tool, target, precheck status, age, outcome — without the call's
/// arguments, diff, content or provenance, which the card (`GET /api/approvals/{id}`)
/// carries. Two pending writes of a few hundred kilobytes make a list of a few hundred
/// bytes, not of their content twice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalRow {
    /// The approval's id.
    pub id: String,
    /// The task it belongs to.
    pub task_id: TaskId,
    /// The changeset it belongs to, as on the card.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changeset_id: Option<String>,
    /// The task's prompt (shown quoted, cut, when untrusted).
    pub prompt: String,
    /// Who started the task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_by: Option<Actor>,
    /// Which schedule, webhook channel or MCP client started it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// Pending, approved, rejected, stale or cancelled.
    pub state: ApprovalState,
    /// The tool.
    pub tool: String,
    /// Its capability.
    pub capability: String,
    /// Its risk.
    pub risk: Risk,
    /// Create, overwrite, move, …
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<WriteLabel>,
    /// The target path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// `move_file`: the destination as the model wrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// New file, edit, or whole-file replacement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<EffectScope>,
    /// Lines the call adds, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added: Option<u32>,
    /// Lines the call removes, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed: Option<u32>,
    /// The precheck's summary (no diff, no content) while pending; `null` for a tool
    /// that reports no target, and once decided.
    pub precheck: Option<Precheck>,
    /// Whether the call follows untrusted input (the card's provenance says which).
    pub untrusted_input: bool,
    /// Whether it was approved with edited arguments.
    pub edited: bool,
    /// Whether the change can be undone, as on the card.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revertible: Option<bool>,
    /// When it was requested.
    pub created_at: Timestamp,
    /// When it was resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<Timestamp>,
    /// Who resolved it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_by: Option<Actor>,
    /// The team user who resolved it (team mode), or the person a remote decision came
    /// from (`telegram:…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_by_user: Option<String>,
    /// Where the person decided: `console`, `api`, `cli`, `link` or `telegram`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_via: Option<Via>,
    /// The reason (rejections, stale approvals).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What really happened to the call; absent while pending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// Whether this approval asks again a call that may already have run (the card's
    /// `may_have_run` says what to compare).
    pub may_have_run: bool,
}

impl From<ApprovalView> for ApprovalRow {
    fn from(view: ApprovalView) -> Self {
        Self {
            id: view.id,
            task_id: view.task_id,
            changeset_id: view.changeset_id,
            prompt: view.prompt,
            created_by: view.created_by,
            origin: view.origin,
            state: view.state,
            tool: view.tool,
            capability: view.capability,
            risk: view.risk,
            label: view.label,
            target: view.target,
            destination: view.destination,
            scope: view.scope,
            added: view.added,
            removed: view.removed,
            precheck: view.precheck.map(Precheck::summary),
            untrusted_input: view.provenance.untrusted_input,
            edited: view.edited.is_some(),
            revertible: view.revertible,
            created_at: view.created_at,
            resolved_at: view.resolved_at,
            resolved_by: view.resolved_by,
            resolved_by_user: view.resolved_by_user,
            resolved_via: view.resolved_via,
            reason: view.reason,
            outcome: view.outcome,
            may_have_run: view.may_have_run.is_some(),
        }
    }
}

impl ApprovalView {
    /// Builds the view of `approval` for a task with `prompt`.
    pub fn new(approval: ApprovalRecord, prompt: String) -> Self {
        let preview = approval.call().preview.clone();
        let edited = approval
            .edited_arguments
            .as_ref()
            .map(|arguments| EditedCall {
                arguments: arguments.clone(),
                by: approval
                    .resolved_by_user
                    .clone()
                    .or_else(|| approval.resolved_by.map(|actor| actor.as_str().to_owned())),
                preview: approval.edited_preview.clone(),
            });
        Self {
            id: approval.id.to_string(),
            task_id: approval.task_id,
            changeset_id: approval.changeset_id.clone(),
            prompt,
            created_by: None,
            origin: None,
            state: approval.state,
            tool: approval.tool,
            capability: approval.capability,
            risk: approval.risk,
            label: approval.label,
            target: approval.target,
            resolved: preview
                .as_ref()
                .and_then(|preview| preview.resolved.clone()),
            arguments: approval.arguments,
            diff: preview.as_ref().and_then(|preview| preview.diff.clone()),
            content: preview.as_ref().and_then(|preview| preview.content.clone()),
            scope: preview.as_ref().and_then(|preview| preview.scope),
            added: preview.as_ref().and_then(|preview| preview.added),
            removed: preview.as_ref().and_then(|preview| preview.removed),
            destination: preview
                .as_ref()
                .and_then(|preview| preview.destination.clone()),
            destination_resolved: preview
                .as_ref()
                .and_then(|preview| preview.destination_resolved.clone()),
            replaces: preview
                .as_ref()
                .and_then(|preview| preview.replaces.clone()),
            size: preview.as_ref().and_then(|preview| preview.size),
            command: preview.as_ref().and_then(|preview| preview.command.clone()),
            mcp: preview.as_ref().and_then(|preview| preview.mcp.clone()),
            precheck: None,
            current: None,
            notice: preview.and_then(|preview| preview.notice),
            created_at: approval.created_at,
            resolved_at: approval.resolved_at,
            resolved_by: approval.resolved_by,
            resolved_by_user: approval.resolved_by_user,
            resolved_via: approval.resolved_via,
            reason: approval.reason,
            edited,
            edited_arguments: approval.edited_arguments,
            revertible: approval.revertible,
            outcome: None,
            // Without the task: who wrote the prompt is unknown ([`view_of`] knows).
            provenance: Provenance::of(&approval.checkpoint.messages, &approval.call_id, None),
            may_have_run: None,
        }
    }
}

impl TaskService {
    /// One approval as a card shows it, with its target checked now
    /// ([`ApprovalView::precheck`]) while it is pending.
    pub async fn approval_view_checked(&self, id: &pp_types::ApprovalId) -> Result<ApprovalView> {
        let mut view = self.approval_view(id).await?;
        if view.state == pp_types::ApprovalState::Pending {
            view.precheck = self.precheck(id, None).await?;
            view.current = view.precheck.as_ref().map(CurrentTarget::of);
        }
        Ok(view)
    }

    /// Like [`TaskService::approval_views`], each pending row with its precheck's status
    /// (no diff), computed with one segment per workspace.
    pub async fn approval_views_checked(
        &self,
        state: Option<ApprovalState>,
        limit: usize,
    ) -> Result<Vec<ApprovalView>> {
        let (approvals, tasks) = self.approvals_with_tasks(state, limit).await?;
        let pairs: Vec<_> = approvals
            .into_iter()
            .map(|approval| {
                let task = tasks.get(&approval.task_id).cloned();
                (approval, task)
            })
            .collect();
        let prechecks = self.precheck_rows(&pairs, false).await;
        let log = self.changes();
        let mut views = Vec::with_capacity(pairs.len());
        for ((approval, task), precheck) in pairs.into_iter().zip(prechecks) {
            // The deprecated `current` stays a single card's, as before: a row's
            // precheck has no diff to derive it from.
            let mut view = view_of(&log, approval, task).await;
            view.precheck = precheck;
            views.push(view);
        }
        Ok(views)
    }

    /// One approval as a card shows it.
    pub async fn approval_view(&self, id: &pp_types::ApprovalId) -> Result<ApprovalView> {
        let approval = self.inner.store.approval(id).await?;
        // A task that cannot be read leaves its parts of the card empty.
        let task = self.inner.store.task(&approval.task_id).await.ok();
        Ok(view_of(&self.changes(), approval, task).await)
    }

    /// The approvals in `state` (pending by default), newest first, as cards show them.
    /// Their tasks are read in one query.
    pub async fn approval_views(
        &self,
        state: Option<ApprovalState>,
        limit: usize,
    ) -> Result<Vec<ApprovalView>> {
        let (approvals, tasks) = self.approvals_with_tasks(state, limit).await?;
        let log = self.changes();
        // One card after the other: each reads its outcome (a few store calls).
        let mut views = Vec::with_capacity(approvals.len());
        for approval in approvals {
            let task = tasks.get(&approval.task_id).cloned();
            views.push(view_of(&log, approval, task).await);
        }
        Ok(views)
    }
}

impl TaskService {
    /// The approvals in `state` (pending by default), newest first, and their tasks,
    /// read in one query.
    async fn approvals_with_tasks(
        &self,
        state: Option<ApprovalState>,
        limit: usize,
    ) -> Result<(Vec<ApprovalRecord>, HashMap<TaskId, TaskRecord>)> {
        let state = state.unwrap_or(ApprovalState::Pending);
        let store = &self.inner.store;
        let approvals = store.list_approvals(Some(state), limit).await?;
        let mut ids: Vec<TaskId> = approvals.iter().map(|a| a.task_id.clone()).collect();
        ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        ids.dedup();
        // A failed read leaves the tasks' parts of the cards empty, as for one card.
        let tasks = store
            .tasks_by_ids(&ids)
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|task| (task.id.clone(), task))
            .collect();
        Ok((approvals, tasks))
    }
}

/// The card of `approval`: its task's prompt and origin (`task`, read before), and its
/// outcome. A store read that fails leaves those parts empty rather than failing the card.
pub(crate) async fn view_of(
    log: &ChangeLog,
    approval: ApprovalRecord,
    task: Option<TaskRecord>,
) -> ApprovalView {
    let outcome = outcome_of(log, &approval, task.as_ref()).await;
    let may_have_run = may_have_run(log, &approval, task.as_ref()).await;
    let provenance = Provenance::of(
        &approval.checkpoint.messages,
        &approval.call_id,
        task.as_ref(),
    );
    let (prompt, created_by, origin) = match task {
        Some(task) => (task.prompt, Some(task.created_by), task.origin),
        None => (String::new(), None, None),
    };
    ApprovalView {
        outcome,
        may_have_run,
        provenance,
        created_by,
        origin,
        ..ApprovalView::new(approval, prompt)
    }
}
