//! Chat sessions: a conversation of turns, each turn one task.
//!
//! A new turn locks its session's row first, so two messages sent at once never start
//! two turns: the second waits, then finds the first turn active ([`Error::SessionBusy`]).

use deadpool_postgres::GenericClient;
use pp_types::{Actor, AuditAction, Message, NewAudit, TaskId, Timestamp};
use tokio_postgres::Row;

use super::rows::{self, TASK_COLUMN_COUNT, TASK_COLUMNS};
use super::{PgStore, audit, execute, query, query_opt, tasks};
use crate::error::{Error, Result};
use crate::ids;
use crate::mapping::{encode, inserted, limit as row_limit};
use crate::types::{ACTIVE_TURN_STATES, ChatSession, ChatTurn, NewChatSession, NewTask};

const SESSION_COLUMNS: &str = "id, title, workspace, created_by, created_at, updated_at, \
     summary, summarised_through";

impl PgStore {
    /// Creates an empty chat session, recording the team `user` who created it (team
    /// mode) on it and its `session_created` audit row.
    pub(crate) async fn create_chat_session(
        &self,
        new: NewChatSession,
        user: Option<&str>,
    ) -> Result<ChatSession> {
        let now = self.now();
        let id = ids::new_id("s_", now)?;
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        execute(
            &transaction,
            "INSERT INTO chat_sessions (id, title, workspace, created_by, created_at, \
             updated_at, created_by_user) VALUES ($1, $2, $3, $4, $5, $5, $6)",
            &[
                &id,
                &new.title,
                &new.workspace,
                &new.created_by.as_str(),
                &now.as_millis(),
                &user,
            ],
        )
        .await?;
        let row = NewAudit {
            actor: Some(new.created_by),
            target: Some(id.clone()),
            detail: Some(format!("workspace {}", new.workspace)),
            user: user.map(str::to_owned),
            ..NewAudit::new(AuditAction::SessionCreated)
        };
        audit::insert(&transaction, row, now).await?;
        transaction.commit().await?;
        Ok(inserted::chat_session(id, new, now))
    }

    /// The `limit` most recently active chat sessions (`updated_at`), newest first.
    pub(crate) async fn chat_sessions(&self, limit: usize) -> Result<Vec<ChatSession>> {
        let found = query(
            &self.client().await?,
            &format!(
                "SELECT {SESSION_COLUMNS} FROM chat_sessions \
                 ORDER BY updated_at DESC, ord DESC LIMIT $1"
            ),
            &[&row_limit(limit)],
        )
        .await?;
        found.iter().map(session_from_row).collect()
    }

    /// One chat session ([`Error::NotFound`] with `what = "session"` if there is none).
    pub(crate) async fn chat_session(&self, id: &str) -> Result<ChatSession> {
        load_session(&self.client().await?, id, false).await
    }

    /// The session's turns, oldest first ([`Error::NotFound`] for an unknown session).
    pub(crate) async fn chat_turns(&self, id: &str) -> Result<Vec<ChatTurn>> {
        let mut client = self.client().await?;
        // One snapshot for both reads.
        let transaction = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await?;
        load_session(&transaction, id, false).await?;
        let all = turns(&transaction, id).await?;
        transaction.commit().await?;
        Ok(all)
    }

    /// Adds a turn: creates its `queued` task (with the `task_created` audit row) and the
    /// turn row in one transaction. [`Error::SessionBusy`] while the latest turn is
    /// active; [`Error::NotFound`] for an unknown session.
    pub(crate) async fn add_chat_turn(
        &self,
        session: &str,
        new: NewTask,
        user: Option<&str>,
    ) -> Result<ChatTurn> {
        let now = self.now();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let turn = add_turn(&transaction, session, new, user, now).await?;
        transaction.commit().await?;
        Ok(turn)
    }

    /// The session and turn index of `task`, if it is a turn of a chat session.
    pub(crate) async fn turn_of_task(&self, task: &TaskId) -> Result<Option<(String, u32)>> {
        query_opt(
            &self.client().await?,
            "SELECT session_id, turn_index FROM session_turns WHERE task_id = $1",
            &[&task.as_str()],
        )
        .await?
        .map(|row| Ok((row.try_get(0)?, small(row.try_get(1)?))))
        .transpose()
    }

    /// Stores the turn's own messages when its task ends; a no-op when `task` is not a
    /// session turn.
    pub(crate) async fn set_turn_messages(
        &self,
        task: &TaskId,
        messages: &[Message],
    ) -> Result<()> {
        let encoded = encode("turn messages", messages)?;
        execute(
            &self.client().await?,
            "UPDATE session_turns SET messages = $2 WHERE task_id = $1",
            &[&task.as_str(), &encoded],
        )
        .await?;
        Ok(())
    }

    /// Replaces the session's summary, which now covers turns `1..=through`.
    pub(crate) async fn set_session_summary(
        &self,
        session: &str,
        summary: &str,
        through: u32,
    ) -> Result<()> {
        let now = self.now();
        let changed = execute(
            &self.client().await?,
            "UPDATE chat_sessions SET summary = $2, summarised_through = $3, \
             updated_at = $4 WHERE id = $1",
            &[&session, &summary, &i64::from(through), &now.as_millis()],
        )
        .await?;
        if changed == 0 {
            return Err(session_not_found(session));
        }
        Ok(())
    }

