//! [`ChannelsService::check_key`]: which stored secrets open with this service's key,
//! and re-sealing, once, those sealed with an older key (a data directory's
//! `channels.key` from before the team key) that this process still has.

use pp_types::AuditAction;

use crate::error::Result;
use crate::key::ChannelKey;
use crate::service::ChannelsService;

/// What [`ChannelsService::check_key`] found, channel names by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyCheck {
    /// Channels whose secret opens with the key (those re-sealed now included).
    pub opened: Vec<String>,
    /// Channels this call re-sealed with the key (they were sealed with the older key).
    pub resealed: Vec<String>,
    /// Channels whose secret opens with neither key: each needs `channels rotate NAME`
    /// (or a process that has the key they were sealed with, to re-seal them).
    pub unopenable: Vec<String>,
}

impl KeyCheck {
    /// Whether there are channels and the key opens none of them (the wrong key, most
    /// likely).
    pub fn opens_none(&self) -> bool {
        self.opened.is_empty() && !self.unopenable.is_empty()
    }
}

impl ChannelsService {
    /// Checks every stored channel's secret against this service's key. A secret that
    /// does not open with it but opens with `older` is re-sealed with the key, in place
    /// and only if nobody changed it meanwhile (so of several processes exactly one
    /// re-seals it), audited `channel_updated`. The secret itself does not change: its
    /// senders notice nothing.
    pub async fn check_key(&self, older: Option<&ChannelKey>) -> Result<KeyCheck> {
        let key = &self.inner.key;
        let mut check = KeyCheck::default();
        for channel in self.book.list().await? {
            let name = channel.name;
            if key.try_open(&name, &channel.secret_sealed).is_some() {
                check.opened.push(name);
                continue;
            }
            let Some(secret) =
                older.and_then(|older| older.try_open(&name, &channel.secret_sealed))
            else {
                check.unopenable.push(name);
                continue;
            };
            let sealed = key.seal(&name, &secret)?;
            if self
                .book
                .reseal(&name, &channel.secret_sealed, &sealed)
                .await?
            {
                self.audit(
                    AuditAction::ChannelUpdated,
                    &name,
                    Some("secret re-sealed with the team key".to_owned()),
                )
                .await?;
                check.resealed.push(name.clone());
                check.opened.push(name);
                continue;
            }
            // Re-sealed or rotated by another process meanwhile: as it is now.
            match self.book.find(&name).await? {
                Some(now) if key.try_open(&name, &now.secret_sealed).is_some() => {
                    check.opened.push(name);
                }
                Some(_) => check.unopenable.push(name),
                None => {}
            }
        }
        Ok(check)
    }
}
