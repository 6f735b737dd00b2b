//! Console logins (the `console_logins` table). Only the SHA-256 of a login's secret id is
//! stored, so a copy of the database does not hand out logged-in browsers.

use std::time::Duration;

use super::{PgStore, count, execute, query_one};
use crate::error::Result;
use crate::ids;

impl PgStore {
    /// Starts a console login that lasts `ttl` and returns its secret id (64 hex
    /// characters, 256 random bits). Expired logins are purged on the way.
    pub(crate) async fn create_login(&self, ttl: Duration) -> Result<String> {
        let login = ids::new_login_id()?;
        let digest = ids::login_digest(&login);
        let now = self.now();
        let expires_at = now.saturating_add(ttl).as_millis();
        let now = now.as_millis();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        execute(
            &transaction,
            "DELETE FROM console_logins WHERE expires_at <= $1",
            &[&now],
        )
        .await?;
        execute(
            &transaction,
            "INSERT INTO console_logins (id_sha256, created_at, expires_at) VALUES ($1, $2, $3)",
            &[&digest, &now, &expires_at],
        )
        .await?;
        transaction.commit().await?;
        Ok(login)
    }

    /// Whether `login` exists and has not expired.
    pub(crate) async fn login_valid(&self, login: &str) -> Result<bool> {
        let digest = ids::login_digest(login);
        let now = self.now().as_millis();
        let row = query_one(
            &self.client().await?,
            "SELECT EXISTS (SELECT 1 FROM console_logins WHERE id_sha256 = $1 \
             AND expires_at > $2)",
            &[&digest, &now],
        )
        .await?;
        Ok(row.try_get(0)?)
    }

    /// Ends `login` (logging out); a no-op for an unknown login.
    pub(crate) async fn delete_login(&self, login: &str) -> Result<()> {
        let digest = ids::login_digest(login);
        execute(
            &self.client().await?,
            "DELETE FROM console_logins WHERE id_sha256 = $1",
            &[&digest],
        )
        .await?;
        Ok(())
    }

    /// Ends every console login (after the API token was rotated); returns how many.
    pub(crate) async fn delete_all_logins(&self) -> Result<usize> {
        let deleted = execute(&self.client().await?, "DELETE FROM console_logins", &[]).await?;
        Ok(count(deleted))
    }
}
