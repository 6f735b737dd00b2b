//! Remote decisions through a messenger (docs/remote.md): the card messages a bot sent,
//! each bound to one approval and the precheck fingerprint of its target at send time.

use pp_types::{ApprovalId, Timestamp};

/// A card message about to be recorded: sent by `messenger` to `chat_id`, where it got
/// `message_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRemoteMessage {
    /// The messenger (`telegram`, …).
    pub messenger: String,
    /// The chat the card was sent to, as the messenger names it.
    pub chat_id: String,
    /// The message's id in that chat.
    pub message_id: String,
    /// The one approval the card's buttons decide.
    pub approval_id: ApprovalId,
    /// The precheck fingerprint of the target when the card was sent: a tap approves
    /// only that state (`seen_fingerprint`). `None`: the tool reports no target.
    pub fingerprint: Option<String>,
    /// The random id the card's buttons carry (hex, at least 64 bits): a tap whose data
    /// does not carry it is refused, whatever message it names.
    pub callback_id: String,
}

/// A card message as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteMessage {
    /// The messenger.
    pub messenger: String,
    /// The chat.
    pub chat_id: String,
    /// The message.
    pub message_id: String,
    /// The approval its buttons decide.
    pub approval_id: ApprovalId,
    /// The fingerprint at send time.
    pub fingerprint: Option<String>,
    /// The buttons' random id.
    pub callback_id: String,
    /// When it was sent (recorded).
    pub sent_at: Timestamp,
    /// When its outcome was settled (the first tap that decided, or a decision made
    /// elsewhere that the card was edited to); `None` while it is live.
    pub decided_at: Option<Timestamp>,
    /// The outcome the message was edited to.
    pub outcome: Option<String>,
}
