//! The records both backends read the same way: tasks, approvals, events and audit
//! rows (their column lists, which differ in SQL dialect only, stay with each backend;
//! the order of the columns is the order of the fields here).

use pp_types::{
    ApprovalId, ApprovalRecord, ApprovalState, AuditEntry, Cost, Event, StoredEvent, TaskId,
    TaskRecord, TaskUsage, Timestamp,
};
use serde_json::Value;

use super::columns::{Columns, Decoder, FromColumns};
use crate::error::{Error, Result};

/// A `tasks` row before decoding.
pub(crate) struct RawTask {
    id: String,
    prompt: String,
    workspace: String,
    workspace_path: String,
    state: String,
    created_by: String,
    script: Option<String>,
    script_position: i64,
    running_ms: i64,
    final_text: Option<String>,
    failure_reason: Option<String>,
    error: Option<String>,
    created_at: i64,
    updated_at: i64,
    finished_at: Option<i64>,
    origin: Option<String>,
    /// The kinds of the task's changes, comma-separated (`NULL`: none).
    change_kinds: Option<String>,
    /// The task's model calls summed up (see [`task_usage`]).
    usage: Option<String>,
    created_by_user: Option<String>,
}

impl FromColumns for RawTask {
    fn read<C: Columns>(columns: &mut C) -> std::result::Result<Self, C::Error> {
        Ok(Self {
            id: columns.text()?,
            prompt: columns.text()?,
            workspace: columns.text()?,
            workspace_path: columns.text()?,
            state: columns.text()?,
            created_by: columns.text()?,
            script: columns.text_opt()?,
            script_position: columns.int()?,
            running_ms: columns.int()?,
            final_text: columns.text_opt()?,
            failure_reason: columns.text_opt()?,
            error: columns.text_opt()?,
            created_at: columns.int()?,
            updated_at: columns.int()?,
            finished_at: columns.int_opt()?,
            origin: columns.text_opt()?,
            change_kinds: columns.text_opt()?,
            usage: columns.text_opt()?,
            created_by_user: columns.text_opt()?,
        })
    }
}

impl RawTask {
    /// Decodes the row.
    pub(crate) fn decode(self) -> Result<TaskRecord> {
        let decoder = Decoder {
            table: "tasks",
            id: &self.id,
        };
        let state = decoder.name("state", self.state)?;
        let created_by = decoder.name("created_by", self.created_by)?;
        let script = decoder.json_opt("script", self.script.as_deref())?;
        let script_position = decoder.count("script_position", self.script_position)?;
        let running_ms = decoder.count("running_ms", self.running_ms)?;
        let failure_reason = decoder.name_opt("failure_reason", self.failure_reason)?;
        Ok(TaskRecord {
            id: TaskId(self.id),
            prompt: self.prompt,
            workspace: self.workspace,
            workspace_path: self.workspace_path,
            state,
            created_by,
            origin: self.origin,
            created_by_user: self.created_by_user,
            script,
            script_position,
            running_ms,
            final_text: self.final_text,
            failure_reason,
            error: self.error,
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
            finished_at: self.finished_at.map(Timestamp::from_millis),
            changes: change_counts(self.change_kinds.as_deref()),
            usage: task_usage(self.usage.as_deref()),
        })
    }
}

/// Counts the comma-separated change kinds of `TASK_COLUMNS`' last column (an
/// unknown kind, which the schema's CHECK rules out, is not counted).
fn change_counts(kinds: Option<&str>) -> pp_types::ChangeCounts {
    let mut counts = pp_types::ChangeCounts::default();
    for kind in kinds.unwrap_or_default().split(',') {
        if let Some(kind) = pp_types::ChangeKind::parse(kind) {
            counts.add(kind);
        }
    }
    counts
}

/// An `approvals` row before decoding.
pub(crate) struct RawApproval {
    id: String,
    task_id: String,
    state: String,
    tool: String,
    capability: String,
    risk: String,
    label: Option<String>,
    target: Option<String>,
    arguments: String,
    fingerprint: Option<String>,
    checkpoint: String,
    created_at: i64,
    resolved_at: Option<i64>,
    resolved_by: Option<String>,
    reason: Option<String>,
    edited_arguments: Option<String>,
    revertible: Option<bool>,
    resolved_by_user: Option<String>,
    edited_preview: Option<String>,
    call_id: Option<String>,
    changeset_id: Option<String>,
    resolved_via: Option<String>,
}

impl FromColumns for RawApproval {
    fn read<C: Columns>(columns: &mut C) -> std::result::Result<Self, C::Error> {
        Ok(Self {
            id: columns.text()?,
            task_id: columns.text()?,
            state: columns.text()?,
            tool: columns.text()?,
            capability: columns.text()?,
            risk: columns.text()?,
            label: columns.text_opt()?,
            target: columns.text_opt()?,
            arguments: columns.text()?,
            fingerprint: columns.text_opt()?,
            checkpoint: columns.text()?,
            created_at: columns.int()?,
            resolved_at: columns.int_opt()?,
            resolved_by: columns.text_opt()?,
            reason: columns.text_opt()?,
            edited_arguments: columns.text_opt()?,
            revertible: columns.flag_opt()?,
            resolved_by_user: columns.text_opt()?,
            edited_preview: columns.text_opt()?,
            call_id: columns.text_opt()?,
            changeset_id: columns.text_opt()?,
            resolved_via: columns.text_opt()?,
        })
    }
}

