//! Events: everything that happened in a task, in order.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Denial, DenyRule, EffectPreview, Risk, ToolCall, Usage};

/// One thing that happened during a task, at a step of the agent loop.
///
/// A step is one model call plus the tool calls it asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The step this happened in (0-based).
    pub step: u32,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

impl Event {
    /// The event type name as it appears on the wire (`tool_denied`, …).
    pub fn type_name(&self) -> &'static str {
        self.kind.type_name()
    }
}

crate::wire_enum! {
    /// The event types; the `type` field on the wire ([`EventType`] names them).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(tag = "type")]
    pub enum EventKind as EventType {
        /// The task started with this prompt.
        TaskStarted {
            /// The person's prompt.
            prompt: String,
        } => "task_started",
        /// A request was sent to the model.
        ModelRequest {
            /// Messages in the request.
            message_count: usize,
            /// Tools offered.
            tool_count: usize,
        } => "model_request",
        /// Older turns were left out of the request to fit the model's context window.
        ContextTrimmed {
            /// Messages left out of this request.
            dropped_messages: usize,
            /// Estimated tokens of what was sent.
            kept_tokens: u64,
            /// The window.
            window: u64,
        } => "context_trimmed",
        /// The model answered.
        AssistantMessage {
            /// Visible text.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            content: Option<String>,
            /// Tool calls requested.
            #[serde(default, skip_serializing_if = "Vec::is_empty")]
            tool_calls: Vec<ToolCall>,
            /// Tokens used by this model call, when the provider reports them.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            usage: Option<Usage>,
        } => "assistant_message",
        /// A tool call is about to be checked and, if allowed, run.
        ToolCall {
            /// The call id.
            call_id: String,
            /// The tool's name.
            name: String,
            /// The raw arguments text.
            arguments: String,
        } => "tool_call",
        /// A tool ran and succeeded.
        ToolResult {
            /// The call id.
            call_id: String,
            /// The tool's name.
            name: String,
            /// The output given to the model.
            content: String,
        } => "tool_result",
        /// A tool call failed in an ordinary way (unknown tool, bad arguments, missing file,
        /// rejected by the operator, not run).
        ToolError {
            /// The call id.
            call_id: String,
            /// The tool's name.
            name: String,
            /// The error given to the model.
            message: String,
        } => "tool_error",
        /// The gate refused a call.
        ToolDenied {
            /// The call id.
            call_id: String,
            /// The tool's name.
            name: String,
            /// The rule that fired.
            rule: DenyRule,
            /// The explanation given to the model.
            message: String,
            /// Denials so far in this task, this one included.
            denials: u32,
        } => "tool_denied",
        /// A call needs a person's approval; the task is suspended before any side effect.
        ApprovalRequired {
            /// The approval's id, filled in when the task service stores the approval (the
            /// approval row holds the checkpoint to resume from).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            approval_id: Option<String>,
            /// The changeset the approval belongs to (the turn's approval-needing calls,
            /// decided together), filled in with `approval_id`.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            changeset_id: Option<String>,
            /// The call id.
            call_id: String,
            /// The tool's name.
            name: String,
            /// The tool's capability.
            capability: String,
            /// The tool's risk.
            risk: Risk,
            /// The parsed arguments.
            arguments: Value,
            /// Create/overwrite label, diff and fingerprint, when the tool can describe them.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            preview: Option<Box<EffectPreview>>,
        } => "approval_required",
        /// A person decided.
        ApprovalResolved {
            /// The call id.
            call_id: String,
            /// Approved or rejected.
            decision: ResolutionKind,
            /// Whether the arguments were edited before approval.
            edited: bool,
            /// The operator's reason, for rejections.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            reason: Option<String>,
            /// An edited approval: the arguments that ran (they replaced the model's).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            arguments: Option<Value>,
            /// An edited approval: what the edited call changed, described right before it
            /// ran (its target, label and diff).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            preview: Option<Box<EffectPreview>>,
            /// An edited approval: who edited it (the team user, or the actor).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            edited_by: Option<String>,
        } => "approval_resolved",
        /// Edited arguments failed validation or the jail; the approval stays pending.
        ApprovalEditRejected {
            /// The call id.
            call_id: String,
            /// Why the edit was refused.
            message: String,
        } => "approval_edit_rejected",
        /// The model gave its final answer.
        TaskCompleted {
            /// The final answer text.
            #[serde(rename = "final")]
            final_text: String,
        } => "task_completed",
        /// The operator cancelled the task.
        TaskCancelled {
            /// Why, or who.
            message: String,
        } => "task_cancelled",
        /// The process running the task stopped; the task is never re-run blindly.
        TaskInterrupted {
            /// What happened.
            message: String,
        } => "task_interrupted",
        /// The operator retried an interrupted task.
        TaskRetried {
            /// How it continues (from the prompt, or by asking an approval again).
            message: String,
        } => "task_retried",
        /// A chat session's history passed 80 % of the context window, so its older turns
        /// were summarised by the model into one message (kept in the system prompt); the
        /// turns themselves stay in the store. Emitted on the task of the turn that needed it.
        SessionSummarised {
            /// The session.
            session_id: String,
            /// The summary now covers turns 1 to this one.
            through_turn: u32,
            /// Turns folded into the summary by this step.
            turns: u32,
            /// Estimated tokens of the conversation before.
            tokens_before: u64,
            /// Estimated tokens after (summary in the system prompt, newer turns in full).
            tokens_after: u64,
            /// What the summarising model call used, when the provider reported it (the call
            /// counts in the task's usage like the loop's own calls).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            usage: Option<Usage>,
        } => "session_summarised",
        /// The task ended without an answer.
        TaskFailed {
            /// Machine-readable reason.
            reason: FailureReason,
            /// Human-readable detail.
            message: String,
        } => "task_failed",
    }
}

