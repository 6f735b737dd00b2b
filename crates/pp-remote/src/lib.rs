//! Deciding from anywhere through a chat app (docs/remote.md): when an approval starts
//! waiting, a bot sends its card — tool, target, precheck, never file content unless
//! `show_diff` — with Approve / Reject (and Open, when a [`LinkMaker`] is given) buttons
//! to each configured chat, and a tap decides exactly once through the task service's
//! one resolve path (`via` the messenger, bound to the precheck fingerprint of the target
//! when the card was sent).
//!
//! A tap is applied only if the message it came from is a card the bot sent (its chat
//! and message id are a stored row) and the button's data carries that row's random id,
//! and only to that row's approval and fingerprint; only from an allowed user in a
//! configured chat (taps from anyone else are refused and audited, at most once per chat
//! per minute); and only if it cannot have waited longer than `tap_max_age`. The card is
//! then edited to its outcome, once; a second tap answers "already decided by …". The
//! cards, their fingerprints and the update offset live in the store, so buttons keep
//! working after a restart and no tap is replayed; one process at a time polls (a lease
//! row).
//!
//! [`Messenger`] is the seam: an adapter sends, edits and answers messages and reads
//! what people did; [`Remote`] decides everything else. [`telegram::Telegram`] is the
//! Bot API by long polling (works behind NAT). It reaches tasks through
//! [`pp_tasks::TaskService`] and the store only through its own narrow handle (the event
//! log's position, an approval's row, its own rows, refusal audit rows).

mod book;
mod messenger;
mod remote;
pub mod telegram;
pub mod text;

pub use messenger::{Batch, Button, Card, Input, Messenger, MessengerError, Sender, Tap};
pub use remote::{
    DEFAULT_TAP_MAX_AGE, Deciders, LinkMaker, Remote, RemoteSettings, parse_data, remote_user,
};
