//! The limits of webhook deliveries.

use std::time::Duration;

/// Limits of webhook deliveries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelSettings {
    /// How far a delivery's timestamp may be from now, in the past or the future; seen
    /// signatures are kept this long past their timestamp.
    pub replay_window: Duration,
    /// Largest body accepted; bigger ones are refused (401, no task).
    pub max_body_bytes: usize,
    /// Accepted deliveries per channel name per [`ChannelSettings::rate_period`]; a
    /// correctly signed delivery past it gets 429 (its signature is not spent, so it may
    /// be sent again in the next window). Refused deliveries never count here.
    pub rate_limit: u32,
    /// Refused deliveries per channel name per [`ChannelSettings::rate_period`] that are
    /// written to the delivery log one by one; past it they get the same 401 and are
    /// only counted, and one `refused` row says how many once the window has ended.
    pub refused_log_limit: u32,
    /// The window of both budgets.
    pub rate_period: Duration,
}

impl Default for ChannelSettings {
    fn default() -> Self {
        Self {
            replay_window: Duration::from_secs(5 * 60),
            max_body_bytes: 256 * 1024,
            rate_limit: 60,
            refused_log_limit: 60,
            rate_period: Duration::from_secs(60),
        }
    }
}
