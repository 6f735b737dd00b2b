//! Remote decisions through a messenger (`migrations/postgres/0012_remote_messages.sql`),
//! as on SQLite: the card messages a bot sent, the update offset, the poller's lease
//! and the per-chat audit window of refused taps.

use std::time::Duration;

use pp_types::{ApprovalId, Timestamp};
use tokio_postgres::Row;

use super::{PgStore, execute, query, query_opt};
use crate::error::Result;
use crate::types::{NewRemoteMessage, RemoteMessage};

/// The columns [`message_of`] reads, in order.
const COLUMNS: &str = "messenger, chat_id, message_id, approval_id, fingerprint, callback_id, \
                       sent_at, decided_at, outcome";

fn message_of(row: &Row) -> Result<RemoteMessage> {
    Ok(RemoteMessage {
        messenger: row.try_get(0)?,
        chat_id: row.try_get(1)?,
        message_id: row.try_get(2)?,
        approval_id: ApprovalId(row.try_get(3)?),
        fingerprint: row.try_get(4)?,
        callback_id: row.try_get(5)?,
        sent_at: Timestamp::from_millis(row.try_get(6)?),
        decided_at: row
            .try_get::<_, Option<i64>>(7)?
            .map(Timestamp::from_millis),
        outcome: row.try_get(8)?,
    })
}

