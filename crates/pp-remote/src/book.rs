//! The store as remote decisions see it: the event log's position (to wake when
//! something happened), an approval's row, the card messages, the update offset, the
//! poller's lease, the refusal window and refusal audit rows; nothing else (tasks and
//! decisions go through the task service).

use std::time::Duration;

use pp_store::{NewRemoteMessage, RemoteMessage, Store};
use pp_types::{ApprovalId, ApprovalRecord, AuditEntry, NewAudit, Timestamp};

#[derive(Clone)]
pub(crate) struct Book {
    store: Store,
    messenger: &'static str,
}

impl Book {
    pub(crate) fn new(store: Store, messenger: &'static str) -> Self {
        Self { store, messenger }
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.store.clock().now()
    }

    pub(crate) async fn last_seq(&self) -> pp_store::Result<i64> {
        self.store.last_seq().await
    }

    pub(crate) async fn wait_for_events(&self, after: i64, at_most: Duration) {
        self.store.wait_for_events(after, at_most).await;
    }

    pub(crate) async fn approval(&self, id: &ApprovalId) -> pp_store::Result<ApprovalRecord> {
        self.store.approval(id).await
    }

    pub(crate) async fn add_message(
        &self,
        chat: &str,
        message: &str,
        approval: &ApprovalId,
        fingerprint: Option<String>,
        callback_id: &str,
    ) -> pp_store::Result<RemoteMessage> {
        self.store
            .add_remote_message(NewRemoteMessage {
                messenger: self.messenger.to_owned(),
                chat_id: chat.to_owned(),
                message_id: message.to_owned(),
                approval_id: approval.clone(),
                fingerprint,
                callback_id: callback_id.to_owned(),
            })
            .await
    }

    pub(crate) async fn message(
        &self,
        chat: &str,
        message: &str,
    ) -> pp_store::Result<Option<RemoteMessage>> {
        self.store
            .remote_message(self.messenger, chat, message)
            .await
    }

    pub(crate) async fn messages_for(
        &self,
        approval: &ApprovalId,
    ) -> pp_store::Result<Vec<RemoteMessage>> {
        self.store
            .remote_messages_for_approval(self.messenger, approval)
            .await
    }

    pub(crate) async fn live_messages(&self) -> pp_store::Result<Vec<RemoteMessage>> {
        self.store.live_remote_messages(self.messenger).await
    }

    pub(crate) async fn settle(
        &self,
        row: &RemoteMessage,
        outcome: &str,
    ) -> pp_store::Result<bool> {
        self.store
            .settle_remote_message(self.messenger, &row.chat_id, &row.message_id, outcome)
            .await
    }

    pub(crate) async fn offset(&self) -> pp_store::Result<Option<(i64, Timestamp)>> {
        self.store.remote_offset(self.messenger).await
    }

    pub(crate) async fn set_offset(&self, offset: i64) -> pp_store::Result<()> {
        self.store.set_remote_offset(self.messenger, offset).await
    }

    pub(crate) async fn acquire_lease(
        &self,
        holder: &str,
        ttl: Duration,
    ) -> pp_store::Result<bool> {
        self.store
            .acquire_remote_lease(self.messenger, holder, ttl)
            .await
    }

    pub(crate) async fn release_lease(&self, holder: &str) -> pp_store::Result<()> {
        self.store
            .release_remote_lease(self.messenger, holder)
            .await
    }

    pub(crate) async fn note_refusal(
        &self,
        chat: &str,
        window: Duration,
    ) -> pp_store::Result<bool> {
        self.store
            .note_remote_refusal(self.messenger, chat, window)
            .await
    }

    pub(crate) async fn audit(&self, entry: NewAudit) -> pp_store::Result<AuditEntry> {
        self.store.append_audit(entry).await
    }
}
