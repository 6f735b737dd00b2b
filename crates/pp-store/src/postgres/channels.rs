//! Webhook channels, their delivery log and the seen-signature record.

use deadpool_postgres::GenericClient;
use pp_types::{TaskId, Timestamp};
use tokio_postgres::Row;

use super::{PgStore, execute, is_unique_violation, query, query_opt};
use crate::error::{Error, Result};
use crate::mapping::limit as row_limit;
use crate::types::{
    Channel, ChannelChange, DELIVERIES_KEPT, DeliveryRecord, DeliveryStatus, NewChannel,
};

const COLUMNS: &str =
    "name, template, workspace, enabled, secret_sealed, created_at, updated_at, rotated_at";

fn channel_from_row(row: &Row) -> Result<Channel> {
    Ok(Channel {
        name: row.try_get(0)?,
        template: row.try_get(1)?,
        workspace: row.try_get(2)?,
        enabled: row.try_get(3)?,
        secret_sealed: row.try_get(4)?,
        created_at: Timestamp::from_millis(row.try_get(5)?),
        updated_at: Timestamp::from_millis(row.try_get(6)?),
        rotated_at: row
            .try_get::<_, Option<i64>>(7)?
            .map(Timestamp::from_millis),
    })
}

async fn find(db: &impl GenericClient, name: &str) -> Result<Option<Channel>> {
    query_opt(
        db,
        &format!("SELECT {COLUMNS} FROM channels WHERE name = $1"),
        &[&name],
    )
    .await?
    .map(|row| channel_from_row(&row))
    .transpose()
}

impl PgStore {
    /// Creates a channel (enabled). Fails with [`Error::NameTaken`] when the name is used.
    pub(crate) async fn create_channel(&self, new: &NewChannel) -> Result<Channel> {
        let now = self.now().as_millis();
        let client = self.client().await?;
        let statement = client
            .prepare_cached(
                "INSERT INTO channels (name, template, workspace, enabled, secret_sealed, \
                 created_at, updated_at) VALUES ($1, $2, $3, TRUE, $4, $5, $5)",
            )
            .await?;
        let inserted = client
            .execute(
                &statement,
                &[
                    &new.name,
                    &new.template,
                    &new.workspace,
                    &new.secret_sealed,
                    &now,
                ],
            )
            .await;
        match inserted {
            Err(error) if is_unique_violation(&error) => {
                return Err(Error::NameTaken {
                    what: "channel",
                    name: new.name.clone(),
                });
            }
            other => other?,
        };
        find(&client, &new.name)
            .await?
            .ok_or_else(|| Error::not_found("channel", &new.name))
    }

    /// The channel named `name`, if any.
    pub(crate) async fn find_channel(&self, name: &str) -> Result<Option<Channel>> {
        find(&self.client().await?, name).await
    }

    /// Every channel, by name.
    pub(crate) async fn list_channels(&self) -> Result<Vec<Channel>> {
        let found = query(
            &self.client().await?,
            &format!("SELECT {COLUMNS} FROM channels ORDER BY name"),
            &[],
        )
        .await?;
        found.iter().map(channel_from_row).collect()
    }

    /// Applies `change` to the channel named `name` and returns it as it is now.
    pub(crate) async fn edit_channel(&self, name: &str, change: ChannelChange) -> Result<Channel> {
        let now = self.now().as_millis();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        query_opt(
            &transaction,
            "SELECT 1 FROM channels WHERE name = $1 FOR NO KEY UPDATE",
            &[&name],
        )
        .await?;
        let mut channel = find(&transaction, name)
            .await?
            .ok_or_else(|| Error::not_found("channel", name))?;
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
        execute(
            &transaction,
            "UPDATE channels SET template = $2, workspace = $3, enabled = $4, \
             secret_sealed = $5, updated_at = $6, \
             rotated_at = CASE WHEN $7 THEN $6 ELSE rotated_at END WHERE name = $1",
            &[
                &name,
                &channel.template,
                &channel.workspace,
                &channel.enabled,
                &channel.secret_sealed,
                &now,
                &rotated,
            ],
        )
        .await?;
        let channel = find(&transaction, name)
            .await?
            .ok_or_else(|| Error::not_found("channel", name))?;
        transaction.commit().await?;
        Ok(channel)
    }

