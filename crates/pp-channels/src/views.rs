//! Channels as people see them and ask for them, and the rules of their names.

use pp_store::Channel;
use pp_types::Timestamp;

/// A channel as people see it (never its secret).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ChannelView {
    /// Its name.
    pub name: String,
    /// Its template; `None` for the default ([`DEFAULT_TEMPLATE`](crate::DEFAULT_TEMPLATE)).
    pub template: Option<String>,
    /// Its workspace; `None` for the default.
    pub workspace: Option<String>,
    /// Whether deliveries are accepted.
    pub enabled: bool,
    /// The path deliveries are posted to.
    pub webhook_path: String,
    /// When it was created.
    pub created_at: Timestamp,
    /// When a person last changed it.
    pub updated_at: Timestamp,
    /// When its secret was last rotated.
    pub rotated_at: Option<Timestamp>,
}

impl From<Channel> for ChannelView {
    fn from(channel: Channel) -> Self {
        Self {
            webhook_path: webhook_path(&channel.name),
            name: channel.name,
            template: channel.template,
            workspace: channel.workspace,
            enabled: channel.enabled,
            created_at: channel.created_at,
            updated_at: channel.updated_at,
            rotated_at: channel.rotated_at,
        }
    }
}

/// A channel with its secret: what creation and rotation return, the only times the
/// secret is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WithSecret {
    /// The channel.
    pub channel: ChannelView,
    /// The secret (64 lowercase hex characters; the HMAC key is this text's bytes).
    pub secret: String,
}

/// A channel to create.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreateChannel {
    /// Its name: 1–64 of `a-z`, `0-9`, `-`, `_`, starting with a letter or digit.
    pub name: String,
    /// Its template; `None` for the default.
    pub template: Option<String>,
    /// A configured workspace's name; `None` for the default.
    pub workspace: Option<String>,
}

/// A change to a channel (`None`: keep).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EditChannel {
    /// The template (`Some(None)`: the default).
    pub template: Option<Option<String>>,
    /// The workspace (`Some(None)`: the default).
    pub workspace: Option<Option<String>>,
    /// Enable or disable.
    pub enabled: Option<bool>,
}

/// The path deliveries to `name` are posted to.
pub fn webhook_path(name: &str) -> String {
    format!("/api/channels/{name}/webhook")
}

/// Checks a channel name: 1–64 of `a-z`, `0-9`, `-`, `_`, starting with a letter or digit.
pub fn valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    name.len() <= 64
        && bytes
            .next()
            .is_some_and(|first| first.is_ascii_lowercase() || first.is_ascii_digit())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}
