//! Team users (the `users` and `user_grants` tables, migration 0003), their console
//! logins and the user a task or chat session was created by; the same methods as the
//! SQLite backend's `users.rs`.
//!
//! A user's token is shown once, when it is made; only its SHA-256 is stored, like a
//! console login's id, so a copy of the database hands out no credentials.

use std::time::Duration;

use deadpool_postgres::GenericClient;
use pp_types::{Role, TaskId, TaskRecord, Timestamp, UserRecord};

use super::{PgStore, count, execute, is_unique_violation, query, query_opt, tasks};
use crate::error::{Error, Result};
use crate::ids;
use crate::mapping::decode_name;
use crate::types::{LoginOwner, NewTask, USER_TOKEN_PREFIX};

impl PgStore {
    /// Adds a user with `role` and a fresh token; returns the user and the token, which
    /// is not stored (only its SHA-256 is). [`Error::NameTaken`] if the name is used.
    pub(crate) async fn add_user(&self, name: &str, role: Role) -> Result<(UserRecord, String)> {
        let token = new_token()?;
        let digest = ids::login_digest(&token);
        let now = self.now().as_millis();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let statement = transaction
            .prepare_cached(
                "INSERT INTO users (name, role, token_sha256, created_at) \
                 VALUES ($1, $2, $3, $4)",
            )
            .await?;
        // Two adds racing for one name: the loser's insert meets the primary key.
        match transaction
            .execute(&statement, &[&name, &role.as_str(), &digest, &now])
            .await
        {
            Err(error) if is_unique_violation(&error) => {
                return Err(Error::NameTaken {
                    what: "user",
                    name: name.to_owned(),
                });
            }
            other => other?,
        };
        let user = load(&transaction, name).await?;
        transaction.commit().await?;
        Ok((user, token))
    }

    /// Every user, by name.
    pub(crate) async fn users(&self) -> Result<Vec<UserRecord>> {
        let client = self.client().await?;
        let found = query(&client, &format!("{USER_SELECT} ORDER BY name"), &[]).await?;
        found.iter().map(decode).collect()
    }

    /// One user; [`Error::NotFound`] if there is none by this name.
    pub(crate) async fn user(&self, name: &str) -> Result<UserRecord> {
        load(&self.client().await?, name).await
    }

    /// Grants `workspace` to the user (a no-op if already granted).
    pub(crate) async fn grant_workspace(&self, name: &str, workspace: &str) -> Result<UserRecord> {
        let now = self.now().as_millis();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        lock(&transaction, name).await?;
        execute(
            &transaction,
            "INSERT INTO user_grants (user_name, workspace, granted_at) VALUES ($1, $2, $3) \
             ON CONFLICT DO NOTHING",
            &[&name, &workspace, &now],
        )
        .await?;
        let user = load(&transaction, name).await?;
        transaction.commit().await?;
        Ok(user)
    }

    /// Takes `workspace` back from the user; the `bool` says whether it was granted.
    pub(crate) async fn revoke_workspace(
        &self,
        name: &str,
        workspace: &str,
    ) -> Result<(UserRecord, bool)> {
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        lock(&transaction, name).await?;
        let removed = execute(
            &transaction,
            "DELETE FROM user_grants WHERE user_name = $1 AND workspace = $2",
            &[&name, &workspace],
        )
        .await?;
        let user = load(&transaction, name).await?;
        transaction.commit().await?;
        Ok((user, removed > 0))
    }

    /// Gives the user a new token and ends the user's console logins, in one
    /// transaction: the old token stops working at once. Returns the user, the new token
    /// and how many logins ended.
    pub(crate) async fn rotate_user_token(
        &self,
        name: &str,
    ) -> Result<(UserRecord, String, usize)> {
        let token = new_token()?;
        let digest = ids::login_digest(&token);
        let now = self.now().as_millis();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let changed = execute(
            &transaction,
            "UPDATE users SET token_sha256 = $2, rotated_at = $3 WHERE name = $1",
            &[&name, &digest, &now],
        )
        .await?;
        if changed == 0 {
            return Err(Error::not_found("user", name));
        }
        let ended = execute(
            &transaction,
            "DELETE FROM console_logins WHERE user_name = $1",
            &[&name],
        )
        .await?;
        let user = load(&transaction, name).await?;
        transaction.commit().await?;
        Ok((user, token, count(ended)))
    }