impl PgStore {
    /// Records a card message a bot sent.
    pub(crate) async fn add_remote_message(&self, new: NewRemoteMessage) -> Result<RemoteMessage> {
        let now = self.now();
        execute(
            &self.client().await?,
            "INSERT INTO remote_messages (messenger, chat_id, message_id, approval_id, \
             fingerprint, callback_id, sent_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            &[
                &new.messenger,
                &new.chat_id,
                &new.message_id,
                &new.approval_id.as_str(),
                &new.fingerprint,
                &new.callback_id,
                &now.as_millis(),
            ],
        )
        .await?;
        Ok(RemoteMessage {
            messenger: new.messenger,
            chat_id: new.chat_id,
            message_id: new.message_id,
            approval_id: new.approval_id,
            fingerprint: new.fingerprint,
            callback_id: new.callback_id,
            sent_at: now,
            decided_at: None,
            outcome: None,
        })
    }

    /// The card message `message_id` of `chat_id`, if the bot sent it.
    pub(crate) async fn remote_message(
        &self,
        messenger: &str,
        chat_id: &str,
        message_id: &str,
    ) -> Result<Option<RemoteMessage>> {
        query_opt(
            &self.client().await?,
            &format!(
                "SELECT {COLUMNS} FROM remote_messages \
                 WHERE messenger = $1 AND chat_id = $2 AND message_id = $3"
            ),
            &[&messenger, &chat_id, &message_id],
        )
        .await?
        .as_ref()
        .map(message_of)
        .transpose()
    }

    /// Every card message about `approval`, oldest first.
    pub(crate) async fn remote_messages_for_approval(
        &self,
        messenger: &str,
        approval: &ApprovalId,
    ) -> Result<Vec<RemoteMessage>> {
        query(
            &self.client().await?,
            &format!(
                "SELECT {COLUMNS} FROM remote_messages \
                 WHERE messenger = $1 AND approval_id = $2 ORDER BY sent_at, chat_id"
            ),
            &[&messenger, &approval.as_str()],
        )
        .await?
        .iter()
        .map(message_of)
        .collect()
    }

    /// The card messages not settled yet, oldest first.
    pub(crate) async fn live_remote_messages(&self, messenger: &str) -> Result<Vec<RemoteMessage>> {
        query(
            &self.client().await?,
            &format!(
                "SELECT {COLUMNS} FROM remote_messages \
                 WHERE messenger = $1 AND decided_at IS NULL ORDER BY sent_at, chat_id"
            ),
            &[&messenger],
        )
        .await?
        .iter()
        .map(message_of)
        .collect()
    }

    /// Settles a card message with `outcome`, once: `true` if this call did.
    pub(crate) async fn settle_remote_message(
        &self,
        messenger: &str,
        chat_id: &str,
        message_id: &str,
        outcome: &str,
    ) -> Result<bool> {
        let now = self.now().as_millis();
        let changed = execute(
            &self.client().await?,
            "UPDATE remote_messages SET decided_at = $4, outcome = $5 \
             WHERE messenger = $1 AND chat_id = $2 AND message_id = $3 AND decided_at IS NULL",
            &[&messenger, &chat_id, &message_id, &now, &outcome],
        )
        .await?;
        Ok(changed == 1)
    }

    /// The stored update offset of `messenger` and when it was stored, if ever.
    pub(crate) async fn remote_offset(&self, messenger: &str) -> Result<Option<(i64, Timestamp)>> {
        let Some(row) = query_opt(
            &self.client().await?,
            "SELECT next_offset, polled_at FROM remote_offsets WHERE messenger = $1",
            &[&messenger],
        )
        .await?
        else {
            return Ok(None);
        };
        Ok(Some((
            row.try_get(0)?,
            Timestamp::from_millis(row.try_get(1)?),
        )))
    }

    /// Stores the update offset of `messenger` (it never goes back) and that it was read
    /// now.
    pub(crate) async fn set_remote_offset(&self, messenger: &str, offset: i64) -> Result<()> {
        execute(
            &self.client().await?,
            "INSERT INTO remote_offsets (messenger, next_offset, polled_at) VALUES ($1, $2, $3) \
             ON CONFLICT (messenger) DO UPDATE SET \
             next_offset = GREATEST(remote_offsets.next_offset, excluded.next_offset), \
             polled_at = excluded.polled_at",
            &[&messenger, &offset, &self.now().as_millis()],
        )
        .await?;
        Ok(())
    }

    /// Takes or renews the poller lease of `messenger` for `holder` until now + `ttl`:
    /// `true` if `holder` holds it now.
    pub(crate) async fn acquire_remote_lease(
        &self,
        messenger: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool> {
        let now = self.now();
        let until = now.saturating_add(ttl).as_millis();
        let changed = execute(
            &self.client().await?,
            "INSERT INTO remote_leases (messenger, holder, expires_at) VALUES ($1, $2, $3) \
             ON CONFLICT (messenger) DO UPDATE SET holder = excluded.holder, \
             expires_at = excluded.expires_at \
             WHERE remote_leases.holder = excluded.holder OR remote_leases.expires_at <= $4",
            &[&messenger, &holder, &until, &now.as_millis()],
        )
        .await?;
        Ok(changed == 1)
    }

    /// Gives the lease up if `holder` holds it.
    pub(crate) async fn release_remote_lease(&self, messenger: &str, holder: &str) -> Result<()> {
        execute(
            &self.client().await?,
            "DELETE FROM remote_leases WHERE messenger = $1 AND holder = $2",
            &[&messenger, &holder],
        )
        .await?;
        Ok(())
    }

    /// Whether a refused tap in `chat_id` is audited now: `true` (and the window
    /// restarts) unless one was audited within `window`.
    pub(crate) async fn note_remote_refusal(
        &self,
        messenger: &str,
        chat_id: &str,
        window: Duration,
    ) -> Result<bool> {
        let now = self.now();
        let since = now.saturating_sub(window).as_millis();
        let changed = execute(
            &self.client().await?,
            "INSERT INTO remote_refusals (messenger, chat_id, audited_at) VALUES ($1, $2, $3) \
             ON CONFLICT (messenger, chat_id) DO UPDATE SET audited_at = excluded.audited_at \
             WHERE remote_refusals.audited_at <= $4",
            &[&messenger, &chat_id, &now.as_millis(), &since],
        )
        .await?;
        Ok(changed == 1)
    }
}
