//! Console logins (the `console_logins` table). Only the SHA-256 of a login's secret id is
//! stored, so a copy of the database does not hand out logged-in browsers.

use std::time::Duration;

use rusqlite::params;

use super::SqliteStore as Store;
use crate::error::Result;
use crate::ids;

impl Store {
    /// Starts a console login that lasts `ttl` and returns its secret id (64 hex
    /// characters, 256 random bits). Expired logins are purged on the way.
    pub(crate) fn create_login(&self, ttl: Duration) -> Result<String> {
        let login = ids::new_login_id()?;
        let digest = ids::login_digest(&login);
        let now = self.now();
        let expires_at = now.saturating_add(ttl).as_millis();
        let now = now.as_millis();
        self.write(|transaction| {
            transaction
                .prepare_cached("DELETE FROM console_logins WHERE expires_at <= ?1")?
                .execute([now])?;
            transaction
                .prepare_cached(
                    "INSERT INTO console_logins (id_sha256, created_at, expires_at) \
                     VALUES (?1, ?2, ?3)",
                )?
                .execute(params![digest, now, expires_at])?;
            Ok(())
        })?;
        Ok(login)
    }

    /// Whether `login` exists and has not expired.
    pub(crate) fn login_valid(&self, login: &str) -> Result<bool> {
        let digest = ids::login_digest(login);
        let now = self.now().as_millis();
        self.read(|connection| {
            Ok(connection
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM console_logins WHERE id_sha256 = ?1 \
                     AND expires_at > ?2)",
                )?
                .query_row(params![digest, now], |row| row.get(0))?)
        })
    }

    /// Ends `login` (logging out); a no-op for an unknown login.
    pub(crate) fn delete_login(&self, login: &str) -> Result<()> {
        let digest = ids::login_digest(login);
        self.write(|transaction| {
            transaction
                .prepare_cached("DELETE FROM console_logins WHERE id_sha256 = ?1")?
                .execute([digest])?;
            Ok(())
        })
    }

    /// Ends every console login (after the API token was rotated); returns how many.
    pub(crate) fn delete_all_logins(&self) -> Result<usize> {
        self.write(|transaction| Ok(transaction.execute("DELETE FROM console_logins", [])?))
    }
}
