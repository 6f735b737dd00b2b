//! A delivery as it arrived, and what became of it.

use pp_types::TaskRecord;
use serde_json::Value;

/// A delivery as it arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// The channel name in the URL.
    pub channel: String,
    /// The `X-PocketPilot-Timestamp` header, if present and text.
    pub timestamp: Option<String>,
    /// The `X-PocketPilot-Signature` header, if present and text.
    pub signature: Option<String>,
    /// The raw body; `None` when it was larger than
    /// [`ChannelSettings::max_body_bytes`](crate::ChannelSettings::max_body_bytes).
    pub body: Option<Vec<u8>>,
    /// A script for the task (tests, `serve --script`).
    pub script: Option<Value>,
}

/// Why a delivery was refused (kept on the server: the sender only sees 401).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No channel has the name.
    UnknownChannel,
    /// The channel is disabled.
    Disabled,
    /// The body is over the cap.
    Oversize,
    /// A header is missing or not in the required form.
    MalformedHeaders,
    /// The signature does not match.
    BadSignature,
    /// The timestamp is older than the replay window.
    Stale,
    /// The timestamp is further in the future than the replay window.
    Future,
    /// The signature was seen inside the window.
    Replay,
    /// The task could not be created (its workspace is gone, the prompt is empty).
    TaskNotCreated(String),
    /// The channel's stored secret does not open with this server's key (sealed with
    /// another data directory's `channels.key` or another team key), so the signature
    /// cannot be checked.
    SecretUnopenable(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::UnknownChannel => f.write_str("unknown channel"),
            Self::Disabled => f.write_str("channel disabled"),
            Self::Oversize => f.write_str("body over the size cap"),
            Self::MalformedHeaders => f.write_str("missing or malformed signature headers"),
            Self::BadSignature => f.write_str("bad signature"),
            Self::Stale => f.write_str("stale timestamp"),
            Self::Future => f.write_str("timestamp in the future"),
            Self::Replay => f.write_str("replayed signature"),
            Self::TaskNotCreated(why) => write!(f, "task not created: {why}"),
            Self::SecretUnopenable(name) => write!(
                f,
                "the channel's secret does not open with this server's key (sealed with \
                 another key), so the signature could not be checked; run `pocketpilot \
                 channels rotate {name}` (docs/webhooks.md)"
            ),
        }
    }
}

/// What became of a delivery.
#[derive(Debug, Clone, PartialEq)]
pub enum DeliveryOutcome {
    /// A task was created (202).
    Accepted(Box<TaskRecord>),
    /// Refused (401, the same for every reason).
    Refused(Refusal),
    /// Correctly signed, but the channel's accepted deliveries are over the rate limit
    /// (429).
    RateLimited,
}
