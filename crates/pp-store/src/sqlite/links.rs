//! Approval links (the `approval_links` table, migration 0020). Only the SHA-256 of a
//! link's token is stored, so a copy of the database hands out no way to decide.

use pp_types::{ApprovalId, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteStore as Store;
use crate::error::{Error, Result};
use crate::ids;
use crate::mapping;
use crate::types::{ApprovalLink, LinkEnd, NewApprovalLink};

const SELECT: &str = "SELECT approval_id, fingerprint, user_name, created_at, expires_at, \
                      ended_at, ended FROM approval_links WHERE token_sha256 = ?1";

impl Store {
    /// Creates a link to `new.approval_id` lasting `new.ttl`; returns it and its token
    /// (64 hex characters, 256 random bits), which is not stored.
    pub(crate) fn create_approval_link(
        &self,
        new: NewApprovalLink,
    ) -> Result<(ApprovalLink, String)> {
        let token = ids::new_login_id()?;
        let digest = ids::login_digest(&token);
        let now = self.now();
        let expires_at = now.saturating_add(new.ttl);
        self.write(|transaction| {
            let exists: bool = transaction
                .prepare_cached("SELECT EXISTS (SELECT 1 FROM approvals WHERE id = ?1)")?
                .query_row([new.approval_id.as_str()], |row| row.get(0))?;
            if !exists {
                return Err(Error::not_found("approval", new.approval_id.as_str()));
            }
            transaction
                .prepare_cached(
                    "INSERT INTO approval_links (token_sha256, approval_id, fingerprint, \
                     user_name, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?
                .execute(params![
                    digest,
                    new.approval_id.as_str(),
                    new.fingerprint,
                    new.user,
                    now.as_millis(),
                    expires_at.as_millis()
                ])?;
            Ok(())
        })?;
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
    pub(crate) fn approval_link(&self, token: &str) -> Result<Option<ApprovalLink>> {
        let digest = ids::login_digest(token);
        self.read(|connection| load(connection, &digest))
    }

    /// Ends the link `token` with `ended`, once: only if it is still open (`from:
    /// None`) — and, to end it `used`, not expired; to end it `expired`, expired — or
    /// (`from: Some(end)`) if it ended `end` (what a claimed link whose decision did not
    /// happen is corrected to). `false` when it was not in that state.
    pub(crate) fn end_approval_link(
        &self,
        token: &str,
        ended: LinkEnd,
        from: Option<LinkEnd>,
    ) -> Result<bool> {
        let digest = ids::login_digest(token);
        let now = self.now().as_millis();
        let changed = self.write(|transaction| {
            let changed = match from {
                Some(from) => transaction
                    .prepare_cached(
                        "UPDATE approval_links SET ended = ?2, ended_at = ?3 \
                         WHERE token_sha256 = ?1 AND ended = ?4",
                    )?
                    .execute(params![digest, ended.as_str(), now, from.as_str()])?,
                None => {
                    let sql = match ended {
                        LinkEnd::Used => {
                            "UPDATE approval_links SET ended = ?2, ended_at = ?3 \
                             WHERE token_sha256 = ?1 AND ended_at IS NULL AND expires_at > ?3"
                        }
                        LinkEnd::Expired => {
                            "UPDATE approval_links SET ended = ?2, ended_at = ?3 \
                             WHERE token_sha256 = ?1 AND ended_at IS NULL AND expires_at <= ?3"
                        }
                        _ => {
                            "UPDATE approval_links SET ended = ?2, ended_at = ?3 \
                             WHERE token_sha256 = ?1 AND ended_at IS NULL"
                        }
                    };
                    transaction.prepare_cached(sql)?.execute(params![
                        digest,
                        ended.as_str(),
                        now
                    ])?
                }
            };
            Ok(changed)
        })?;
        Ok(changed == 1)
    }

    /// Ends every open link of `approval` `revoked`; returns how many.
    pub(crate) fn revoke_approval_links(&self, approval: &ApprovalId) -> Result<usize> {
        let now = self.now().as_millis();
        self.write(|transaction| {
            Ok(transaction
                .prepare_cached(
                    "UPDATE approval_links SET ended = 'revoked', ended_at = ?2 \
                     WHERE approval_id = ?1 AND ended_at IS NULL",
                )?
                .execute(params![approval.as_str(), now])?)
        })
    }

    /// Ends every open link bound to the team user `user` `revoked`; returns how many.
    pub(crate) fn revoke_user_links(&self, user: &str) -> Result<usize> {
        let now = self.now().as_millis();
        self.write(|transaction| {
            Ok(transaction
                .prepare_cached(
                    "UPDATE approval_links SET ended = 'revoked', ended_at = ?2 \
                     WHERE user_name = ?1 AND ended_at IS NULL",
                )?
                .execute(params![user, now])?)
        })
    }
}

/// The link whose token hashes to `digest`.
fn load(connection: &Connection, digest: &str) -> Result<Option<ApprovalLink>> {
    type Row = (
        String,
        Option<String>,
        Option<String>,
        i64,
        i64,
        Option<i64>,
        Option<String>,
    );
    let row: Option<Row> = connection
        .prepare_cached(SELECT)?
        .query_row([digest], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
                row.get(5)?,
                row.get(6)?,
            ))
        })
        .optional()?;
    let Some((approval, fingerprint, user, created_at, expires_at, ended_at, ended)) = row else {
        return Ok(None);
    };
    let ended = ended
        .map(|ended| mapping::decode_name("approval_links", "ended", &approval, ended))
        .transpose()?;
    Ok(Some(ApprovalLink {
        approval_id: ApprovalId(approval),
        fingerprint,
        user,
        created_at: Timestamp::from_millis(created_at),
        expires_at: Timestamp::from_millis(expires_at),
        ended_at: ended_at.map(Timestamp::from_millis),
        ended,
    }))
}