    /// Removes the user, in one transaction: their row (so their token stops working),
    /// their grants and their console logins. Their tasks, approvals and audit rows stay,
    /// naming them. [`Error::LastOwner`] for the only owner. Returns the user as they
    /// were and how many logins ended.
    pub(crate) async fn remove_user(&self, name: &str) -> Result<(UserRecord, usize)> {
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let owners = lock_owners(&transaction).await?;
        lock(&transaction, name).await?;
        let user = load(&transaction, name).await?;
        if user.role == Role::Owner && owners <= 1 {
            return Err(Error::LastOwner {
                name: name.to_owned(),
            });
        }
        let ended = execute(
            &transaction,
            "DELETE FROM console_logins WHERE user_name = $1",
            &[&name],
        )
        .await?;
        execute(
            &transaction,
            "DELETE FROM user_grants WHERE user_name = $1",
            &[&name],
        )
        .await?;
        execute(&transaction, "DELETE FROM users WHERE name = $1", &[&name]).await?;
        transaction.commit().await?;
        Ok((user, count(ended)))
    }

    /// Gives the user `role`; [`Error::LastOwner`] when that would leave no owner.
    /// Returns the user as they are now and their role before.
    pub(crate) async fn set_user_role(&self, name: &str, role: Role) -> Result<(UserRecord, Role)> {
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let owners = lock_owners(&transaction).await?;
        lock(&transaction, name).await?;
        let before = load(&transaction, name).await?.role;
        if before == Role::Owner && role != Role::Owner && owners <= 1 {
            return Err(Error::LastOwner {
                name: name.to_owned(),
            });
        }
        execute(
            &transaction,
            "UPDATE users SET role = $2 WHERE name = $1",
            &[&name, &role.as_str()],
        )
        .await?;
        let user = load(&transaction, name).await?;
        transaction.commit().await?;
        Ok((user, before))
    }

    /// The user whose token is `token`, if any.
    pub(crate) async fn user_by_token(&self, token: &str) -> Result<Option<UserRecord>> {
        if !token.starts_with(USER_TOKEN_PREFIX) {
            return Ok(None);
        }
        let digest = ids::login_digest(token);
        let client = self.client().await?;
        let row = query_opt(
            &client,
            &format!("{USER_SELECT} WHERE token_sha256 = $1"),
            &[&digest],
        )
        .await?;
        row.as_ref().map(decode).transpose()
    }

    /// Starts a console login for the user `name` that lasts `ttl`; returns its secret
    /// id. Expired logins are purged on the way.
    pub(crate) async fn create_user_login(&self, name: &str, ttl: Duration) -> Result<String> {
        let login = ids::new_login_id()?;
        let digest = ids::login_digest(&login);
        let now = self.now();
        let expires_at = now.saturating_add(ttl).as_millis();
        let now = now.as_millis();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        // Locked so a rotation cannot end the user's logins between this check and the
        // insert (the login would then outlive the token it was made with).
        lock(&transaction, name).await?;
        execute(
            &transaction,
            "DELETE FROM console_logins WHERE expires_at <= $1",
            &[&now],
        )
        .await?;
        execute(
            &transaction,
            "INSERT INTO console_logins (id_sha256, created_at, expires_at, user_name) \
             VALUES ($1, $2, $3, $4)",
            &[&digest, &now, &expires_at, &name],
        )
        .await?;
        transaction.commit().await?;
        Ok(login)
    }

    /// Who the live login `login` belongs to; `None` if it does not exist or expired.
    pub(crate) async fn login_owner(&self, login: &str) -> Result<Option<LoginOwner>> {
        let digest = ids::login_digest(login);
        let now = self.now().as_millis();
        let row = query_opt(
            &self.client().await?,
            "SELECT user_name FROM console_logins WHERE id_sha256 = $1 AND expires_at > $2",
            &[&digest, &now],
        )
        .await?;
        row.map(|row| {
            let user: Option<String> = row.try_get(0)?;
            Ok(user.map_or(LoginOwner::Server, LoginOwner::User))
        })
        .transpose()
    }