impl RawApproval {
    /// Decodes the row.
    pub(crate) fn decode(self) -> Result<ApprovalRecord> {
        let decoder = Decoder {
            table: "approvals",
            id: &self.id,
        };
        let state = decoder.name("state", self.state)?;
        let risk = decoder.name("risk", self.risk)?;
        let label = decoder.name_opt("label", self.label)?;
        let arguments = decoder.json("arguments", &self.arguments)?;
        let checkpoint: pp_types::Checkpoint = decoder.json("checkpoint", &self.checkpoint)?;
        // Rows stored before changesets decide the checkpoint's `pending` call.
        let call_id = self
            .call_id
            .unwrap_or_else(|| checkpoint.pending.call.id.clone());
        let resolved_by = decoder.name_opt("resolved_by", self.resolved_by)?;
        let edited_arguments =
            decoder.json_opt("edited_arguments", self.edited_arguments.as_deref())?;
        let edited_preview = decoder.json_opt("edited_preview", self.edited_preview.as_deref())?;
        let resolved_via = decoder.name_opt("resolved_via", self.resolved_via)?;
        Ok(ApprovalRecord {
            id: ApprovalId(self.id),
            task_id: TaskId(self.task_id),
            state,
            tool: self.tool,
            capability: self.capability,
            risk,
            label,
            target: self.target,
            arguments,
            fingerprint: self.fingerprint,
            checkpoint,
            call_id,
            changeset_id: self.changeset_id,
            created_at: Timestamp::from_millis(self.created_at),
            resolved_at: self.resolved_at.map(Timestamp::from_millis),
            resolved_by,
            resolved_by_user: self.resolved_by_user,
            resolved_via,
            reason: self.reason,
            edited_arguments,
            edited_preview,
            revertible: self.revertible,
        })
    }
}

/// An `events` row before decoding.
pub(crate) struct RawEvent {
    seq: i64,
    task_id: String,
    at: i64,
    payload: String,
}

impl FromColumns for RawEvent {
    fn read<C: Columns>(columns: &mut C) -> std::result::Result<Self, C::Error> {
        Ok(Self {
            seq: columns.int()?,
            task_id: columns.text()?,
            at: columns.int()?,
            payload: columns.text()?,
        })
    }
}

impl RawEvent {
    /// Decodes the row.
    pub(crate) fn decode(self) -> Result<StoredEvent> {
        let id = self.seq.to_string();
        let decoder = Decoder {
            table: "events",
            id: &id,
        };
        let event: Event = decoder.json("payload", &self.payload)?;
        Ok(StoredEvent {
            seq: self.seq,
            task_id: TaskId(self.task_id),
            at: Timestamp::from_millis(self.at),
            event,
        })
    }
}

/// An `audit` row before decoding.
pub(crate) struct RawAudit {
    id: i64,
    at: i64,
    actor: String,
    action: String,
    task_id: Option<String>,
    approval_id: Option<String>,
    tool: Option<String>,
    target: Option<String>,
    arguments_hash: Option<String>,
    detail: Option<String>,
    user: Option<String>,
    via: Option<String>,
}

impl FromColumns for RawAudit {
    fn read<C: Columns>(columns: &mut C) -> std::result::Result<Self, C::Error> {
        Ok(Self {
            id: columns.int()?,
            at: columns.int()?,
            actor: columns.text()?,
            action: columns.text()?,
            task_id: columns.text_opt()?,
            approval_id: columns.text_opt()?,
            tool: columns.text_opt()?,
            target: columns.text_opt()?,
            arguments_hash: columns.text_opt()?,
            detail: columns.text_opt()?,
            user: columns.text_opt()?,
            via: columns.text_opt()?,
        })
    }
}

impl RawAudit {
    /// Decodes the row.
    pub(crate) fn decode(self) -> Result<AuditEntry> {
        let id = self.id.to_string();
        let decoder = Decoder {
            table: "audit",
            id: &id,
        };
        Ok(AuditEntry {
            id: self.id,
            at: Timestamp::from_millis(self.at),
            actor: decoder.name("actor", self.actor)?,
            action: decoder.name("action", self.action)?,
            task_id: self.task_id.map(TaskId),
            approval_id: self.approval_id.map(ApprovalId),
            tool: self.tool,
            target: self.target,
            arguments_hash: self.arguments_hash,
            detail: self.detail,
            user: self.user,
            via: decoder.name_opt("via", self.via)?,
        })
    }
}

/// Decodes the last column of the task columns, the task's model calls summed
/// into one JSON array:
/// `[calls, prompt, completion, cached, reasoning, priced calls, cost, min currency,
/// max currency]`. A cost is given only when every call had a price in one currency.
fn task_usage(text: Option<&str>) -> TaskUsage {
    let Some(values) = text.and_then(|text| serde_json::from_str::<Vec<Value>>(text).ok()) else {
        return TaskUsage::default();
    };
    let count = |index: usize| values.get(index).and_then(Value::as_u64).unwrap_or(0);
    let text = |index: usize| values.get(index).and_then(Value::as_str);
    let (calls, prompt, completion) = (count(0), count(1), count(2));
    let cost = match (text(7), text(8)) {
        (Some(low), Some(high)) if calls > 0 && count(5) == calls && low == high => {
            values.get(6).and_then(Value::as_f64).map(|amount| Cost {
                amount,
                currency: low.to_owned(),
            })
        }
        _ => None,
    };
    TaskUsage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        cached_tokens: count(3),
        reasoning_tokens: count(4),
        total_tokens: prompt.saturating_add(completion),
        model_calls: calls,
        cost,
    }
}

/// The `state` column of the approval `id`, read on its own.
pub(crate) fn approval_state(id: &ApprovalId, state: &str) -> Result<ApprovalState> {
    ApprovalState::parse(state).ok_or_else(|| Error::Corrupt {
        table: "approvals",
        column: "state",
        id: id.to_string(),
        source: serde::de::Error::custom(format!("unknown approval state `{state}`")),
    })
}
