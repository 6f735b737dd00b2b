//! Approval links (the `approval_links` table, migration 0011). Only the SHA-256 of a
//! link's token is stored, so a copy of the database hands out no way to decide.

use pp_types::{ApprovalId, Timestamp};

use super::{PgStore, count, execute, query_one, query_opt};
use crate::error::{Error, Result};
use crate::ids;
use crate::mapping;
use crate::types::{ApprovalLink, LinkEnd, NewApprovalLink};

impl PgStore {
    /// Creates a link to `new.approval_id` lasting `new.ttl`; returns it and its token
    /// (64 hex characters, 256 random bits), which is not stored.
    pub(crate) async fn create_approval_link(
        &self,
        new: NewApprovalLink,
    ) -> Result<(ApprovalLink, String)> {
        let token = ids::new_login_id()?;
        let digest = ids::login_digest(&token);
        let now = self.now();
        let expires_at = now.saturating_add(new.ttl);
        let client = self.client().await?;
        let exists: bool = query_one(
            &client,
            "SELECT EXISTS (SELECT 1 FROM approvals WHERE id = $1)",
            &[&new.approval_id.as_str()],
        )
        .await?
        .try_get(0)?;
        if !exists {
            return Err(Error::not_found("approval", new.approval_id.as_str()));
        }
        execute(
            &client,
            "INSERT INTO approval_links (token_sha256, approval_id, fingerprint, user_name, \
             created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &digest,
                &new.approval_id.as_str(),
                &new.fingerprint,
                &new.user,
                &now.as_millis(),
                &expires_at.as_millis(),
            ],
        )
        .await?;
        let link = ApprovalLink {
            approval_id: new.approval_id,
            fingerprint: new.fingerprint,
            user: new.user,
            created_at: now,
            expires_at,
            ended_at: None,
            ended: None,
        };
        Ok((link, token))
    }

    /// The link whose token is `token`, whatever its state; `None` if there is none.
    pub(crate) async fn approval_link(&self, token: &str) -> Result<Option<ApprovalLink>> {
        let digest = ids::login_digest(token);
        let row = query_opt(
            &self.client().await?,
            "SELECT approval_id, fingerprint, user_name, created_at, expires_at, ended_at, \
             ended FROM approval_links WHERE token_sha256 = $1",
            &[&digest],
        )
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let approval: String = row.try_get(0)?;
        let ended = row
            .try_get::<_, Option<String>>(6)?
            .map(|ended| mapping::decode_name("approval_links", "ended", &approval, ended))
            .transpose()?;
        Ok(Some(ApprovalLink {
            approval_id: ApprovalId(approval),
            fingerprint: row.try_get(1)?,
            user: row.try_get(2)?,
            created_at: Timestamp::from_millis(row.try_get(3)?),
            expires_at: Timestamp::from_millis(row.try_get(4)?),
            ended_at: row
                .try_get::<_, Option<i64>>(5)?
                .map(Timestamp::from_millis),
            ended,
        }))
    }

    /// Ends the link `token` with `ended`, once (see the SQLite backend's method).
    pub(crate) async fn end_approval_link(
        &self,
        token: &str,
        ended: LinkEnd,
        from: Option<LinkEnd>,
    ) -> Result<bool> {
        let digest = ids::login_digest(token);
        let now = self.now().as_millis();
        let client = self.client().await?;
        let changed = match from {
            Some(from) => {
                execute(
                    &client,
                    "UPDATE approval_links SET ended = $2, ended_at = $3 \
                     WHERE token_sha256 = $1 AND ended = $4",
                    &[&digest, &ended.as_str(), &now, &from.as_str()],
                )
                .await?
            }
            None => {
                let sql = match ended {
                    LinkEnd::Used => {
                        "UPDATE approval_links SET ended = $2, ended_at = $3 \
                         WHERE token_sha256 = $1 AND ended_at IS NULL AND expires_at > $3"
                    }
                    LinkEnd::Expired => {
                        "UPDATE approval_links SET ended = $2, ended_at = $3 \
                         WHERE token_sha256 = $1 AND ended_at IS NULL AND expires_at <= $3"
                    }
                    _ => {
                        "UPDATE approval_links SET ended = $2, ended_at = $3 \
                         WHERE token_sha256 = $1 AND ended_at IS NULL"
                    }
                };
                execute(&client, sql, &[&digest, &ended.as_str(), &now]).await?
            }
        };
        Ok(changed == 1)
    }

    /// Ends every open link of `approval` `revoked`; returns how many.
    pub(crate) async fn revoke_approval_links(&self, approval: &ApprovalId) -> Result<usize> {
        let now = self.now().as_millis();
        let ended = execute(
            &self.client().await?,
            "UPDATE approval_links SET ended = 'revoked', ended_at = $2 \
             WHERE approval_id = $1 AND ended_at IS NULL",
            &[&approval.as_str(), &now],
        )
        .await?;
        Ok(count(ended))
    }

    /// Ends every open link bound to the team user `user` `revoked`; returns how many.
    pub(crate) async fn revoke_user_links(&self, user: &str) -> Result<usize> {
        let now = self.now().as_millis();
        let ended = execute(
            &self.client().await?,
            "UPDATE approval_links SET ended = 'revoked', ended_at = $2 \
             WHERE user_name = $1 AND ended_at IS NULL",
            &[&user, &now],
        )
        .await?;
        Ok(count(ended))
    }
}
