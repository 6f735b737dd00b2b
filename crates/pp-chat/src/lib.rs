//! Chat sessions: a conversation of turns, each turn one task with its own events,
//! approvals, audit rows and running time ([`Sessions`]).
//!
//! It sits beside the task service: it reaches the workspaces and the workers through
//! the service ([`TaskService`]) and the store only through its own narrow handle (the
//! chat sessions and their turns). The turns themselves are ordinary tasks, run by the
//! task service's workers; the runner builds a turn's history from the session.
//!
//! [`Sessions::send_message`] creates the turn's task (queued, like any task) in the
//! transaction that checks the previous turn has ended; the runner starts it with the
//! session's history (`conversation.rs`) and stores the turn's own messages when it ends.
//! A session is busy ([`Error::SessionBusy`], HTTP 409 `session_busy`) while its latest
//! turn is `queued`, `running` or `waiting_approval`; an `interrupted` turn does not block
//! the next message. [`Sessions::delete_session`] refuses a busy session the same way
//! (cancel the turn first); it removes the session and its turn list, never the tasks.

use pp_store::{ChatSession, ChatTurn, NewChatSession, NewTask, Store};
use pp_tasks::{Error, Result, TaskService};
use pp_types::{Actor, TaskId, TaskRecord, TaskState, Timestamp};
use serde::Serialize;
use serde_json::Value;

/// The chat sessions of a task service. Cheap to clone.
#[derive(Clone)]
pub struct Sessions {
    service: TaskService,
    store: Store,
    /// The team user who acts (team mode), recorded on the sessions and turns created
    /// and the audit rows of creating and deleting them; `None`: the operator.
    user: Option<String>,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions").finish_non_exhaustive()
    }
}

/// A session to create.
#[derive(Debug, Clone)]
pub struct NewSession {
    /// A configured workspace's name; `None` for the default.
    pub workspace: Option<String>,
    /// An optional title.
    pub title: Option<String>,
    /// Who creates it.
    pub actor: Actor,
}

/// A chat session as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionRecord {
    /// `s_…`.
    pub id: String,
    /// The title, if one was given.
    pub title: Option<String>,
    /// The workspace's name: every turn runs there.
    pub workspace: String,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was created, last got a turn or a summary.
    pub updated_at: Timestamp,
}

/// One turn: the person's message and its task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionTurn {
    /// 1 for the first turn.
    pub index: u32,
    /// The turn's task (its events, approvals and audit rows are the task's).
    pub task_id: TaskId,
    /// The task's state now.
    pub state: TaskState,
    /// The person's message.
    pub prompt: String,
    /// The answer, once the turn completed.
    pub final_text: Option<String>,
}

/// A session with its turns, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionView {
    /// The session (flattened on the wire).
    #[serde(flatten)]
    pub session: SessionRecord,
    /// Every turn, oldest first (summarised ones too: the store keeps them all).
    pub turns: Vec<SessionTurn>,
    /// The model's summary of the oldest turns, once the history outgrew 80 % of the
    /// context window.
    pub summary: Option<String>,
}

impl From<ChatSession> for SessionRecord {
    fn from(session: ChatSession) -> Self {
        Self {
            id: session.id,
            title: session.title,
            workspace: session.workspace,
            created_at: session.created_at,
            updated_at: session.updated_at,
        }
    }
}

impl From<ChatTurn> for SessionTurn {
    fn from(turn: ChatTurn) -> Self {
        Self {
            index: turn.index,
            task_id: turn.task.id,
            state: turn.task.state,
            prompt: turn.task.prompt,
            final_text: turn.task.final_text,
        }
    }
}

impl Sessions {
    /// The chat sessions in `store`, the one `service` runs on (whose workspaces a
    /// session names and whose workers run its turns).
    pub fn new(service: TaskService, store: Store) -> Self {
        Self {
            service,
            store,
            user: None,
        }
    }

