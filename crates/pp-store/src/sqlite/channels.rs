//! Webhook channels, their delivery log and the seen-signature record (`channels`,
//! `channel_deliveries`, `webhook_signatures`; see `migrations/sqlite/0010_channels.sql`).
//!
//! The store keeps a channel's sealed secret as opaque bytes: pp-tasks generates,
//! seals, opens and checks it. [`crate::Store::claim_signature`] is the replay defence: a unique
//! key per (channel, signature), inserted once across every process sharing the database
//! and kept until the replay window ends.

use pp_types::{TaskId, Timestamp};
use rusqlite::{Connection, ErrorCode, OptionalExtension, Row, params};

use super::SqliteStore as Store;
use crate::error::{Error, Result};
use crate::types::{
    Channel, ChannelChange, DELIVERIES_KEPT, DeliveryRecord, DeliveryStatus, NewChannel,
};

const COLUMNS: &str =
    "name, template, workspace, enabled, secret_sealed, created_at, updated_at, rotated_at";

fn channel_from_row(row: &Row<'_>) -> rusqlite::Result<Channel> {
    Ok(Channel {
        name: row.get(0)?,
        template: row.get(1)?,
        workspace: row.get(2)?,
        enabled: row.get::<_, i64>(3)? != 0,
        secret_sealed: row.get(4)?,
        created_at: Timestamp::from_millis(row.get(5)?),
        updated_at: Timestamp::from_millis(row.get(6)?),
        rotated_at: row.get::<_, Option<i64>>(7)?.map(Timestamp::from_millis),
    })
}

fn find(connection: &Connection, name: &str) -> Result<Option<Channel>> {
    Ok(connection
        .prepare_cached(&format!("SELECT {COLUMNS} FROM channels WHERE name = ?1"))?
        .query_row([name], channel_from_row)
        .optional()?)
}

impl Store {
    /// Creates a channel (enabled). Fails with [`Error::NameTaken`] when the name is used.
    pub(crate) fn create_channel(&self, new: &NewChannel) -> Result<Channel> {
        let now = self.now().as_millis();
        self.write(|transaction| {
            let inserted = transaction
                .prepare_cached(
                    "INSERT INTO channels (name, template, workspace, enabled, secret_sealed, \
                     created_at, updated_at) VALUES (?1, ?2, ?3, 1, ?4, ?5, ?5)",
                )?
                .execute(params![
                    new.name,
                    new.template,
                    new.workspace,
                    new.secret_sealed,
                    now
                ]);
            match inserted {
                Err(rusqlite::Error::SqliteFailure(failure, _))
                    if failure.code == ErrorCode::ConstraintViolation =>
                {
                    return Err(Error::NameTaken {
                        what: "channel",
                        name: new.name.clone(),
                    });
                }
                other => other?,
            };
            find(transaction, &new.name)?.ok_or_else(|| Error::not_found("channel", &new.name))
        })
    }

    /// The channel named `name`, if any.
    pub(crate) fn find_channel(&self, name: &str) -> Result<Option<Channel>> {
        self.read(|connection| find(connection, name))
    }

