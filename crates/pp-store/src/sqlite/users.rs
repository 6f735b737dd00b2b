//! Team users (the `users` and `user_grants` tables, migration 0011), their console
//! logins and the user a task or chat session was created by.
//!
//! A user's token is shown once, when it is made ([`crate::Store::add_user`],
//! [`crate::Store::rotate_user_token`]); only its SHA-256 is stored, like a console login's id,
//! so a copy of the database hands out no credentials.

use std::time::Duration;

use pp_types::{Role, TaskRecord, Timestamp, UserRecord};
use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteStore as Store;
use super::tasks::{self};
use crate::error::{Error, Result};
use crate::ids;
use crate::mapping;
use crate::types::{LoginOwner, NewTask, USER_TOKEN_PREFIX};

impl Store {
    /// Adds a user with `role` and a fresh token; returns the user and the token, which
    /// is not stored (only its SHA-256 is). [`Error::NameTaken`] if the name is used.
    pub(crate) fn add_user(&self, name: &str, role: Role) -> Result<(UserRecord, String)> {
        let token = new_token()?;
        let digest = ids::login_digest(&token);
        let now = self.now();
        self.write(|transaction| {
            if exists(transaction, name)? {
                return Err(Error::NameTaken {
                    what: "user",
                    name: name.to_owned(),
                });
            }
            transaction
                .prepare_cached(
                    "INSERT INTO users (name, role, token_sha256, created_at) \
                     VALUES (?1, ?2, ?3, ?4)",
                )?
                .execute(params![name, role.as_str(), digest, now.as_millis()])?;
            load(transaction, name)
        })
        .map(|user| (user, token))
    }

