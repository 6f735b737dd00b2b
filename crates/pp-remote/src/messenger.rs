//! The seam between PocketPilot and a chat app: one trait, [`Messenger`], so an adapter
//! (Telegram here; Feishu/Lark, Slack or DingTalk later) is one file. It only carries
//! messages: what a card says, who may tap and what a tap does are decided by
//! [`crate::Remote`] alone, with the store's rows, never by the adapter.

use std::future::Future;

/// One button of a card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Button {
    /// A button that sends `data` back in a tap (at most 64 bytes: Telegram's limit).
    Callback {
        /// The label.
        label: String,
        /// What a tap on it carries.
        data: String,
    },
    /// A button that opens `url` (no tap reaches the bot).
    Link {
        /// The label.
        label: String,
        /// The address.
        url: String,
    },
}

/// A message with buttons: what a card or its outcome looks like in the chat. Plain text:
/// nothing in it is markup, so quoted model or webhook text cannot format anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    /// The text.
    pub text: String,
    /// One row of buttons; empty: none (an outcome).
    pub buttons: Vec<Button>,
}

/// Who tapped or wrote, as the chat app says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sender {
    /// The app's user id (Telegram: a number).
    pub id: String,
    /// Their user name, if they have one (shown, never trusted).
    pub username: Option<String>,
}

/// A tap on a card's button.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tap {
    /// The app's id of this tap, to answer it ([`Messenger::answer`]).
    pub id: String,
    /// The chat of the message tapped.
    pub chat: String,
    /// The message tapped.
    pub message: String,
    /// What the button carried.
    pub data: String,
    /// Who tapped.
    pub from: Sender,
}

/// Something a person did in a chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A tap on a button.
    Tap(Tap),
    /// A text message (a command such as `/pending`).
    Text {
        /// The chat.
        chat: String,
        /// Who wrote it.
        from: Sender,
        /// The text.
        text: String,
    },
}

/// What one [`Messenger::receive`] returned.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Batch {
    /// The inputs, oldest first.
    pub inputs: Vec<Input>,
    /// Where the next read starts (stored before the inputs are acted on, so a restart
    /// never replays them); `None`: unchanged.
    pub next_offset: Option<i64>,
}

/// A messenger call that failed. The text never holds the bot's token or a URL with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MessengerError(pub String);

/// A chat app PocketPilot sends cards to and reads taps from.
///
/// Every method is one request; [`crate::Remote`] retries, orders and decides. The ids
/// are the app's own, as text.
pub trait Messenger: Send + Sync + 'static {
    /// The messenger's name, stored with each card message (`telegram`).
    fn name(&self) -> &'static str;

    /// How its decisions are recorded (`via` on the approval and its audit row).
    fn via(&self) -> pp_types::Via;

    /// Sends `card` to `chat`; returns the new message's id.
    fn send(
        &self,
        chat: &str,
        card: &Card,
    ) -> impl Future<Output = Result<String, MessengerError>> + Send;

    /// Replaces the text and buttons of a message the bot sent.
    fn edit(
        &self,
        chat: &str,
        message: &str,
        card: &Card,
    ) -> impl Future<Output = Result<(), MessengerError>> + Send;

    /// Answers a tap with a short notice (the app shows it to whoever tapped).
    fn answer(
        &self,
        tap: &Tap,
        text: &str,
    ) -> impl Future<Output = Result<(), MessengerError>> + Send;

    /// What people did since `offset`: with `wait`, a long poll (returns at the latest
    /// after the messenger's poll timeout, possibly with nothing); without, at once.
    fn receive(
        &self,
        offset: Option<i64>,
        wait: bool,
    ) -> impl Future<Output = Result<Batch, MessengerError>> + Send;
}
