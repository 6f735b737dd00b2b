//! Console login sessions. Only the SHA-256 of a session id is stored, so a copy of the
//! database does not hand out logged-in sessions.

use std::time::Duration;

use rusqlite::params;

use crate::{Result, Store, ids};

impl Store {
    /// Starts a session that lasts `ttl` and returns its id (64 hex characters, 256
    /// random bits). Expired sessions are purged on the way.
    pub fn create_session(&self, ttl: Duration) -> Result<String> {
        let session = ids::new_session_id()?;
        let digest = ids::session_digest(&session);
        let now = self.now();
        let expires_at = now.saturating_add(ttl).as_millis();
        let now = now.as_millis();
        self.write(|transaction| {
            transaction
                .prepare_cached("DELETE FROM sessions WHERE expires_at <= ?1")?
                .execute([now])?;
            transaction
                .prepare_cached(
                    "INSERT INTO sessions (id_sha256, created_at, expires_at) \
                     VALUES (?1, ?2, ?3)",
                )?
                .execute(params![digest, now, expires_at])?;
            Ok(())
        })?;
        Ok(session)
    }

    /// Whether `session` exists and has not expired.
    pub fn session_valid(&self, session: &str) -> Result<bool> {
        let digest = ids::session_digest(session);
        let now = self.now().as_millis();
        self.read(|connection| {
            Ok(connection
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM sessions WHERE id_sha256 = ?1 \
                     AND expires_at > ?2)",
                )?
                .query_row(params![digest, now], |row| row.get(0))?)
        })
    }

    /// Ends `session` (logging out); a no-op for an unknown session.
    pub fn delete_session(&self, session: &str) -> Result<()> {
        let digest = ids::session_digest(session);
        self.write(|transaction| {
            transaction
                .prepare_cached("DELETE FROM sessions WHERE id_sha256 = ?1")?
                .execute([digest])?;
            Ok(())
        })
    }

    /// Ends every console session (after the API token was rotated); returns how many.
    pub fn delete_all_sessions(&self) -> Result<usize> {
        self.write(|transaction| Ok(transaction.execute("DELETE FROM sessions", [])?))
    }
}