    /// Every user, by name.
    pub(crate) fn users(&self) -> Result<Vec<UserRecord>> {
        self.read(|connection| {
            let names = connection
                .prepare_cached("SELECT name FROM users ORDER BY name")?
                .query_map([], |row| row.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            names.iter().map(|name| load(connection, name)).collect()
        })
    }

    /// One user; [`Error::NotFound`] if there is none by this name.
    pub(crate) fn user(&self, name: &str) -> Result<UserRecord> {
        self.read(|connection| load(connection, name))
    }

    /// Grants `workspace` to the user (a no-op if already granted).
    pub(crate) fn grant_workspace(&self, name: &str, workspace: &str) -> Result<UserRecord> {
        let now = self.now().as_millis();
        self.write(|transaction| {
            load(transaction, name)?;
            transaction
                .prepare_cached(
                    "INSERT OR IGNORE INTO user_grants (user_name, workspace, granted_at) \
                     VALUES (?1, ?2, ?3)",
                )?
                .execute(params![name, workspace, now])?;
            load(transaction, name)
        })
    }

    /// Takes `workspace` back from the user; the `bool` says whether it was granted.
    pub(crate) fn revoke_workspace(
        &self,
        name: &str,
        workspace: &str,
    ) -> Result<(UserRecord, bool)> {
        self.write(|transaction| {
            load(transaction, name)?;
            let removed = transaction
                .prepare_cached("DELETE FROM user_grants WHERE user_name = ?1 AND workspace = ?2")?
                .execute(params![name, workspace])?;
            Ok((load(transaction, name)?, removed > 0))
        })
    }

    /// Gives the user a new token and ends the user's console logins, in one
    /// transaction: the old token stops working at once. Returns the user, the new token
    /// and how many logins ended.
    pub(crate) fn rotate_user_token(&self, name: &str) -> Result<(UserRecord, String, usize)> {
        let token = new_token()?;
        let digest = ids::login_digest(&token);
        let now = self.now().as_millis();
        self.write(|transaction| {
            load(transaction, name)?;
            transaction
                .prepare_cached(
                    "UPDATE users SET token_sha256 = ?2, rotated_at = ?3 WHERE name = ?1",
                )?
                .execute(params![name, digest, now])?;
            let ended = transaction
                .prepare_cached("DELETE FROM console_logins WHERE user_name = ?1")?
                .execute([name])?;
            Ok((load(transaction, name)?, ended))
        })
        .map(|(user, ended)| (user, token, ended))
    }

    /// Removes the user, in one transaction: their row (so their token stops working),
    /// their grants and their console logins. Their tasks, approvals and audit rows stay,
    /// naming them. [`Error::LastOwner`] for the only owner. Returns the user as they
    /// were and how many logins ended.
    pub(crate) fn remove_user(&self, name: &str) -> Result<(UserRecord, usize)> {
        self.write(|transaction| {
            let user = load(transaction, name)?;
            if user.role == Role::Owner && owners(transaction)? <= 1 {
                return Err(Error::LastOwner {
                    name: name.to_owned(),
                });
            }
            let ended = transaction
                .prepare_cached("DELETE FROM console_logins WHERE user_name = ?1")?
                .execute([name])?;
            transaction
                .prepare_cached("DELETE FROM user_grants WHERE user_name = ?1")?
                .execute([name])?;
            transaction
                .prepare_cached("DELETE FROM users WHERE name = ?1")?
                .execute([name])?;
            Ok((user, ended))
        })
    }

    /// Gives the user `role`; [`Error::LastOwner`] when that would leave no owner.
    /// Returns the user as they are now and their role before.
    pub(crate) fn set_user_role(&self, name: &str, role: Role) -> Result<(UserRecord, Role)> {
        self.write(|transaction| {
            let before = load(transaction, name)?.role;
            if before == Role::Owner && role != Role::Owner && owners(transaction)? <= 1 {
                return Err(Error::LastOwner {
                    name: name.to_owned(),
                });
            }
            transaction
                .prepare_cached("UPDATE users SET role = ?2 WHERE name = ?1")?
                .execute(params![name, role.as_str()])?;
            Ok((load(transaction, name)?, before))
        })
    }

    /// The user whose token is `token`, if any.
    pub(crate) fn user_by_token(&self, token: &str) -> Result<Option<UserRecord>> {
        if !token.starts_with(USER_TOKEN_PREFIX) {
            return Ok(None);
        }
        let digest = ids::login_digest(token);
        self.read(|connection| {
            let name: Option<String> = connection
                .prepare_cached("SELECT name FROM users WHERE token_sha256 = ?1")?
                .query_row([digest], |row| row.get(0))
                .optional()?;
            name.map(|name| load(connection, &name)).transpose()
        })
    }

    /// Starts a console login for the user `name` that lasts `ttl`; returns its secret
    /// id. Expired logins are purged on the way.
    pub(crate) fn create_user_login(&self, name: &str, ttl: Duration) -> Result<String> {
        let login = ids::new_login_id()?;
        let digest = ids::login_digest(&login);
        let now = self.now();
        let expires_at = now.saturating_add(ttl).as_millis();
        let now = now.as_millis();
        self.write(|transaction| {
            load(transaction, name)?;
            transaction
                .prepare_cached("DELETE FROM console_logins WHERE expires_at <= ?1")?
                .execute([now])?;
            transaction
                .prepare_cached(
                    "INSERT INTO console_logins (id_sha256, created_at, expires_at, user_name) \
                     VALUES (?1, ?2, ?3, ?4)",
                )?
                .execute(params![digest, now, expires_at, name])?;
            Ok(())
        })?;
        Ok(login)
    }

    /// Who the live login `login` belongs to; `None` if it does not exist or expired.
    pub(crate) fn login_owner(&self, login: &str) -> Result<Option<LoginOwner>> {
        let digest = ids::login_digest(login);
        let now = self.now().as_millis();
        self.read(|connection| {
            let row: Option<Option<String>> = connection
                .prepare_cached(
                    "SELECT user_name FROM console_logins WHERE id_sha256 = ?1 \
                     AND expires_at > ?2",
                )?
                .query_row(params![digest, now], |row| row.get(0))
                .optional()?;
            Ok(row.map(|user| user.map_or(LoginOwner::Server, LoginOwner::User)))
        })
    }

    /// Creates a `queued` task as [`crate::Store::create_task`] does, recording `user` (when
    /// given) as its creator on the task and its `task_created` audit row.
    pub(crate) fn create_task_as(&self, new: NewTask, user: Option<&str>) -> Result<TaskRecord> {
        let now = self.now();
        self.write(|transaction| tasks::insert_as(transaction, new, user, now))
    }

    /// Records `user` as the creator of task `id` when none is recorded yet (a chat
    /// turn's task, created by the session code that knows no users).
    pub(crate) fn set_task_user(&self, id: &pp_types::TaskId, user: &str) -> Result<()> {
        self.write(|transaction| {
            transaction
                .prepare_cached(
                    "UPDATE tasks SET created_by_user = ?2 \
                     WHERE id = ?1 AND created_by_user IS NULL",
                )?
                .execute(params![id.as_str(), user])?;
            Ok(())
        })
    }

    /// Records the team user who created the chat session `id`.
    pub(crate) fn set_chat_session_user(&self, id: &str, user: &str) -> Result<()> {
        self.write(|transaction| {
            let changed = transaction
                .prepare_cached("UPDATE chat_sessions SET created_by_user = ?2 WHERE id = ?1")?
                .execute(params![id, user])?;
            if changed == 0 {
                return Err(Error::NotFound {
                    what: "session",
                    id: id.to_owned(),
                });
            }
            Ok(())
        })
    }

    /// The team user who created the chat session `id` (`None`: none recorded);
    /// [`Error::NotFound`] for an unknown session.
    pub(crate) fn chat_session_user(&self, id: &str) -> Result<Option<String>> {
        self.read(|connection| {
            connection
                .prepare_cached("SELECT created_by_user FROM chat_sessions WHERE id = ?1")?
                .query_row([id], |row| row.get(0))
                .optional()?
                .ok_or_else(|| Error::NotFound {
                    what: "session",
                    id: id.to_owned(),
                })
        })
    }
}

/// A fresh user token: the prefix and 256 random bits in hex.
fn new_token() -> Result<String> {
    Ok(format!("{USER_TOKEN_PREFIX}{}", ids::new_login_id()?))
}

/// How many owners there are.
fn owners(connection: &Connection) -> Result<i64> {
    Ok(connection
        .prepare_cached("SELECT COUNT(*) FROM users WHERE role = 'owner'")?
        .query_row([], |row| row.get(0))?)
}

fn exists(connection: &Connection, name: &str) -> Result<bool> {
    Ok(connection
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM users WHERE name = ?1)")?
        .query_row([name], |row| row.get(0))?)
}

/// Reads one user with its grants.
fn load(connection: &Connection, name: &str) -> Result<UserRecord> {
    let row: Option<(String, i64, Option<i64>)> = connection
        .prepare_cached("SELECT role, created_at, rotated_at FROM users WHERE name = ?1")?
        .query_row([name], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .optional()?;
    let Some((role, created_at, rotated_at)) = row else {
        return Err(Error::NotFound {
            what: "user",
            id: name.to_owned(),
        });
    };
    let role = mapping::decode_name("users", "role", name, role)?;
    let workspaces = connection
        .prepare_cached(
            "SELECT workspace FROM user_grants WHERE user_name = ?1 ORDER BY workspace",
        )?
        .query_map([name], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(UserRecord {
        name: name.to_owned(),
        role,
        workspaces,
        created_at: Timestamp::from_millis(created_at),
        rotated_at: rotated_at.map(Timestamp::from_millis),
    })
}