    /// Every channel, by name.
    pub(crate) fn list_channels(&self) -> Result<Vec<Channel>> {
        self.read(|connection| {
            let mut statement = connection
                .prepare_cached(&format!("SELECT {COLUMNS} FROM channels ORDER BY name"))?;
            let rows = statement.query_map([], channel_from_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Applies `change` to the channel named `name` and returns it as it is now.
    pub(crate) fn edit_channel(&self, name: &str, change: ChannelChange) -> Result<Channel> {
        let now = self.now().as_millis();
        self.write(|transaction| {
            let mut channel =
                find(transaction, name)?.ok_or_else(|| Error::not_found("channel", name))?;
            if let Some(template) = change.template {
                channel.template = template;
            }
            if let Some(workspace) = change.workspace {
                channel.workspace = workspace;
            }
            if let Some(enabled) = change.enabled {
                channel.enabled = enabled;
            }
            let rotated = change.secret_sealed.is_some();
            if let Some(secret) = change.secret_sealed {
                channel.secret_sealed = secret;
            }
            transaction
                .prepare_cached(
                    "UPDATE channels SET template = ?2, workspace = ?3, enabled = ?4, \
                     secret_sealed = ?5, updated_at = ?6, \
                     rotated_at = CASE WHEN ?7 THEN ?6 ELSE rotated_at END WHERE name = ?1",
                )?
                .execute(params![
                    name,
                    channel.template,
                    channel.workspace,
                    i64::from(channel.enabled),
                    channel.secret_sealed,
                    now,
                    rotated
                ])?;
            find(transaction, name)?.ok_or_else(|| Error::not_found("channel", name))
        })
    }

    /// Replaces the sealed secret of `name` with `sealed` only if it is still `expected`.
    pub(crate) fn reseal_channel(
        &self,
        name: &str,
        expected: &[u8],
        sealed: &[u8],
    ) -> Result<bool> {
        self.write(|transaction| {
            Ok(transaction
                .prepare_cached(
                    "UPDATE channels SET secret_sealed = ?3 WHERE name = ?1 AND secret_sealed = ?2",
                )?
                .execute(params![name, expected, sealed])?
                == 1)
        })
    }

    /// Removes the channel named `name` and its delivery log (the tasks it created stay).
    pub(crate) fn remove_channel(&self, name: &str) -> Result<()> {
        self.write(|transaction| {
            let removed = transaction
                .prepare_cached("DELETE FROM channels WHERE name = ?1")?
                .execute([name])?;
            if removed == 0 {
                return Err(Error::not_found("channel", name));
            }
            Ok(())
        })
    }

    /// Records a delivery to the known channel `channel` and trims its log to the newest
    /// [`crate::DELIVERIES_KEPT`] rows. A channel removed meanwhile records nothing.
    pub(crate) fn record_delivery(
        &self,
        channel: &str,
        status: DeliveryStatus,
        reason: Option<&str>,
        task_id: Option<&TaskId>,
    ) -> Result<()> {
        let now = self.now().as_millis();
        let task_id = task_id.map(|id| id.as_str().to_owned());
        self.write(|transaction| {
            transaction
                .prepare_cached(
                    "INSERT INTO channel_deliveries (channel, at, status, reason, task_id) \
                     SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM channels WHERE name = ?1)",
                )?
                .execute(params![channel, now, status.as_str(), reason, task_id])?;
            transaction
                .prepare_cached(
                    "DELETE FROM channel_deliveries WHERE channel = ?1 AND id <= \
                     (SELECT id FROM channel_deliveries WHERE channel = ?1 \
                      ORDER BY id DESC LIMIT 1 OFFSET ?2)",
                )?
                .execute(params![channel, DELIVERIES_KEPT])?;
            Ok(())
        })
    }

    /// The newest `limit` deliveries to `channel`, newest first.
    pub(crate) fn channel_deliveries(
        &self,
        channel: &str,
        limit: usize,
    ) -> Result<Vec<DeliveryRecord>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(|connection| {
            if find(connection, channel)?.is_none() {
                return Err(Error::not_found("channel", channel));
            }
            let mut statement = connection.prepare_cached(
                "SELECT id, channel, at, status, reason, task_id FROM channel_deliveries \
                 WHERE channel = ?1 ORDER BY id DESC LIMIT ?2",
            )?;
            let rows = statement.query_map(params![channel, limit], |row| {
                let status: String = row.get(3)?;
                Ok(DeliveryRecord {
                    id: row.get(0)?,
                    channel: row.get(1)?,
                    at: Timestamp::from_millis(row.get(2)?),
                    // The column's CHECK admits only the three names.
                    status: DeliveryStatus::parse(&status).unwrap_or(DeliveryStatus::Refused),
                    reason: row.get(4)?,
                    task_id: row.get::<_, Option<String>>(5)?.map(TaskId),
                })
            })?;
            let deliveries = rows.collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(deliveries)
        })
    }

    /// Records `key` (a channel's name and a delivery's signature) as seen until
    /// `expires_at`; `false` when it was already recorded and has not expired (a
    /// replay), in this process or any other sharing the database. Expired keys are
    /// purged on the way.
    pub(crate) fn claim_signature(&self, key: &str, expires_at: Timestamp) -> Result<bool> {
        let now = self.now().as_millis();
        self.write(|transaction| {
            transaction
                .prepare_cached("DELETE FROM webhook_signatures WHERE expires_at <= ?1")?
                .execute([now])?;
            let inserted = transaction
                .prepare_cached(
                    "INSERT INTO webhook_signatures (key, expires_at) VALUES (?1, ?2) \
                     ON CONFLICT (key) DO NOTHING",
                )?
                .execute(params![key, expires_at.as_millis()])?;
            Ok(inserted == 1)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use pp_types::ManualClock;

    use super::*;

    fn new_channel(name: &str) -> NewChannel {
        NewChannel {
            name: name.into(),
            template: None,
            workspace: None,
            secret_sealed: vec![1, 2, 3],
        }
    }

    #[test]
    fn channels_are_created_edited_rotated_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        let channel = store.create_channel(&new_channel("forms")).unwrap();
        assert!(channel.enabled);
        assert!(matches!(
            store.create_channel(&new_channel("forms")),
            Err(Error::NameTaken { .. })
        ));
        let edited = store
            .edit_channel(
                "forms",
                ChannelChange {
                    enabled: Some(false),
                    secret_sealed: Some(vec![9]),
                    template: Some(Some("{{body}}".into())),
                    ..ChannelChange::default()
                },
            )
            .unwrap();
        assert!(!edited.enabled);
        assert_eq!(edited.secret_sealed, vec![9]);
        assert!(edited.rotated_at.is_some());
        assert_eq!(edited.template.as_deref(), Some("{{body}}"));
        store
            .record_delivery(
                "forms",
                DeliveryStatus::Refused,
                Some("bad signature"),
                None,
            )
            .unwrap();
        let deliveries = store.channel_deliveries("forms", 10).unwrap();
        assert_eq!(deliveries.len(), 1);
        assert_eq!(deliveries[0].status, DeliveryStatus::Refused);
        store.remove_channel("forms").unwrap();
        assert!(store.find_channel("forms").unwrap().is_none());
        assert!(matches!(
            store.remove_channel("forms"),
            Err(Error::NotFound { .. })
        ));
    }

    #[test]
    fn the_delivery_log_keeps_the_newest_rows() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("db")).unwrap();
        store.create_channel(&new_channel("forms")).unwrap();
        for _ in 0..DELIVERIES_KEPT + 5 {
            store
                .record_delivery("forms", DeliveryStatus::RateLimited, None, None)
                .unwrap();
        }
        let kept = store.channel_deliveries("forms", 5000).unwrap();
        assert_eq!(kept.len(), usize::try_from(DELIVERIES_KEPT).unwrap());
        assert_eq!(kept[0].id, DELIVERIES_KEPT + 5);
    }

    #[test]
    fn a_signature_is_claimed_once_across_stores_until_it_expires() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_000_000)));
        let path = dir.path().join("db");
        let one = Store::open_with_clock(&path, clock.clone()).unwrap();
        let two = Store::open_with_clock(&path, clock.clone()).unwrap();
        let expires = Timestamp::from_millis(1_000_000).saturating_add(Duration::from_secs(600));
        assert!(one.claim_signature("forms:abc", expires).unwrap());
        assert!(!two.claim_signature("forms:abc", expires).unwrap());
        assert!(!one.claim_signature("forms:abc", expires).unwrap());
        assert!(two.claim_signature("other:abc", expires).unwrap());
        clock.advance(Duration::from_secs(601));
        let later = expires.saturating_add(Duration::from_secs(600));
        assert!(two.claim_signature("forms:abc", later).unwrap());
    }
}
