//! The engine behind every messenger: sends a card when an approval starts waiting,
//! applies taps through the one resolve path, edits each card to its outcome exactly
//! once, answers `/pending`; one poller at a time across processes (a lease row).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use pp_store::{RemoteMessage, Store};
use pp_tasks::{Action, ApprovalView, Caller, Decision, Error, ResolveRequest, TaskService};
use pp_types::{Actor, ApprovalId, ApprovalState, AuditAction, NewAudit, Role};

use crate::book::Book;
use crate::messenger::{Button, Card, Input, Messenger, Sender, Tap};
use crate::text;

/// How long a tap may have waited before it is applied: older ones answer "expired —
/// tap again".
pub const DEFAULT_TAP_MAX_AGE: Duration = Duration::from_secs(600);

/// How long the poller's lease lasts without renewal.
const LEASE_TTL: Duration = Duration::from_secs(60);

/// How often the holder renews it (and how often another process tries to take it).
const LEASE_RENEW: Duration = Duration::from_secs(15);

/// Refused taps are audited at most once per chat per this window.
const REFUSAL_WINDOW: Duration = Duration::from_secs(60);

/// The longest wait for new events between two looks at what waits.
const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// How long to wait before reading updates again after the messenger failed.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// How long after an approve tap the card waits for the call's result before it is
/// edited anyway (it then says the call is running).
const OUTCOME_WAIT: Duration = Duration::from_secs(10);

/// What [`Remote::tap`] returns when it answered the tap itself.
const ANSWERED: &str = "";

/// Who may tap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deciders {
    /// Single-user mode: the messenger's user ids whose taps count, each deciding as the
    /// operator (recorded as `telegram:<id> (@name)`).
    Users(Vec<String>),
    /// Team mode: the messenger's user id → the team user it acts as, whose role and
    /// grants must allow the decision when the tap arrives.
    Team(BTreeMap<String, String>),
}

/// What a messenger is told to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteSettings {
    /// The chats cards are sent to (and the only ones taps and `/pending` count from).
    pub chat_ids: Vec<String>,
    /// Who may decide.
    pub deciders: Deciders,
    /// Whether a card carries the diff or new content (default no: file content would
    /// leave the machine).
    pub show_diff: bool,
    /// Taps that may have waited longer than this are not applied.
    pub tap_max_age: Duration,
}

/// Makes the "Open" button's address for an approval (an approval link, issue 30 item
/// 1); `None`, or no link maker at all: the card has no Open button.
pub trait LinkMaker: Send + Sync {
    /// The address of a page deciding `approval`, if one can be made.
    fn link<'a>(
        &'a self,
        approval: &'a ApprovalId,
    ) -> Pin<Box<dyn Future<Output = Option<String>> + Send + 'a>>;
}

/// A log line sink.
type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// Remote decisions through one messenger `M`. Cheap to clone.
pub struct Remote<M: Messenger> {
    messenger: Arc<M>,
    service: TaskService,
    book: Book,
    settings: Arc<RemoteSettings>,
    links: Option<Arc<dyn LinkMaker>>,
    /// This process's id in the lease row.
    holder: String,
    /// Taps and sweeps one at a time, so a card is settled by whoever decided it.
    work: Arc<tokio::sync::Mutex<()>>,
    log: Log,
}

impl<M: Messenger> Clone for Remote<M> {
    fn clone(&self) -> Self {
        Self {
            messenger: Arc::clone(&self.messenger),
            service: self.service.clone(),
            book: self.book.clone(),
            settings: Arc::clone(&self.settings),
            links: self.links.clone(),
            holder: self.holder.clone(),
            work: Arc::clone(&self.work),
            log: Arc::clone(&self.log),
        }
    }
}

