//! What a run of the loop ends with, and how a person resolves a suspended run.

use pp_types::{Checkpoint, Event, FailureReason, Message, TaskState};
use serde_json::Value;

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The model answered without asking for more tools.
    Completed {
        /// The final answer.
        final_text: String,
        /// The conversation, ending with the final answer.
        messages: Vec<Message>,
        /// Events of this run segment.
        events: Vec<Event>,
    },
    /// A call needs approval; nothing has touched the disk for it.
    Suspended(Box<Checkpoint>),
    /// The run ended without an answer.
    Failed {
        /// Machine-readable reason.
        reason: FailureReason,
        /// Human-readable detail.
        message: String,
        /// The conversation so far.
        messages: Vec<Message>,
        /// Events of this run segment.
        events: Vec<Event>,
    },
}

impl Outcome {
    /// The events of the run segment that produced this outcome.
    pub fn events(&self) -> &[Event] {
        match self {
            Self::Completed { events, .. } | Self::Failed { events, .. } => events,
            Self::Suspended(checkpoint) => &checkpoint.events,
        }
    }

    /// The task state this outcome leaves a task in: `completed`, `waiting_approval` or
    /// `failed`.
    pub fn state(&self) -> TaskState {
        match self {
            Self::Completed { .. } => TaskState::Completed,
            Self::Suspended(_) => TaskState::WaitingApproval,
            Self::Failed { .. } => TaskState::Failed,
        }
    }

    /// [`Outcome::state`]'s wire name.
    pub fn status(&self) -> &'static str {
        self.state().as_str()
    }
}

/// A person's decision on a pending call.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// Run the call, with the original arguments or with `edited_arguments`, which
    /// replace them entirely and are validated and checked by the gate again.
    Approve {
        /// Replacement arguments, if the person edited the call.
        edited_arguments: Option<Value>,
        /// Who edited them (a team user's name, or the actor), for the timeline.
        edited_by: Option<String>,
    },
    /// Do not run the call; the model is told, with the optional reason.
    Reject {
        /// Why, in the person's words.
        reason: Option<String>,
    },
    /// Do not run the call because its target changed after the person was shown it;
    /// `message` tells the model to look again.
    Stale {
        /// What the model is told.
        message: String,
    },
    /// The call already ran before the process running the task stopped, and its result
    /// is recorded: answer it with that result, run nothing (a retry continues from it).
    Recorded {
        /// The output the model was given then (or the error's message).
        content: String,
        /// Whether it was an error.
        failed: bool,
    },
}

/// Why the decisions given to [`crate::Agent::resume_all`] do not match the
/// checkpoint's pending calls one to one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionProblem {
    /// A pending call got no decision.
    #[error("pending call `{call_id}` has no decision")]
    Missing {
        /// The pending call's id.
        call_id: String,
    },
    /// A decision names a call that is not waiting for one.
    #[error("call `{call_id}` is not waiting for a decision")]
    Unknown {
        /// The id the decision named.
        call_id: String,
    },
    /// A pending call got more than one decision.
    #[error("pending call `{call_id}` was decided more than once")]
    Duplicate {
        /// The pending call's id.
        call_id: String,
    },
}

/// Why a checkpoint could not be resumed. Nothing ran; the checkpoint is handed back
/// untouched (where there is one to hand back) so the approvals can stay pending.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// Edited arguments of an approved call failed the tool's schema or the gate; nothing
    /// of the changeset ran.
    #[error("edited arguments refused: {message}")]
    InvalidEdit {
        /// The id of the call whose edit was refused (the first one, in the model's
        /// order, when several were).
        call_id: String,
        /// Why the edit was refused.
        message: String,
        /// The untouched checkpoint.
        checkpoint: Box<Checkpoint>,
    },
    /// The decisions do not match the pending calls one to one (one missing, one for a
    /// call that is not pending, or two for the same call); nothing ran.
    #[error("decisions refused: {problem}")]
    Decisions {
        /// What is wrong with them.
        problem: DecisionProblem,
        /// The untouched checkpoint.
        checkpoint: Box<Checkpoint>,
    },
    /// A pending call's tool is not in this run's registry.
    #[error("tool `{name}` of the pending call is not available")]
    UnknownTool {
        /// The tool's name.
        name: String,
        /// The untouched checkpoint.
        checkpoint: Box<Checkpoint>,
    },
    /// The checkpoint contradicts itself (a `more_pending` call missing from
    /// `later_calls`, a call id twice, `more_pending` in a version-1 checkpoint).
    #[error("the checkpoint is inconsistent: {message}")]
    InvalidCheckpoint {
        /// What is wrong with it.
        message: String,
        /// The untouched checkpoint.
        checkpoint: Box<Checkpoint>,
    },
    /// The checkpoint was written by an incompatible version.
    #[error("checkpoint format version {found} is not supported (expected {expected})")]
    UnsupportedVersion {
        /// The version found.
        found: u32,
        /// The newest version this build reads (it reads every version from
        /// [`pp_types::OLDEST_CHECKPOINT_VERSION`] to this one).
        expected: u32,
    },
}
