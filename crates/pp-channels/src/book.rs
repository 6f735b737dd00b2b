//! The channels' narrow way into the store: the channels, their delivery logs, the seen
//! signatures and the store's clock, and nothing else. Tasks are created through the
//! task service.

use pp_store::{Channel, ChannelChange, DeliveryRecord, DeliveryStatus, NewChannel, Result, Store};
use pp_types::{TaskId, Timestamp};

/// The webhook channels of one store.
#[derive(Debug, Clone)]
pub(crate) struct ChannelBook(Store);

impl ChannelBook {
    /// The channels kept in `store`.
    pub(crate) fn new(store: Store) -> Self {
        Self(store)
    }

    /// Now, on the store's clock (a [`pp_types::ManualClock`] in tests).
    pub(crate) fn now(&self) -> Timestamp {
        self.0.clock().now()
    }

    /// Stores a new channel.
    pub(crate) async fn create(&self, new: &NewChannel) -> Result<Channel> {
        self.0.create_channel(new).await
    }

    /// Every channel, by name.
    pub(crate) async fn list(&self) -> Result<Vec<Channel>> {
        self.0.list_channels().await
    }

    /// The channel named `name`, if there is one.
    pub(crate) async fn find(&self, name: &str) -> Result<Option<Channel>> {
        self.0.find_channel(name).await
    }

    /// Changes the channel named `name`.
    pub(crate) async fn edit(&self, name: &str, change: ChannelChange) -> Result<Channel> {
        self.0.edit_channel(name, change).await
    }

    /// Replaces the sealed secret of `name` with `sealed` if it is still `expected`.
    pub(crate) async fn reseal(&self, name: &str, expected: &[u8], sealed: &[u8]) -> Result<bool> {
        self.0.reseal_channel(name, expected, sealed).await
    }

    /// Removes the channel named `name` and its delivery log.
    pub(crate) async fn remove(&self, name: &str) -> Result<()> {
        self.0.remove_channel(name).await
    }

    /// The newest `limit` rows of a channel's delivery log, newest first.
    pub(crate) async fn deliveries(
        &self,
        channel: &str,
        limit: usize,
    ) -> Result<Vec<DeliveryRecord>> {
        self.0.channel_deliveries(channel, limit).await
    }

    /// Adds a row to a channel's delivery log.
    pub(crate) async fn record(
        &self,
        channel: &str,
        status: DeliveryStatus,
        reason: Option<&str>,
        task_id: Option<&TaskId>,
    ) -> Result<()> {
        self.0
            .record_delivery(channel, status, reason, task_id)
            .await
    }

    /// Records a signature as seen until `expires_at`; `false` if it already was (a
    /// replay), across every process sharing the database.
    pub(crate) async fn claim_signature(&self, key: &str, expires_at: Timestamp) -> Result<bool> {
        self.0.claim_signature(key, expires_at).await
    }
}