/// A random id of `bytes` bytes, in hex.
fn random_hex(bytes: usize) -> Option<String> {
    let mut buffer = vec![0_u8; bytes];
    getrandom::fill(&mut buffer).ok()?;
    Some(buffer.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Whether two ids are equal, in time independent of where they differ.
fn same_id(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0_u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// The decision and the card id a button's data carries: `a:<id>` or `r:<id>`.
pub fn parse_data(data: &str) -> Option<(Decision, &str)> {
    let (kind, id) = data.split_once(':')?;
    let decision = match kind {
        "a" => Decision::Approve,
        "r" => Decision::Reject,
        _ => return None,
    };
    (!id.is_empty() && id.len() <= 62 && id.bytes().all(|b| b.is_ascii_hexdigit()))
        .then_some((decision, id))
}

/// How a tap's sender is named in the record: `telegram:<id> (@name)`.
pub fn remote_user(messenger: &str, from: &Sender) -> String {
    match &from.username {
        Some(name) => format!("{messenger}:{} (@{name})", from.id),
        None => format!("{messenger}:{}", from.id),
    }
}

/// Who is deciding: the operator (named by the messenger's user) or a team user.
enum Decider {
    Operator(String),
    Team(Caller),
}

impl Decider {
    fn label(&self) -> String {
        match self {
            Self::Operator(label) => label.clone(),
            Self::Team(caller) => caller.user.clone().unwrap_or_default(),
        }
    }
}

impl<M: Messenger> Remote<M> {
    /// Remote decisions through `messenger` for `service`'s approvals, with the store
    /// it runs on; `log` gets what went wrong (never a token).
    pub fn new(
        messenger: M,
        service: TaskService,
        store: Store,
        settings: RemoteSettings,
        log: impl Fn(&str) + Send + Sync + 'static,
    ) -> Self {
        let name = messenger.name();
        Self {
            messenger: Arc::new(messenger),
            service,
            book: Book::new(store, name),
            settings: Arc::new(settings),
            links: None,
            holder: random_hex(8).unwrap_or_else(|| format!("pid{}", std::process::id())),
            work: Arc::new(tokio::sync::Mutex::new(())),
            log: Arc::new(log),
        }
    }

    /// Cards get an "Open" button whose address `links` makes.
    #[must_use]
    pub fn with_links(mut self, links: Arc<dyn LinkMaker>) -> Self {
        self.links = Some(links);
        self
    }

    fn log(&self, line: &str) {
        (self.log)(&format!("{}: {line}", self.messenger.name()));
    }

    /// Runs for as long as the future is polled: takes the lease (waiting while another
    /// process holds it), then sends cards, reads taps and keeps the lease, until the
    /// lease is lost; then tries again.
    pub async fn run(&self) {
        loop {
            match self.book.acquire_lease(&self.holder, LEASE_TTL).await {
                Ok(true) => {
                    tokio::select! {
                        () = self.keep_lease() => {}
                        () = self.poll() => {}
                        () = self.send_cards() => {}
                    }
                }
                Ok(false) => {}
                Err(error) => self.log(&format!("the poller lease: {error}")),
            }
            tokio::time::sleep(LEASE_RENEW).await;
        }
    }

    /// Gives the lease up (a clean shutdown), so another process takes over at once.
    pub async fn release(&self) {
        if let Err(error) = self.book.release_lease(&self.holder).await {
            self.log(&format!("releasing the poller lease: {error}"));
        }
    }

    /// Renews the lease until that fails.
    async fn keep_lease(&self) {
        loop {
            tokio::time::sleep(LEASE_RENEW).await;
            match self.book.acquire_lease(&self.holder, LEASE_TTL).await {
                Ok(true) => {}
                Ok(false) => {
                    self.log("another process took the poller lease");
                    return;
                }
                Err(error) => {
                    self.log(&format!("renewing the poller lease: {error}"));
                    return;
                }
            }
        }
    }

    /// Reads updates, stores the next offset before acting on them, and acts.
    async fn poll(&self) {
        let (mut offset, mut last_read) = match self.book.offset().await {
            Ok(Some((offset, at))) => (Some(offset), Some(at)),
            Ok(None) => (None, None),
            Err(error) => {
                self.log(&format!("reading the stored offset: {error}"));
                return;
            }
        };
        loop {
            // The first read after a start without a stored one returns at once: until
            // a read succeeded, no tap can be known to be fresh.
            let batch = match self.messenger.receive(offset, last_read.is_some()).await {
                Ok(batch) => batch,
                Err(error) => {
                    self.log(&error.to_string());
                    tokio::time::sleep(RETRY_AFTER).await;
                    continue;
                }
            };
            let now = self.book.now();
            // A tap in this batch was made after the previous read returned: it waited
            // at most this long. Without a previous read it may be any age.
            let fresh = last_read.is_some_and(|at| {
                now.as_millis().saturating_sub(at.as_millis())
                    <= i64::try_from(self.settings.tap_max_age.as_millis()).unwrap_or(i64::MAX)
            });
            let next = batch.next_offset.or(offset);
            if let Err(error) = self.book.set_offset(next.unwrap_or(0)).await {
                // Not stored: acting now could replay the taps after a restart. The
                // same updates are read again (the old offset confirms none of them).
                self.log(&format!("storing the offset: {error}"));
                tokio::time::sleep(RETRY_AFTER).await;
                continue;
            }
            offset = next;
            last_read = Some(now);
            for input in batch.inputs {
                self.handle(input, fresh).await;
            }
        }
    }

    /// Looks at what waits whenever something happened (and every few seconds).
    async fn send_cards(&self) {
        let mut after = self.book.last_seq().await.unwrap_or(0);
        loop {
            if let Err(error) = self.sweep().await {
                self.log(&format!("sending cards: {error}"));
            }
            self.book.wait_for_events(after, SWEEP_EVERY).await;
            after = self.book.last_seq().await.unwrap_or(after);
        }
    }

    /// Sends a card for every pending approval to every chat that has none for it yet,
    /// and edits every live card whose approval was decided some other way to its
    /// outcome (once its call has a result).
    pub async fn sweep(&self) -> pp_tasks::Result<()> {
        let _one_at_a_time = self.work.lock().await;
        let pending = self
            .service
            .approval_views(Some(ApprovalState::Pending), 500)
            .await?;
        for view in pending {
            let id = ApprovalId(view.id.clone());
            let sent = self.book.messages_for(&id).await?;
            let missing: Vec<&String> = self
                .settings
                .chat_ids
                .iter()
                .filter(|chat| !sent.iter().any(|row| &row.chat_id == *chat))
                .collect();
            if missing.is_empty() {
                continue;
            }
            for chat in missing {
                if let Err(error) = self.send_card(&id, chat).await {
                    self.log(&format!("sending the card of {id}: {error}"));
                }
            }
        }
        for row in self.book.live_messages().await? {
            let view = self.service.approval_view(&row.approval_id).await?;
            let running = view
                .outcome
                .as_ref()
                .is_some_and(|outcome| outcome.status == pp_tasks::OutcomeStatus::Running);
            if view.state == ApprovalState::Pending || running {
                continue;
            }
            self.settle(&row, &text::outcome_text(&view)).await;
        }
        Ok(())
    }

    /// Sends one card about `id` to `chat` and records it.
    async fn send_card(&self, id: &ApprovalId, chat: &str) -> Result<(), String> {
        let view = self
            .service
            .approval_view_checked(id)
            .await
            .map_err(|error| error.to_string())?;
        if view.state != ApprovalState::Pending {
            return Ok(());
        }
        let record = self.book.approval(id).await.map_err(|e| e.to_string())?;
        let refusal = self.service.remote_refusal(&record);
        let fingerprint = view
            .precheck
            .as_ref()
            .and_then(|precheck| precheck.fingerprint.clone());
        let callback = random_hex(16).ok_or("no randomness for the card's id")?;
        let mut buttons = Vec::new();
        if refusal.is_none() {
            buttons.push(Button::Callback {
                label: "Approve".into(),
                data: format!("a:{callback}"),
            });
        }
        buttons.push(Button::Callback {
            label: "Reject".into(),
            data: format!("r:{callback}"),
        });
        if let Some(links) = &self.links
            && let Some(url) = links.link(id).await
        {
            buttons.push(Button::Link {
                label: "Open".into(),
                url,
            });
        }
        let card = Card {
            text: text::card_text(&view, self.settings.show_diff, refusal.as_deref()),
            buttons,
        };
        let message = self
            .messenger
            .send(chat, &card)
            .await
            .map_err(|error| error.to_string())?;
        self.book
            .add_message(chat, &message, id, fingerprint, &callback)
            .await
            .map_err(|error| error.to_string())?;
        Ok(())
    }

    /// Edits a live card to say it cannot be approved from here (`refusal`), keeping
    /// Reject (and Open).
    async fn reissue(&self, row: &RemoteMessage, refusal: &str) {
        let Ok(view) = self.service.approval_view_checked(&row.approval_id).await else {
            return;
        };
        let mut buttons = vec![Button::Callback {
            label: "Reject".into(),
            data: format!("r:{}", row.callback_id),
        }];
        if let Some(links) = &self.links
            && let Some(url) = links.link(&row.approval_id).await
        {
            buttons.push(Button::Link {
                label: "Open".into(),
                url,
            });
        }
        let card = Card {
            text: text::card_text(&view, self.settings.show_diff, Some(refusal)),
            buttons,
        };
        if let Err(error) = self
            .messenger
            .edit(&row.chat_id, &row.message_id, &card)
            .await
        {
            self.log(&format!("editing a card: {error}"));
        }
    }

    /// Settles `row` with `outcome` and, if this was the first, edits the message.
    async fn settle(&self, row: &RemoteMessage, outcome: &str) {
        match self.book.settle(row, outcome).await {
            Ok(true) => {
                let card = Card {
                    text: outcome.to_owned(),
                    buttons: Vec::new(),
                };
                if let Err(error) = self
                    .messenger
                    .edit(&row.chat_id, &row.message_id, &card)
                    .await
                {
                    self.log(&format!("editing a card to its outcome: {error}"));
                }
            }
            Ok(false) => {}
            Err(error) => self.log(&format!("settling a card: {error}")),
        }
    }

    /// Acts on one input; `fresh`: it cannot have waited longer than a tap may.
    pub async fn handle(&self, input: Input, fresh: bool) {
        match input {
            Input::Tap(tap) => {
                let _one_at_a_time = self.work.lock().await;
                let answer = self.tap(&tap, fresh).await;
                if answer == ANSWERED {
                    return;
                }
                if let Err(error) = self.messenger.answer(&tap, &answer).await {
                    self.log(&format!("answering a tap: {error}"));
                }
            }
            Input::Text { chat, from, text } => {
                let command = text.split_whitespace().next().unwrap_or("");
                let command = command.split('@').next().unwrap_or(command);
                if command != "/pending" || !self.settings.chat_ids.contains(&chat) {
                    return;
                }
                let Some(decider) = self.decider(&from) else {
                    return;
                };
                let list = self.pending_for(&decider).await;
                let card = Card {
                    text: list,
                    buttons: Vec::new(),
                };
                if let Err(error) = self.messenger.send(&chat, &card).await {
                    self.log(&format!("answering /pending: {error}"));
                }
            }
        }
    }

    /// What waits, as `decider` may see it.
    async fn pending_for(&self, decider: &Decider) -> String {
        let views = match self
            .service
            .approval_views_checked(Some(ApprovalState::Pending), 50)
            .await
        {
            Ok(views) => views,
            Err(error) => return format!("cannot list what waits: {error}"),
        };
        let mut shown = Vec::new();
        for view in views {
            if let Decider::Team(caller) = decider {
                let Ok(task) = self.service.task(&view.task_id).await else {
                    continue;
                };
                if self
                    .service
                    .authorize(caller, Action::Resolve(&task))
                    .await
                    .is_err()
                {
                    continue;
                }
            }
            shown.push(view);
        }
        text::pending_text(&shown)
    }

    /// Who `from` decides as, if anyone.
    fn decider(&self, from: &Sender) -> Option<Decider> {
        match &self.settings.deciders {
            Deciders::Users(ids) => ids
                .contains(&from.id)
                .then(|| Decider::Operator(remote_user(self.messenger.name(), from))),
            Deciders::Team(users) => users.get(&from.id).map(|name| {
                // The role and grants are read again when the decision is checked.
                Decider::Team(Caller {
                    user: Some(name.clone()),
                    role: Role::Viewer,
                    workspaces: Vec::new(),
                })
            }),
        }
    }

    /// Refuses a tap: one audit row per chat per window, and the answer.
    async fn refuse(&self, tap: &Tap, approval: Option<&ApprovalId>, why: &str) -> String {
        match self.book.note_refusal(&tap.chat, REFUSAL_WINDOW).await {
            Ok(true) => {
                let entry = NewAudit {
                    approval_id: approval.cloned(),
                    detail: Some(format!(
                        "{} in chat {}: {why}",
                        remote_user(self.messenger.name(), &tap.from),
                        tap.chat
                    )),
                    via: Some(self.messenger.via()),
                    ..NewAudit::new(AuditAction::RemoteTapRefused)
                };
                if let Err(error) = self.book.audit(entry).await {
                    self.log(&format!("auditing a refused tap: {error}"));
                }
            }
            Ok(false) => {}
            Err(error) => self.log(&format!("auditing a refused tap: {error}")),
        }
        "Not allowed: this tap changes nothing.".to_owned()
    }

    /// Applies a tap if everything matches; the answer to show whoever tapped
    /// ([`ANSWERED`] when it was answered already).
    async fn tap(&self, tap: &Tap, fresh: bool) -> String {
        let Some(decider) = self.decider(&tap.from) else {
            return self.refuse(tap, None, "not an allowed user").await;
        };
        if !self.settings.chat_ids.contains(&tap.chat) {
            return self.refuse(tap, None, "not a configured chat").await;
        }
        let row = match self.book.message(&tap.chat, &tap.message).await {
            Ok(Some(row)) => row,
            Ok(None) => return self.refuse(tap, None, "not a card this bot sent").await,
            Err(error) => {
                self.log(&format!("reading a card: {error}"));
                return "Something went wrong; nothing was decided.".to_owned();
            }
        };
        let Some((decision, _)) =
            parse_data(&tap.data).filter(|(_, callback)| same_id(callback, &row.callback_id))
        else {
            return self
                .refuse(
                    tap,
                    Some(&row.approval_id),
                    "the button does not match the card",
                )
                .await;
        };
        if let Some(outcome) = &row.outcome {
            return self.already(&row, outcome).await;
        }
        if !fresh {
            return "expired — tap again".to_owned();
        }
        let request = ResolveRequest {
            decision,
            edited_arguments: None,
            reason: (decision == Decision::Reject)
                .then(|| format!("rejected in {}", self.messenger.name())),
            seen_fingerprint: row.fingerprint.clone(),
            actor: Actor::Operator,
            wait: false,
            via: Some(self.messenger.via()),
            remote_user: match &decider {
                Decider::Operator(label) => Some(label.clone()),
                Decider::Team(_) => None,
            },
        };
        let id = &row.approval_id;
        let resolved = match &decider {
            Decider::Operator(_) => self.service.resolve(id, request).await,
            Decider::Team(caller) => self.service.resolve_for(id, request, caller).await,
        };
        match resolved {
            Ok(_) => {
                // Answered at once (the app shows a spinner until then); the card is
                // edited once the call has a result.
                let answer = match decision {
                    Decision::Approve => format!("Approved by {}", decider.label()),
                    Decision::Reject => format!("Rejected by {}", decider.label()),
                };
                if let Err(error) = self.messenger.answer(tap, &answer).await {
                    self.log(&format!("answering a tap: {error}"));
                }
                if let Some(view) = self.outcome_of(id, decision).await {
                    self.settle_all(id, &row, &text::outcome_text(&view)).await;
                }
                ANSWERED.to_owned()
            }
            Err(Error::ChangedSinceSeen(_)) => {
                if let Ok(view) = self.service.approval_view(id).await {
                    self.settle(&row, &text::changed_text(&view)).await;
                }
                "changed since sent: nothing ran".to_owned()
            }
            Err(Error::NotRemotelyApprovable(message)) => {
                // A card sent before the approvable capabilities changed: it loses its
                // Approve button and says why.
                self.reissue(&row, &message).await;
                "Not approvable here: approve this in the console or the terminal".to_owned()
            }
            Err(Error::AlreadyResolved { .. } | Error::InvalidState { .. }) => {
                match self.service.approval_view(id).await {
                    Ok(view) => {
                        let outcome = text::outcome_text(&view);
                        self.settle(&row, &outcome).await;
                        format!("already decided by {}", text::decided_by(&view))
                    }
                    Err(_) => "already decided".to_owned(),
                }
            }
            Err(
                error @ (Error::Forbidden(_) | Error::Unauthorized(_) | Error::NotFound { .. }),
            ) => {
                let why = format!("{} may not decide: {error}", decider.label());
                self.refuse(tap, Some(id), &why).await;
                format!("Not allowed: {error}")
            }
            Err(error) => {
                self.log(&format!("deciding {id}: {error}"));
                format!("Nothing was decided: {error}")
            }
        }
    }

    /// The answer to a tap on a settled card.
    async fn already(&self, row: &RemoteMessage, outcome: &str) -> String {
        match self.service.approval_view(&row.approval_id).await {
            Ok(view) if view.state != ApprovalState::Pending => {
                format!("already decided by {}", text::decided_by(&view))
            }
            _ => outcome
                .lines()
                .last()
                .unwrap_or("this card is closed")
                .to_owned(),
        }
    }

    /// The card of a decided approval once its call has a result (or after
    /// [`OUTCOME_WAIT`]).
    async fn outcome_of(&self, id: &ApprovalId, decision: Decision) -> Option<ApprovalView> {
        let deadline = tokio::time::Instant::now() + OUTCOME_WAIT;
        loop {
            let view = self.service.approval_view(id).await.ok()?;
            let running = view
                .outcome
                .as_ref()
                .is_some_and(|outcome| outcome.status == pp_tasks::OutcomeStatus::Running);
            if decision == Decision::Reject || !running || tokio::time::Instant::now() >= deadline {
                return Some(view);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Settles the tapped card and every other live card of the approval.
    async fn settle_all(&self, id: &ApprovalId, tapped: &RemoteMessage, outcome: &str) {
        self.settle(tapped, outcome).await;
        if let Ok(rows) = self.book.messages_for(id).await {
            for row in rows.iter().filter(|row| row.decided_at.is_none()) {
                self.settle(row, outcome).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn button_data_is_a_decision_and_a_hex_id() {
        assert!(matches!(
            parse_data("a:00ff"),
            Some((Decision::Approve, "00ff"))
        ));
        assert!(matches!(
            parse_data("r:ABCdef12"),
            Some((Decision::Reject, "ABCdef12"))
        ));
        for bad in [
            "",
            "a",
            "a:",
            "x:00",
            "a:zz",
            "a:00:11",
            &format!("a:{}", "0".repeat(63)),
        ] {
            assert!(parse_data(bad).is_none(), "{bad}");
        }
        // The longest data a card sends fits Telegram's 64 bytes.
        let id = random_hex(16).unwrap();
        assert_eq!(id.len(), 32);
        assert!(format!("a:{id}").len() <= 64);
        assert_ne!(random_hex(16), random_hex(16));
    }

    #[test]
    fn ids_compare_whole() {
        assert!(same_id("00ff", "00ff"));
        assert!(!same_id("00ff", "00fe"));
        assert!(!same_id("00ff", "00ff00"));
        assert!(!same_id("", "0"));
    }

    #[test]
    fn senders_are_named_by_id_and_user_name() {
        let from = Sender {
            id: "123456".into(),
            username: Some("ann".into()),
        };
        assert_eq!(remote_user("telegram", &from), "telegram:123456 (@ann)");
        let nameless = Sender {
            id: "7".into(),
            username: None,
        };
        assert_eq!(remote_user("telegram", &nameless), "telegram:7");
    }
}