    /// Deletes the session and its turn rows (their tasks, events and audit rows stay).
    /// [`Error::SessionBusy`] while a turn is active; [`Error::NotFound`] if unknown.
    pub(crate) async fn delete_chat_session(
        &self,
        session: &str,
        user: Option<&str>,
    ) -> Result<()> {
        let now = self.now();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        load_session(&transaction, session, true).await?;
        let all = turns(&transaction, session).await?;
        if let Some(turn) = all
            .iter()
            .find(|turn| ACTIVE_TURN_STATES.contains(&turn.task.state))
        {
            return Err(Error::SessionBusy {
                id: session.to_owned(),
                task_id: turn.task.id.to_string(),
            });
        }
        execute(
            &transaction,
            "DELETE FROM session_turns WHERE session_id = $1",
            &[&session],
        )
        .await?;
        execute(
            &transaction,
            "DELETE FROM chat_sessions WHERE id = $1",
            &[&session],
        )
        .await?;
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
        audit::insert(&transaction, row, now).await?;
        transaction.commit().await?;
        Ok(())
    }
}

/// Adds a turn inside the caller's transaction (also the scheduler's fire of a schedule
/// that continues a session). Locks the session's row first.
pub(crate) async fn add_turn(
    db: &impl GenericClient,
    session: &str,
    new: NewTask,
    user: Option<&str>,
    now: Timestamp,
) -> Result<ChatTurn> {
    load_session(db, session, true).await?;
    let latest = query_opt(
        db,
        "SELECT session_turns.turn_index, tasks.id, tasks.state FROM session_turns \
         JOIN tasks ON tasks.id = session_turns.task_id \
         WHERE session_turns.session_id = $1 \
         ORDER BY session_turns.turn_index DESC LIMIT 1",
        &[&session],
    )
    .await?
    .map(|row| -> Result<(i64, String, String)> {
        Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?))
    })
    .transpose()?;
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
    let index = latest.map_or(1, |(index, _, _)| small(index).saturating_add(1));
    let task = tasks::insert_as(db, new, user, now).await?;
    execute(
        db,
        "INSERT INTO session_turns (session_id, turn_index, task_id) VALUES ($1, $2, $3)",
        &[&session, &i64::from(index), &task.id.as_str()],
    )
    .await?;
    execute(
        db,
        "UPDATE chat_sessions SET updated_at = $2 WHERE id = $1",
        &[&session, &now.as_millis()],
    )
    .await?;
    Ok(ChatTurn {
        index,
        task,
        messages: None,
    })
}

/// A stored small count (turn indexes, the summary's last turn) as `u32`.
fn small(value: i64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

fn session_not_found(id: &str) -> Error {
    Error::NotFound {
        what: "session",
        id: id.to_owned(),
    }
}

/// Reads one session; with `lock`, locks its row for the rest of the transaction.
async fn load_session(db: &impl GenericClient, id: &str, lock: bool) -> Result<ChatSession> {
    let sql = if lock {
        format!("SELECT {SESSION_COLUMNS} FROM chat_sessions WHERE id = $1 FOR NO KEY UPDATE")
    } else {
        format!("SELECT {SESSION_COLUMNS} FROM chat_sessions WHERE id = $1")
    };
    let row = query_opt(db, &sql, &[&id])
        .await?
        .ok_or_else(|| session_not_found(id))?;
    session_from_row(&row)
}

async fn turns(db: &impl GenericClient, session: &str) -> Result<Vec<ChatTurn>> {
    let found = query(
        db,
        &format!(
            "SELECT {TASK_COLUMNS}, session_turns.turn_index, session_turns.messages \
             FROM session_turns JOIN tasks ON tasks.id = session_turns.task_id \
             WHERE session_turns.session_id = $1 ORDER BY session_turns.turn_index"
        ),
        &[&session],
    )
    .await?;
    found
        .iter()
        .map(|row| {
            let task = rows::task(row)?;
            let index: i64 = row.try_get(TASK_COLUMN_COUNT)?;
            let messages: Option<String> = row.try_get(TASK_COLUMN_COUNT + 1)?;
            let messages = messages
                .map(|text| {
                    crate::mapping::decode_json(
                        "session_turns",
                        "messages",
                        task.id.as_str(),
                        &text,
                    )
                })
                .transpose()?;
            Ok(ChatTurn {
                index: small(index),
                task,
                messages,
            })
        })
        .collect()
}

fn session_from_row(row: &Row) -> Result<ChatSession> {
    let id: String = row.try_get(0)?;
    let created_by: String = row.try_get(3)?;
    let created_by = Actor::parse(&created_by).ok_or_else(|| Error::Corrupt {
        table: "chat_sessions",
        column: "created_by",
        id: id.clone(),
        source: serde::de::Error::custom(format!("unknown actor `{created_by}`")),
    })?;
    Ok(ChatSession {
        title: row.try_get(1)?,
        workspace: row.try_get(2)?,
        created_by,
        created_at: Timestamp::from_millis(row.try_get(4)?),
        updated_at: Timestamp::from_millis(row.try_get(5)?),
        summary: row.try_get(6)?,
        summarised_through: small(row.try_get(7)?),
        id,
    })
}
