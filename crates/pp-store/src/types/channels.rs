//! Webhook channels and their delivery log.

use pp_types::{TaskId, Timestamp};

/// How many delivery rows are kept per channel; older ones are dropped as new ones come.
pub const DELIVERIES_KEPT: i64 = 1000;

/// A channel to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewChannel {
    /// Unique among channels; part of the webhook URL.
    pub name: String,
    /// How a delivery becomes the prompt; `None` for the default.
    pub template: Option<String>,
    /// A configured workspace's name; `None` for the default.
    pub workspace: Option<String>,
    /// The secret, sealed by the caller.
    pub secret_sealed: Vec<u8>,
}

/// A channel as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    /// Its name.
    pub name: String,
    /// Its template, if not the default.
    pub template: Option<String>,
    /// Its workspace, if not the default.
    pub workspace: Option<String>,
    /// Whether deliveries are accepted.
    pub enabled: bool,
    /// The sealed secret.
    pub secret_sealed: Vec<u8>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When a person last changed it.
    pub updated_at: Timestamp,
    /// When its secret was last rotated.
    pub rotated_at: Option<Timestamp>,
}

/// What a channel edit changes (`None`: keep).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChannelChange {
    /// The template (`Some(None)`: back to the default).
    pub template: Option<Option<String>>,
    /// The workspace (`Some(None)`: back to the default).
    pub workspace: Option<Option<String>>,
    /// Enabled or disabled.
    pub enabled: Option<bool>,
    /// A new sealed secret (rotation).
    pub secret_sealed: Option<Vec<u8>>,
}

pp_types::wire_enum! {
    /// What became of a delivery.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum DeliveryStatus {
        /// It created a task.
        Accepted => "accepted",
        /// It was refused (401; the reason stays on the server).
        Refused => "refused",
        /// It was over the channel's rate limit (429).
        RateLimited => "rate_limited",
    }
}

/// One row of a channel's delivery log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRecord {
    /// Ascending in the order rows were written.
    pub id: i64,
    /// The channel.
    pub channel: String,
    /// When it arrived.
    pub at: Timestamp,
    /// What became of it.
    pub status: DeliveryStatus,
    /// Why it was refused (server-side only).
    pub reason: Option<String>,
    /// The task it created.
    pub task_id: Option<TaskId>,
}