impl EventKind {
    /// Every event type name, for validating eval expectations and docs.
    pub const TYPE_NAMES: [&'static str; EventType::ALL.len()] = EventType::NAMES;

    /// The `type` field of this event on the wire.
    pub fn type_name(&self) -> &'static str {
        self.tag().as_str()
    }

    /// The `approval_required` event for a pending call (its approval id is filled in
    /// when the approval is stored).
    pub fn approval_required(pending: &crate::PendingCall) -> Self {
        Self::ApprovalRequired {
            approval_id: None,
            changeset_id: None,
            call_id: pending.call.id.clone(),
            name: pending.call.name.clone(),
            capability: pending.capability.clone(),
            risk: pending.risk,
            arguments: pending.arguments.clone(),
            preview: pending.preview.clone().map(Box::new),
        }
    }

    /// A denial event for `denial` of call `call_id`.
    pub fn denied(call: &ToolCall, denial: &Denial, denials: u32) -> Self {
        Self::ToolDenied {
            call_id: call.id.clone(),
            name: call.name.clone(),
            rule: denial.rule,
            message: denial.message.clone(),
            denials,
        }
    }
}

crate::wire_enum! {
    /// How an approval was resolved.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum ResolutionKind {
        /// The call ran (with the original or edited arguments).
        Approved => "approved",
        /// The call did not run; the model was told.
        Rejected => "rejected",
        /// The target changed after the approval was requested; the call did not run and the
        /// model was told to look again.
        Stale => "stale",
    }
}

crate::wire_enum! {
    /// Why a task failed.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum FailureReason {
        /// The task reached its denial limit.
        PolicyViolation => "policy_violation",
        /// The task used all its steps.
        MaxSteps => "max_steps",
        /// The task used its token budget.
        TokenBudget => "token_budget",
        /// The model could not be reached or answered nonsense.
        ModelError => "model_error",
        /// The task used its running time (state `timed_out`).
        Timeout => "timeout",
        /// The service could not run the task (workspace missing, storage failure).
        Internal => "internal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialise_flat_with_a_type_tag() {
        let event = Event {
            step: 2,
            kind: EventKind::TaskCompleted {
                final_text: "done".into(),
            },
        };
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"step": 2, "type": "task_completed", "final": "done"})
        );
        let back: Event = serde_json::from_value(json).unwrap();
        assert_eq!(back, event);
    }

    #[test]
    fn type_names_list_every_variant() {
        let kind = EventKind::TaskStarted { prompt: "p".into() };
        assert!(EventKind::TYPE_NAMES.contains(&kind.type_name()));
        assert_eq!(EventKind::TYPE_NAMES.len(), 17);
    }
}
