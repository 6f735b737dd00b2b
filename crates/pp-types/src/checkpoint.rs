//! Checkpoints: everything needed to continue a task after a person decides.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{EffectPreview, Event, Message, Risk, ToolCall, Usage};

/// The current checkpoint format; stored checkpoints carry it so old rows can be read.
///
/// - Version 1: one pending call; the turn's calls after it (`later_calls`) are
///   answered "not run" on resume.
/// - Version 2: a changeset — [`Checkpoint::pending`] and [`Checkpoint::more_pending`]
///   each wait for a decision; `later_calls` are the turn's calls after `pending` that
///   are still to be run or answered on resume, in the model's order (the
///   `more_pending` calls included).
///
/// A build reads every version from [`OLDEST_CHECKPOINT_VERSION`] to this one.
pub const CHECKPOINT_VERSION: u32 = 2;

/// The oldest checkpoint format this build still resumes.
pub const OLDEST_CHECKPOINT_VERSION: u32 = 1;

/// A suspended task: the calls waiting for approval and the whole conversation so far.
///
/// Nothing in a checkpoint has touched the disk yet. Resuming rebuilds the jail and the
/// policy from scratch; the checkpoint carries data only.
///
/// In JSON (version 2; `more_pending` and `last_usage` are left out when empty):
///
/// ```text
/// {"version": 2,
///  "pending": {"call": {"id", "name", "arguments"}, "arguments", "capability", "risk", "preview"?},
///  "more_pending": [PendingCall, …],
///  "later_calls": [{"id", "name", "arguments"}, …],
///  "messages": […], "step": 0, "denials": 0, "tokens_used": 0, "last_usage"?: {…},
///  "events": […]}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Format version ([`CHECKPOINT_VERSION`] when written by this build).
    pub version: u32,
    /// The first call of the turn waiting for a decision.
    pub pending: PendingCall,
    /// The turn's other calls waiting for a decision, in the model's order (version 2;
    /// empty in version 1 and when one call waits). Together with `pending` they are the
    /// turn's changeset: every one needs its own decision before the task goes on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more_pending: Vec<PendingCall>,
    /// The turn's calls after `pending`, in the model's order, that are still to be run
    /// or answered on resume.
    ///
    /// Version 2: the `more_pending` calls (so their place in the order is known) and
    /// the calls the policy allows, which run after the decisions; calls the policy
    /// denied or that could not be run were answered before the suspension and are not
    /// here. Version 1: every call after `pending`; each is answered "not run".
    pub later_calls: Vec<ToolCall>,
    /// The full message list, ending with the assistant turn that holds the pending
    /// calls and the answers given so far to the turn's other calls.
    pub messages: Vec<Message>,
    /// The step the pending calls belong to; the loop continues at `step + 1`.
    pub step: u32,
    /// Denials so far (the denial cap spans resumes).
    pub denials: u32,
    /// Tokens used so far (the token budget spans resumes).
    pub tokens_used: u64,
    /// The usage the last model call reported: the budget check's estimate of the next
    /// call starts from it (absent in checkpoints written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_usage: Option<Usage>,
    /// Events of the segment that produced this checkpoint.
    pub events: Vec<Event>,
}

impl Checkpoint {
    /// Every call waiting for a decision, in the model's order: `pending`, then
    /// `more_pending`.
    pub fn pending_calls(&self) -> impl Iterator<Item = &PendingCall> {
        std::iter::once(&self.pending).chain(&self.more_pending)
    }

    /// The ids of [`Checkpoint::pending_calls`], in the model's order.
    pub fn pending_ids(&self) -> Vec<&str> {
        self.pending_calls()
            .map(|pending| pending.call.id.as_str())
            .collect()
    }

    /// The pending call with id `call_id`, if there is one.
    pub fn pending_call(&self, call_id: &str) -> Option<&PendingCall> {
        self.pending_calls()
            .find(|pending| pending.call.id == call_id)
    }
}

/// A call a person must approve or reject.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    /// The call as the model wrote it.
    pub call: ToolCall,
    /// The parsed, schema-valid arguments.
    pub arguments: Value,
    /// The tool's capability string.
    pub capability: String,
    /// The tool's risk, from its spec.
    pub risk: Risk,
    /// Label, diff and fingerprint, when the tool can describe its effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<EffectPreview>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pending(id: &str) -> PendingCall {
        PendingCall {
            call: ToolCall {
                id: id.into(),
                name: "write_file".into(),
                arguments: "{}".into(),
            },
            arguments: json!({}),
            capability: "file:write".into(),
            risk: Risk::High,
            preview: None,
        }
    }

    fn checkpoint(more: Vec<PendingCall>) -> Checkpoint {
        Checkpoint {
            version: CHECKPOINT_VERSION,
            pending: pending("a"),
            later_calls: more.iter().map(|p| p.call.clone()).collect(),
            more_pending: more,
            messages: vec![Message::user("hi")],
            step: 3,
            denials: 1,
            tokens_used: 40,
            last_usage: None,
            events: Vec::new(),
        }
    }

    #[test]
    fn a_version_1_checkpoint_reads_with_no_more_pending() {
        let v1 = json!({
            "version": 1,
            "pending": {
                "call": {"id": "a", "name": "write_file", "arguments": "{}"},
                "arguments": {}, "capability": "file:write", "risk": "high"
            },
            "later_calls": [{"id": "b", "name": "read_file", "arguments": "{}"}],
            "messages": [{"role": "user", "content": "hi"}],
            "step": 3, "denials": 1, "tokens_used": 40, "events": []
        });
        let read: Checkpoint = serde_json::from_value(v1).unwrap();
        assert_eq!(read.version, 1);
        assert!(read.more_pending.is_empty());
        assert_eq!(read.pending_ids(), ["a"]);
        assert_eq!(read.later_calls[0].id, "b");
    }

    #[test]
    fn more_pending_is_written_only_when_there_is_some_and_round_trips() {
        let single = serde_json::to_value(checkpoint(Vec::new())).unwrap();
        assert_eq!(single["version"], 2);
        assert!(single.get("more_pending").is_none(), "{single}");
        let set = checkpoint(vec![pending("b"), pending("c")]);
        let value = serde_json::to_value(&set).unwrap();
        assert_eq!(value["more_pending"][1]["call"]["id"], "c");
        assert_eq!(serde_json::from_value::<Checkpoint>(value).unwrap(), set);
        assert_eq!(set.pending_ids(), ["a", "b", "c"]);
        assert_eq!(set.pending_call("b").map(|p| p.call.id.as_str()), Some("b"));
        assert!(set.pending_call("z").is_none());
    }
}