    /// Creates a `queued` task as [`PgStore::create_task`] does, recording `user` (when
    /// given) as its creator on the task and its `task_created` audit row.
    pub(crate) async fn create_task_as(
        &self,
        new: NewTask,
        user: Option<&str>,
    ) -> Result<TaskRecord> {
        let now = self.now();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        let task = tasks::insert_as(&transaction, new, user, now).await?;
        transaction.commit().await?;
        Ok(task)
    }

    /// Records `user` as the creator of task `id` when none is recorded yet (a chat
    /// turn's task, created by the session code that knows no users).
    pub(crate) async fn set_task_user(&self, id: &TaskId, user: &str) -> Result<()> {
        execute(
            &self.client().await?,
            "UPDATE tasks SET created_by_user = $2 WHERE id = $1 AND created_by_user IS NULL",
            &[&id.as_str(), &user],
        )
        .await?;
        Ok(())
    }

    /// Records the team user who created the chat session `id`.
    pub(crate) async fn set_chat_session_user(&self, id: &str, user: &str) -> Result<()> {
        let changed = execute(
            &self.client().await?,
            "UPDATE chat_sessions SET created_by_user = $2 WHERE id = $1",
            &[&id, &user],
        )
        .await?;
        if changed == 0 {
            return Err(session_not_found(id));
        }
        Ok(())
    }

    /// The team user who created the chat session `id` (`None`: none recorded);
    /// [`Error::NotFound`] for an unknown session.
    pub(crate) async fn chat_session_user(&self, id: &str) -> Result<Option<String>> {
        let row = query_opt(
            &self.client().await?,
            "SELECT created_by_user FROM chat_sessions WHERE id = $1",
            &[&id],
        )
        .await?
        .ok_or_else(|| session_not_found(id))?;
        Ok(row.try_get(0)?)
    }
}

/// A fresh user token: the prefix and 256 random bits in hex.
fn new_token() -> Result<String> {
    Ok(format!("{USER_TOKEN_PREFIX}{}", ids::new_login_id()?))
}

/// A user with its grants (sorted), as [`decode`] reads it; a `WHERE` follows.
const USER_SELECT: &str = "SELECT name, role, created_at, rotated_at, \
     ARRAY(SELECT workspace FROM user_grants WHERE user_name = users.name \
           ORDER BY workspace) \
     FROM users";

/// Decodes a row selected with [`USER_SELECT`].
fn decode(row: &tokio_postgres::Row) -> Result<UserRecord> {
    let name: String = row.try_get(0)?;
    let role = decode_name("users", "role", &name, row.try_get(1)?)?;
    Ok(UserRecord {
        role,
        created_at: Timestamp::from_millis(row.try_get(2)?),
        rotated_at: row
            .try_get::<_, Option<i64>>(3)?
            .map(Timestamp::from_millis),
        workspaces: row.try_get(4)?,
        name,
    })
}

/// Reads one user with its grants ([`Error::NotFound`] if there is none).
async fn load(db: &impl GenericClient, name: &str) -> Result<UserRecord> {
    let row = query_opt(db, &format!("{USER_SELECT} WHERE name = $1"), &[&name])
        .await?
        .ok_or_else(|| Error::not_found("user", name))?;
    decode(&row)
}

/// Locks the user's row for the rest of the transaction ([`Error::NotFound`] if there
/// is none).
async fn lock(db: &impl GenericClient, name: &str) -> Result<()> {
    query_opt(
        db,
        "SELECT 1 FROM users WHERE name = $1 FOR NO KEY UPDATE",
        &[&name],
    )
    .await?
    .map(|_| ())
    .ok_or_else(|| Error::not_found("user", name))
}

/// Locks every owner's row for the rest of the transaction (in name order, so two
/// removals or demotions wait for each other instead of both seeing two owners) and
/// counts them.
async fn lock_owners(db: &impl GenericClient) -> Result<usize> {
    let rows = query(
        db,
        "SELECT name FROM users WHERE role = 'owner' ORDER BY name FOR UPDATE",
        &[],
    )
    .await?;
    Ok(rows.len())
}

fn session_not_found(id: &str) -> Error {
    Error::NotFound {
        what: "session",
        id: id.to_owned(),
    }
}