    /// Replaces the sealed secret of `name` with `sealed` only if it is still `expected`.
    pub(crate) async fn reseal_channel(
        &self,
        name: &str,
        expected: &[u8],
        sealed: &[u8],
    ) -> Result<bool> {
        let changed = execute(
            &self.client().await?,
            "UPDATE channels SET secret_sealed = $3 WHERE name = $1 AND secret_sealed = $2",
            &[&name, &expected, &sealed],
        )
        .await?;
        Ok(changed == 1)
    }

    /// Removes the channel named `name` and its delivery log (the tasks it created stay).
    pub(crate) async fn remove_channel(&self, name: &str) -> Result<()> {
        let removed = execute(
            &self.client().await?,
            "DELETE FROM channels WHERE name = $1",
            &[&name],
        )
        .await?;
        if removed == 0 {
            return Err(Error::not_found("channel", name));
        }
        Ok(())
    }

    /// Records a delivery to the known channel `channel` and trims its log to the newest
    /// [`DELIVERIES_KEPT`] rows. A channel removed meanwhile records nothing.
    pub(crate) async fn record_delivery(
        &self,
        channel: &str,
        status: DeliveryStatus,
        reason: Option<&str>,
        task_id: Option<&TaskId>,
    ) -> Result<()> {
        let now = self.now().as_millis();
        let task_id = task_id.map(TaskId::as_str);
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        execute(
            &transaction,
            "INSERT INTO channel_deliveries (channel, at, status, reason, task_id) \
             SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM channels WHERE name = $1)",
            &[&channel, &now, &status.as_str(), &reason, &task_id],
        )
        .await?;
        execute(
            &transaction,
            "DELETE FROM channel_deliveries WHERE channel = $1 AND id <= \
             (SELECT id FROM channel_deliveries WHERE channel = $1 \
              ORDER BY id DESC LIMIT 1 OFFSET $2)",
            &[&channel, &DELIVERIES_KEPT],
        )
        .await?;
        transaction.commit().await?;
        Ok(())
    }

    /// The newest `limit` deliveries to `channel`, newest first.
    pub(crate) async fn channel_deliveries(
        &self,
        channel: &str,
        limit: usize,
    ) -> Result<Vec<DeliveryRecord>> {
        let client = self.client().await?;
        if find(&client, channel).await?.is_none() {
            return Err(Error::not_found("channel", channel));
        }
        let found = query(
            &client,
            "SELECT id, channel, at, status, reason, task_id FROM channel_deliveries \
             WHERE channel = $1 ORDER BY id DESC LIMIT $2",
            &[&channel, &row_limit(limit)],
        )
        .await?;
        found
            .iter()
            .map(|row| {
                let status: String = row.try_get(3)?;
                Ok(DeliveryRecord {
                    id: row.try_get(0)?,
                    channel: row.try_get(1)?,
                    at: Timestamp::from_millis(row.try_get(2)?),
                    // The column's CHECK admits only the three names.
                    status: DeliveryStatus::parse(&status).unwrap_or(DeliveryStatus::Refused),
                    reason: row.try_get(4)?,
                    task_id: row.try_get::<_, Option<String>>(5)?.map(TaskId),
                })
            })
            .collect()
    }

    /// Records `key` as seen until `expires_at`; `false` when it was already recorded
    /// and has not expired (a replay), in this process or any other sharing the
    /// database. Of two processes inserting one key at once, the second waits for the
    /// first to commit and then inserts nothing. Expired keys are purged on the way.
    pub(crate) async fn claim_signature(&self, key: &str, expires_at: Timestamp) -> Result<bool> {
        let now = self.now().as_millis();
        let mut client = self.client().await?;
        let transaction = client.transaction().await?;
        execute(
            &transaction,
            "DELETE FROM webhook_signatures WHERE expires_at <= $1",
            &[&now],
        )
        .await?;
        let inserted = execute(
            &transaction,
            "INSERT INTO webhook_signatures (key, expires_at) VALUES ($1, $2) \
             ON CONFLICT (key) DO NOTHING",
            &[&key, &expires_at.as_millis()],
        )
        .await?;
        transaction.commit().await?;
        Ok(inserted == 1)
    }
}
