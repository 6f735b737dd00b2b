//! Checkpoints: everything needed to continue a task after a person decides.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{EffectPreview, Event, Message, Risk, ToolCall, Usage};

/// The current checkpoint format; stored checkpoints carry it so old rows can be read.
pub const CHECKPOINT_VERSION: u32 = 1;

/// A suspended task: the call waiting for approval and the whole conversation so far.
///
/// Nothing in a checkpoint has touched the disk yet. Resuming rebuilds the jail and the
/// policy from scratch; the checkpoint carries data only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Format version ([`CHECKPOINT_VERSION`]).
    pub version: u32,
    /// The call waiting for a decision.
    pub pending: PendingCall,
    /// Calls the model asked for after the pending one in the same turn; each is
    /// answered "not run" on resume so every call is answered exactly once.
    pub later_calls: Vec<ToolCall>,
    /// The full message list, ending with the assistant turn that holds the pending call
    /// and the answers to the calls before it.
    pub messages: Vec<Message>,
    /// The step the pending call belongs to; the loop continues at `step + 1`.
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

/// The call a person must approve or reject.
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
