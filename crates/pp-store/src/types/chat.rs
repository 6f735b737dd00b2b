//! Chat sessions and their turns.

use pp_types::{Actor, Message, TaskRecord, TaskState, Timestamp};

/// A chat session to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewChatSession {
    /// An optional title for lists.
    pub title: Option<String>,
    /// The configured workspace's name every turn runs in.
    pub workspace: String,
    /// Who created it.
    pub created_by: Actor,
}

/// A chat session as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatSession {
    /// `s_…`.
    pub id: String,
    /// The title, if one was given.
    pub title: Option<String>,
    /// The workspace's name.
    pub workspace: String,
    /// Who created it.
    pub created_by: Actor,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was created, got a turn or a summary.
    pub updated_at: Timestamp,
    /// The model's summary of turns `1..=summarised_through`, if any.
    pub summary: Option<String>,
    /// The last turn the summary covers (0: none).
    pub summarised_through: u32,
}

/// One turn of a session, with its task as stored now.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatTurn {
    /// 1 for the first turn.
    pub index: u32,
    /// The turn's task (its prompt is the person's message).
    pub task: TaskRecord,
    /// The turn's own messages (user message, model turns, tool results), stored when the
    /// task ended; `None` before, or when it ended without any (cancelled, timed out).
    pub messages: Option<Vec<Message>>,
}

/// The states in which a turn is still active: a new message has to wait.
pub const ACTIVE_TURN_STATES: [TaskState; 3] = [
    TaskState::Queued,
    TaskState::Running,
    TaskState::WaitingApproval,
];