    /// The same sessions, acting for the team user `user` (team mode: recorded on the
    /// sessions and turns created and on the audit rows of creating and deleting them;
    /// `None`: the operator).
    #[must_use]
    pub fn as_user(&self, user: Option<&str>) -> Self {
        Self {
            service: self.service.clone(),
            store: self.store.clone(),
            user: user.map(str::to_owned),
        }
    }

    /// Creates an empty session in `request.workspace` (the default when `None`;
    /// [`Error::NotFound`] for an unknown one). A blank title counts as none.
    pub async fn create_session(&self, request: NewSession) -> Result<SessionRecord> {
        let workspace = self
            .service
            .workspaces()
            .find(request.workspace.as_deref())
            .ok_or_else(|| Error::NotFound {
                what: "workspace",
                id: request
                    .workspace
                    .clone()
                    .unwrap_or_else(|| "(default)".into()),
            })?;
        let new = NewChatSession {
            title: request
                .title
                .map(|title| title.trim().to_owned())
                .filter(|title| !title.is_empty()),
            workspace: workspace.name.clone(),
            created_by: request.actor,
        };
        let session = self
            .store
            .create_chat_session(new, self.user.as_deref())
            .await?;
        Ok(session.into())
    }

    /// The `limit` most recently active sessions, newest first.
    pub async fn sessions(&self, limit: usize) -> Result<Vec<SessionRecord>> {
        let sessions = self.store.chat_sessions(limit).await?;
        Ok(sessions.into_iter().map(SessionRecord::from).collect())
    }

    /// One session with its turns ([`Error::NotFound`] if there is none).
    pub async fn session(&self, id: &str) -> Result<SessionView> {
        // Two reads: a turn added between them shows up with a session whose
        // `updated_at` is one turn older, which the next read corrects.
        let session = self.store.chat_session(id).await?;
        let turns = self.store.chat_turns(id).await?;
        let summary = session.summary.clone();
        Ok(SessionView {
            session: session.into(),
            turns: turns.into_iter().map(SessionTurn::from).collect(),
            summary,
        })
    }

    /// Sends the person's next message: creates the turn's `queued` task (started with
    /// the session's history) and wakes the workers. [`Error::SessionBusy`] while the
    /// previous turn is `queued`, `running` or `waiting_approval`; [`Error::NotFound`]
    /// for an unknown session (or a workspace no longer configured);
    /// [`Error::BadRequest`] for an empty message. `script` is a scripted model's turns
    /// for this one turn (tests, demos).
    pub async fn send_message(
        &self,
        id: &str,
        content: String,
        actor: Actor,
        script: Option<Value>,
    ) -> Result<TaskRecord> {
        let prompt = content.trim();
        if prompt.is_empty() {
            return Err(Error::BadRequest("the message is empty".into()));
        }
        let session = self.store.chat_session(id).await?;
        let workspace = self
            .service
            .workspaces()
            .find(Some(&session.workspace))
            .ok_or_else(|| Error::NotFound {
                what: "workspace",
                id: session.workspace.clone(),
            })?;
        let new = NewTask {
            prompt: prompt.to_owned(),
            workspace: workspace.name.clone(),
            workspace_path: workspace.path.display().to_string(),
            created_by: actor,
            origin: None,
            script,
        };
        let turn = self
            .store
            .add_chat_turn(id, new, self.user.as_deref())
            .await?;
        self.service.wake_workers();
        Ok(turn.task)
    }

    /// Deletes the session and its list of turns; the turns' tasks, events and audit
    /// rows stay. Refuses with [`Error::SessionBusy`] while a turn is active (cancel it
    /// first); [`Error::NotFound`] for an unknown session.
    pub async fn delete_session(&self, id: &str) -> Result<()> {
        Ok(self
            .store
            .delete_chat_session(id, self.user.as_deref())
            .await?)
    }

    /// Records the team user who created the chat session `id`.
    pub async fn set_session_user(&self, id: &str, user: &str) -> Result<()> {
        Ok(self.store.set_chat_session_user(id, user).await?)
    }

    /// The team user who created the chat session `id` (`None`: none recorded).
    pub async fn session_user(&self, id: &str) -> Result<Option<String>> {
        Ok(self.store.chat_session_user(id).await?)
    }
}
