//! Webhook channels: a named URL another machine posts to, each accepted delivery an
//! ordinary `queued` task created by [`Actor::Webhook`](pp_types::Actor::Webhook) whose
//! origin is the channel's name. Like the scheduler, a channel only creates tasks: their
//! writes stop in `waiting_approval` like anyone's, and nothing here approves anything.
//!
//! A delivery is authenticated by `X-PocketPilot-Signature: sha256=<hex>`, the
//! HMAC-SHA256 with the channel's secret over `X-PocketPilot-Timestamp` (unix seconds),
//! a `.` and the raw body ([`sign`]). [`ChannelsService::deliver`] refuses, all alike
//! for the sender ([`DeliveryOutcome::Refused`]; the reason is logged on the server
//! only): an unknown or disabled channel, an oversize body, malformed headers, a bad
//! signature (compared in constant time), a timestamp outside the replay window (past
//! or future) and a replay (a signature already seen inside the window, recorded in the
//! store so every process sharing the database refuses it).
//!
//! Two budgets per channel name, so that nobody without the secret can use up a
//! channel's: accepted deliveries count against [`ChannelSettings::rate_limit`] (a
//! correctly signed delivery over it gets 429 and may be sent again later), refused ones
//! against [`ChannelSettings::refused_log_limit`]. Past that one, refusals still get the
//! same 401 but are no longer logged one by one: one `refused` row per window says how
//! many were not.
//!
//! Secrets are 256 random bits (64 hex characters) generated here, shown once (at
//! creation and rotation), and stored sealed with ChaCha20-Poly1305 under a
//! [`ChannelKey`] that the caller keeps outside the database (the CLI: a 0600 file in the
//! data directory, or in team mode the team key every `serve` shares, see
//! [`ChannelsService::check_key`]). A stored secret that does not open with the key is
//! refused like a bad signature and logged ([`Refusal::SecretUnopenable`]).
//!
//! Changes (create, edit, rotate, remove) are audited `channel_*` as the operator, with
//! the team user of [`ChannelsService::acting_as`] in team mode. The payload reaches the prompt only as quoted, untrusted data
//! ([`render_prompt`]).
//!
//! A channel reaches tasks through the task service
//! ([`pp_tasks::TaskService::create_from`]) and the store only through its own narrow
//! book of channels (`book.rs`).

mod book;
mod delivery;
mod error;
mod key;
mod limiter;
mod prompt;
mod rekey;
mod service;
mod settings;
mod signature;
mod views;

pub use delivery::{Delivery, DeliveryOutcome, Refusal};
pub use error::{ChannelsError, Result};
pub use key::ChannelKey;
pub use pp_store::{DeliveryRecord, DeliveryStatus};
pub use prompt::{DEFAULT_TEMPLATE, check_template, render_prompt};
pub use rekey::KeyCheck;
pub use service::ChannelsService;
pub use settings::ChannelSettings;
pub use signature::{SIGNATURE_HEADER, TIMESTAMP_HEADER, sign};
pub use views::{ChannelView, CreateChannel, EditChannel, WithSecret, valid_name, webhook_path};
