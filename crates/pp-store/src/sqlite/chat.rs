//! Chat sessions: a conversation of turns, each turn one task (`chat_sessions`,
//! `session_turns`; see `migrations/sqlite/0004_chat_sessions.sql`).
//!
//! A new turn is created together with its task in one transaction that first checks the
//! session's latest turn has ended, so two messages sent at once (two tabs, the console
//! and the CLI) never start two turns. A turn's own messages are stored when its task
//! ends; the task's events and audit rows are the task's as always, so retention
//! ([`crate::Store::prune`]) may drop those while the conversation stays whole.

use pp_types::{Actor, AuditAction, Message, NewAudit, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

use super::rows::{self, TASK_COLUMNS};
use super::{SqliteStore as Store, audit, tasks};
use crate::error::{Error, Result};
use crate::ids;
use crate::mapping::{self, RawTask, inserted};
use crate::types::{ACTIVE_TURN_STATES, ChatSession, ChatTurn, NewChatSession, NewTask};

const SESSION_COLUMNS: &str = "id, title, workspace, created_by, created_at, updated_at, \
     summary, summarised_through";

impl Store {
    /// Creates an empty chat session, recording the team `user` who created it (team
    /// mode) on it and its `session_created` audit row.
    pub(crate) fn create_chat_session(
        &self,
        new: NewChatSession,
        user: Option<&str>,
    ) -> Result<ChatSession> {
        let now = self.now();
        let id = ids::new_id("s_", now)?;
        self.write(|transaction| {
            transaction
                .prepare_cached(
                    "INSERT INTO chat_sessions (id, title, workspace, created_by, created_at, \
                     updated_at, created_by_user) VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6)",
                )?
                .execute(params![
                    id,
                    new.title,
                    new.workspace,
                    new.created_by.as_str(),
                    now.as_millis(),
                    user
                ])?;
            let row = NewAudit {
                actor: Some(new.created_by),
                target: Some(id.clone()),
                detail: Some(format!("workspace {}", new.workspace)),
                user: user.map(str::to_owned),
                ..NewAudit::new(AuditAction::SessionCreated)
            };
            audit::insert(transaction, row, now)?;
            Ok(())
        })?;
        Ok(inserted::chat_session(id, new, now))
    }

    /// The `limit` most recently active chat sessions (`updated_at`), newest first.
    pub(crate) fn chat_sessions(&self, limit: usize) -> Result<Vec<ChatSession>> {
        self.read(|connection| {
            connection
                .prepare_cached(&format!(
                    "SELECT {SESSION_COLUMNS} FROM chat_sessions \
                     ORDER BY updated_at DESC, rowid DESC LIMIT ?1"
                ))?
                .query_map([mapping::limit(limit)], RawSession::from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?
                .into_iter()
                .map(RawSession::decode)
                .collect()
        })
    }

    /// One chat session ([`Error::NotFound`] with `what = "session"` if there is none).
    pub(crate) fn chat_session(&self, id: &str) -> Result<ChatSession> {
        self.read(|connection| load_session(connection, id))
    }

    /// The session's turns, oldest first ([`Error::NotFound`] for an unknown session).
    pub(crate) fn chat_turns(&self, id: &str) -> Result<Vec<ChatTurn>> {
        self.read(|connection| {
            load_session(connection, id)?;
            turns(connection, id)
        })
    }

    /// Adds a turn: creates its `queued` task (with the `task_created` audit row) and the
    /// turn row in one transaction. [`Error::SessionBusy`] while the latest turn is
    /// still `queued`, `running` or `waiting_approval`; [`Error::NotFound`] for an
    /// unknown session.
    pub(crate) fn add_chat_turn(
        &self,
        session: &str,
        new: NewTask,
        user: Option<&str>,
    ) -> Result<ChatTurn> {
        let now = self.now();
        self.write(|transaction| add_turn(transaction, session, new, user, now))
    }

    /// The session and turn index of `task`, if it is a turn of a chat session.
    pub(crate) fn turn_of_task(&self, task: &pp_types::TaskId) -> Result<Option<(String, u32)>> {
        self.read(|connection| {
            Ok(connection
                .prepare_cached(
                    "SELECT session_id, turn_index FROM session_turns WHERE task_id = ?1",
                )?
                .query_row([task.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()?)
        })
    }

    /// Stores the turn's own messages when its task ends; a no-op when `task` is not a
    /// session turn.
    pub(crate) fn set_turn_messages(
        &self,
        task: &pp_types::TaskId,
        messages: &[Message],
    ) -> Result<()> {
        let encoded = mapping::encode("turn messages", messages)?;
        self.write(|transaction| {
            transaction
                .prepare_cached("UPDATE session_turns SET messages = ?2 WHERE task_id = ?1")?
                .execute(params![task.as_str(), encoded])?;
            Ok(())
        })
    }

    /// Replaces the session's summary, which now covers turns `1..=through`.
    pub(crate) fn set_session_summary(
        &self,
        session: &str,
        summary: &str,
        through: u32,
    ) -> Result<()> {
        let now = self.now();
        self.write(|transaction| {
            load_session(transaction, session)?;
            transaction
                .prepare_cached(
                    "UPDATE chat_sessions SET summary = ?2, summarised_through = ?3, \
                     updated_at = ?4 WHERE id = ?1",
                )?
                .execute(params![session, summary, through, now.as_millis()])?;
            Ok(())
        })
    }

    /// Deletes the session and its turn rows (their tasks, events and audit rows stay).
    /// [`Error::SessionBusy`] while a turn is active; [`Error::NotFound`] if unknown.
    pub(crate) fn delete_chat_session(&self, session: &str, user: Option<&str>) -> Result<()> {
        let now = self.now();
        self.write(|transaction| {
            load_session(transaction, session)?;
            let all = turns(transaction, session)?;
            if let Some(turn) = all
                .iter()
                .find(|turn| ACTIVE_TURN_STATES.contains(&turn.task.state))
            {
                return Err(Error::SessionBusy {
                    id: session.to_owned(),
                    task_id: turn.task.id.to_string(),
                });
            }
            transaction
                .prepare_cached("DELETE FROM session_turns WHERE session_id = ?1")?
                .execute([session])?;
            transaction
                .prepare_cached("DELETE FROM chat_sessions WHERE id = ?1")?
                .execute([session])?;
            let row = NewAudit {
                actor: Some(Actor::Operator),
                target: Some(session.to_owned()),
                detail: Some(match all.len() {
                    1 => "1 turn; its task stays".to_owned(),
                    count => format!("{count} turns; their tasks stay"),
                }),
                user: user.map(str::to_owned),
                ..NewAudit::new(AuditAction::SessionDeleted)
            };
            audit::insert(transaction, row, now)?;
            Ok(())
        })
    }
}

/// Adds a turn inside the caller's transaction ([`crate::Store::add_chat_turn`], and the
/// scheduler's fire of a schedule that continues a session).
pub(crate) fn add_turn(
    transaction: &Connection,
    session: &str,
    new: NewTask,
    user: Option<&str>,
    now: Timestamp,
) -> Result<ChatTurn> {
    load_session(transaction, session)?;
    let latest: Option<(u32, String, String)> = transaction
        .prepare_cached(
            "SELECT session_turns.turn_index, tasks.id, tasks.state FROM session_turns \
             JOIN tasks ON tasks.id = session_turns.task_id \
             WHERE session_turns.session_id = ?1 \
             ORDER BY session_turns.turn_index DESC LIMIT 1",
        )?
        .query_row([session], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .optional()?;
    if let Some((_, task_id, state)) = &latest
        && ACTIVE_TURN_STATES
            .iter()
            .any(|active| active.as_str() == state)
    {
        return Err(Error::SessionBusy {
            id: session.to_owned(),
            task_id: task_id.clone(),
        });
    }
    let index = latest.map_or(1, |(index, _, _)| index.saturating_add(1));
    let task = tasks::insert_as(transaction, new, user, now)?;
    transaction
        .prepare_cached(
            "INSERT INTO session_turns (session_id, turn_index, task_id) \
             VALUES (?1, ?2, ?3)",
        )?
        .execute(params![session, index, task.id.as_str()])?;
    touch(transaction, session, now)?;
    Ok(ChatTurn {
        index,
        task,
        messages: None,
    })
}

fn touch(connection: &Connection, session: &str, now: Timestamp) -> Result<()> {
    connection
        .prepare_cached("UPDATE chat_sessions SET updated_at = ?2 WHERE id = ?1")?
        .execute(params![session, now.as_millis()])?;
    Ok(())
}

fn load_session(connection: &Connection, id: &str) -> Result<ChatSession> {
    connection
        .prepare_cached(&format!(
            "SELECT {SESSION_COLUMNS} FROM chat_sessions WHERE id = ?1"
        ))?
        .query_row([id], RawSession::from_row)
        .optional()?
        .ok_or_else(|| Error::NotFound {
            what: "session",
            id: id.to_owned(),
        })?
        .decode()
}

fn turns(connection: &Connection, session: &str) -> Result<Vec<ChatTurn>> {
    let raw = connection
        .prepare_cached(&format!(
            "SELECT {TASK_COLUMNS}, session_turns.turn_index, session_turns.messages \
             FROM session_turns JOIN tasks ON tasks.id = session_turns.task_id \
             WHERE session_turns.session_id = ?1 ORDER BY session_turns.turn_index"
        ))?
        .query_map([session], |row| {
            Ok((
                rows::raw::<RawTask>(row)?,
                row.get::<_, u32>(rows::TASK_COLUMN_COUNT)?,
                row.get::<_, Option<String>>(rows::TASK_COLUMN_COUNT + 1)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    raw.into_iter()
        .map(|(task, index, messages)| {
            let task = task.decode()?;
            let messages = messages
                .map(|text| {
                    serde_json::from_str(&text).map_err(|source| Error::Corrupt {
                        table: "session_turns",
                        column: "messages",
                        id: task.id.to_string(),
                        source,
                    })
                })
                .transpose()?;
            Ok(ChatTurn {
                index,
                task,
                messages,
            })
        })
        .collect()
}

struct RawSession {
    id: String,
    title: Option<String>,
    workspace: String,
    created_by: String,
    created_at: i64,
    updated_at: i64,
    summary: Option<String>,
    summarised_through: u32,
}

impl RawSession {
    fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            title: row.get(1)?,
            workspace: row.get(2)?,
            created_by: row.get(3)?,
            created_at: row.get(4)?,
            updated_at: row.get(5)?,
            summary: row.get(6)?,
            summarised_through: row.get(7)?,
        })
    }

    fn decode(self) -> Result<ChatSession> {
        let created_by = Actor::parse(&self.created_by).ok_or_else(|| Error::Corrupt {
            table: "chat_sessions",
            column: "created_by",
            id: self.id.clone(),
            source: serde::de::Error::custom(format!("unknown actor `{}`", self.created_by)),
        })?;
        Ok(ChatSession {
            id: self.id,
            title: self.title,
            workspace: self.workspace,
            created_by,
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
            summary: self.summary,
            summarised_through: self.summarised_through,
        })
    }
}
