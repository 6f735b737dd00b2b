//! The store's operations, one async method each, dispatched to the backend. SQLite's
//! synchronous calls run on the blocking pool ([`Store::sqlite`]); PostgreSQL's are
//! async. Both backends have every method with the same arguments and meaning, and the
//! conformance suite (`tests/it`) runs each on both and fails on a method no test calls.
#![allow(clippy::too_many_arguments)]

use std::collections::HashSet;
use std::time::Duration;

use pp_types::{
    Actor, ApprovalId, ApprovalRecord, ApprovalState, AuditAction, AuditEntry, ChangeId, Event,
    Message, NewAudit, Role, StoredEvent, TaskId, TaskRecord, TaskState, Timestamp, UserRecord,
};

use super::{Backend, Store};
use crate::{
    AuditFilter, ChangeRow, Channel, ChannelChange, ChatSession, ChatTurn, DeliveryRecord,
    DeliveryStatus, FireOccurrence, Fired, LoginOwner, ModelCallRow, NewApproval, NewChange,
    NewChannel, NewChatSession, NewModelCall, NewSchedule, NewTask, NewWorker, PruneReport,
    Resolve, Result, Schedule, ScheduleEvent, ScheduleSpec, TaskChange, TaskFilter, WorkerRecord,
};

impl Store {
    /// Suspends a running task: in one transaction, the task moves `Running →
    /// change.to` (normally `WaitingApproval`; [`crate::Error::Conflict`] if it is not running)
    /// with `change`'s other fields applied and `change.events` appended as given, and a
    /// `pending` approval is inserted.
    ///
    /// The caller cannot know the approval's id in advance: the store fills it into
    /// every `approval_required` event of `change.events` whose `approval_id` is `None`
    /// (the returned events show it); other events are stored as given.
    pub async fn suspend(
        &self,
        task: &TaskId,
        new: NewApproval,
        change: TaskChange,
    ) -> Result<(ApprovalRecord, Vec<StoredEvent>)> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let task = task.clone();
                self.sqlite(move |store| store.suspend(&task, new, change))
                    .await
            }
            Backend::Postgres(store) => store.suspend(task, new, change).await,
        }
    }

    /// One approval; [`crate::Error::NotFound`] if there is none with this id.
    pub async fn approval(&self, id: &ApprovalId) -> Result<ApprovalRecord> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.clone();
                self.sqlite(move |store| store.approval(&id)).await
            }
            Backend::Postgres(store) => store.approval(id).await,
        }
    }

    /// Up to `limit` approvals, newest first, optionally only those in `state`.
    pub async fn list_approvals(
        &self,
        state: Option<ApprovalState>,
        limit: usize,
    ) -> Result<Vec<ApprovalRecord>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                self.sqlite(move |store| store.list_approvals(state, limit))
                    .await
            }
            Backend::Postgres(store) => store.list_approvals(state, limit).await,
        }
    }

    /// Every approval of `task`, oldest first.
    pub async fn approvals_for_task(&self, task: &TaskId) -> Result<Vec<ApprovalRecord>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let task = task.clone();
                self.sqlite(move |store| store.approvals_for_task(&task))
                    .await
            }
            Backend::Postgres(store) => store.approvals_for_task(task).await,
        }
    }

    /// Records a decision, all or nothing, in one transaction:
    /// - the approval moves `pending → resolve.state` ([`crate::Error::AlreadyResolved`] if it is
    ///   not pending: this is what turns a double click into a 409), with `resolved_at`,
    ///   `resolved_by`, `reason` and `edited_arguments` (and `resolved_by_user`: the
    ///   audit row's `user`);
    /// - the audit row is appended;
    /// - the task moves `WaitingApproval → resolve.task_to` ([`crate::Error::Conflict`] if it is
    ///   not waiting);
    /// - `resolve.events` are appended.
    pub async fn resolve(
        &self,
        id: &ApprovalId,
        resolve: Resolve,
    ) -> Result<(ApprovalRecord, TaskRecord)> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.clone();
                self.sqlite(move |store| store.resolve(&id, resolve)).await
            }
            Backend::Postgres(store) => store.resolve(id, resolve).await,
        }
    }

    /// Turns an `approved` approval into `stale` (its target changed between the decision
    /// and the moment the call was about to run), with the reason and an audit row, in
    /// one transaction. Any other state is [`crate::Error::AlreadyResolved`].
    pub async fn mark_stale(
        &self,
        id: &ApprovalId,
        reason: &str,
        audit: NewAudit,
    ) -> Result<ApprovalRecord> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.clone();
                let reason = reason.to_owned();
                self.sqlite(move |store| store.mark_stale(&id, &reason, audit))
                    .await
            }
            Backend::Postgres(store) => store.mark_stale(id, reason, audit).await,
        }
    }

    /// The retry path: in one transaction, moves the task from one of `from` (normally
    /// `Interrupted`) to `WaitingApproval`, inserts a new `pending` approval (typically
    /// carrying an older approval's checkpoint) and appends `events`, filling the new
    /// approval's id into `approval_required` events as [`Store::suspend`] does.
    pub async fn reopen_approval(
        &self,
        task: &TaskId,
        from: &[TaskState],
        new: NewApproval,
        events: Vec<Event>,
    ) -> Result<ApprovalRecord> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let task = task.clone();
                let from = from.to_vec();
                self.sqlite(move |store| store.reopen_approval(&task, &from, new, events))
                    .await
            }
            Backend::Postgres(store) => store.reopen_approval(task, from, new, events).await,
        }
    }

    /// Appends one row (`actor: None` means the operator).
    pub async fn append_audit(&self, entry: NewAudit) -> Result<AuditEntry> {
        match &self.backend {
            Backend::Sqlite(_) => self.sqlite(move |store| store.append_audit(entry)).await,
            Backend::Postgres(store) => store.append_audit(entry).await,
        }
    }

    /// The rows matching `filter`, newest first.
    pub async fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let filter = filter.clone();
                self.sqlite(move |store| store.list_audit(&filter)).await
            }
            Backend::Postgres(store) => store.list_audit(filter).await,
        }
    }

    /// Cancels a task in one of `from`, in one transaction: applies `change` (whose `to`
    /// must be `cancelled`), cancels its pending approvals, appends `change.events` and
    /// `audit`. The audit row exists exactly when the cancel happened.
    ///
    /// A `running` task whose approved call has not produced its outcome yet is refused
    /// with [`crate::Error::ApprovedCallPending`]: once a person's approval won, a racing cancel
    /// loses (it never stops the approved call halfway or records a cancel that did not
    /// happen). Other states outside `from` are [`crate::Error::Conflict`].
    pub async fn cancel_task(
        &self,
        id: &TaskId,
        from: &[TaskState],
        change: TaskChange,
        audit: NewAudit,
    ) -> Result<TaskRecord> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.clone();
                let from = from.to_vec();
                self.sqlite(move |store| store.cancel_task(&id, &from, change, audit))
                    .await
            }
            Backend::Postgres(store) => store.cancel_task(id, from, change, audit).await,
        }
    }

    /// Whether `task` has an approved call whose outcome (executed, failed or denied) is
    /// not in the audit ledger yet.
    pub async fn approved_call_pending(&self, task: &TaskId) -> Result<bool> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let task = task.clone();
                self.sqlite(move |store| store.approved_call_pending(&task))
                    .await
            }
            Backend::Postgres(store) => store.approved_call_pending(task).await,
        }
    }

    /// Records one change (state `done`).
    pub async fn insert_change(&self, new: NewChange) -> Result<ChangeRow> {
        match &self.backend {
            Backend::Sqlite(_) => self.sqlite(move |store| store.insert_change(new)).await,
            Backend::Postgres(store) => store.insert_change(new).await,
        }
    }

    /// One change, whatever its state; [`crate::Error::NotFound`] if there is none.
    pub async fn change(&self, id: &ChangeId) -> Result<ChangeRow> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.clone();
                self.sqlite(move |store| store.change(&id)).await
            }
            Backend::Postgres(store) => store.change(id).await,
        }
    }

    /// The task's changes, oldest first (abandoned revert intents left out).
    pub async fn task_changes(&self, task: &TaskId) -> Result<Vec<ChangeRow>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let task = task.clone();
                self.sqlite(move |store| store.task_changes(&task)).await
            }
            Backend::Postgres(store) => store.task_changes(task).await,
        }
    }

    /// The changes an approval's call made, oldest first.
    pub async fn approval_changes(&self, approval: &ApprovalId) -> Result<Vec<ChangeRow>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let approval = approval.clone();
                self.sqlite(move |store| store.approval_changes(&approval))
                    .await
            }
            Backend::Postgres(store) => store.approval_changes(approval).await,
        }
    }

    /// The ledger's actions (and details) about an approved call, oldest first: what
    /// an approval card's outcome is derived from.
    pub async fn approval_ledger(
        &self,
        approval: &ApprovalId,
    ) -> Result<Vec<(AuditAction, Option<String>)>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let approval = approval.clone();
                self.sqlite(move |store| store.approval_ledger(&approval))
                    .await
            }
            Backend::Postgres(store) => store.approval_ledger(approval).await,
        }
    }

    /// Revert intents a crash may have left (`pending`), of one task or (`None`) of all.
    pub async fn pending_reverts(&self, task: Option<&TaskId>) -> Result<Vec<ChangeRow>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let task = task.cloned();
                self.sqlite(move |store| store.pending_reverts(task.as_ref()))
                    .await
            }
            Backend::Postgres(store) => store.pending_reverts(task).await,
        }
    }

    /// Records a revert's intent before its file write: a `pending` change of kind
    /// `reverted` undoing `of`, in one transaction that checks `of` is still revertible
    /// and has no other revert under way. `None` when it is not (reverted meanwhile).
    pub async fn begin_revert(&self, of: &ChangeId, new: NewChange) -> Result<Option<ChangeRow>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let of = of.clone();
                self.sqlite(move |store| store.begin_revert(&of, new)).await
            }
            Backend::Postgres(store) => store.begin_revert(of, new).await,
        }
    }

    /// Records a revert done: the intent becomes `done` with the file's state after the
    /// write, the reverted change gets `reverted_by`, and `audit` is appended (its
    /// `task_id` filled in), all in one transaction.
    pub async fn finish_revert(
        &self,
        revert: &ChangeId,
        after_fingerprint: Option<&str>,
        bytes: Option<u64>,
        audit: NewAudit,
    ) -> Result<ChangeRow> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let revert = revert.clone();
                let after_fingerprint = after_fingerprint.map(str::to_owned);
                self.sqlite(move |store| {
                    store.finish_revert(&revert, after_fingerprint.as_deref(), bytes, audit)
                })
                .await
            }
            Backend::Postgres(store) => {
                store
                    .finish_revert(revert, after_fingerprint, bytes, audit)
                    .await
            }
        }
    }

    /// Marks a revert intent whose write never happened `abandoned`.
    pub async fn abandon_revert(&self, revert: &ChangeId) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let revert = revert.clone();
                self.sqlite(move |store| store.abandon_revert(&revert))
                    .await
            }
            Backend::Postgres(store) => store.abandon_revert(revert).await,
        }
    }

    /// Retention of snapshots: the changes recorded at or before `cutoff` (by the store's
    /// clock, `now - older_than`) lose their kept contents (`expired`: no longer
    /// revertible). Returns how many changes expired and every blob hash still named by
    /// a row, which the snapshot store must keep.
    pub async fn expire_snapshots(&self, older_than: Duration) -> Result<(usize, HashSet<String>)> {
        match &self.backend {
            Backend::Sqlite(_) => {
                self.sqlite(move |store| store.expire_snapshots(older_than))
                    .await
            }
            Backend::Postgres(store) => store.expire_snapshots(older_than).await,
        }
    }

    /// Creates a channel (enabled). Fails with [`crate::Error::NameTaken`] when the name is used.
    pub async fn create_channel(&self, new: &NewChannel) -> Result<Channel> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let new = new.clone();
                self.sqlite(move |store| store.create_channel(&new)).await
            }
            Backend::Postgres(store) => store.create_channel(new).await,
        }
    }

    /// The channel named `name`, if any.
    pub async fn find_channel(&self, name: &str) -> Result<Option<Channel>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let name = name.to_owned();
                self.sqlite(move |store| store.find_channel(&name)).await
            }
            Backend::Postgres(store) => store.find_channel(name).await,
        }
    }

    /// Every channel, by name.
    pub async fn list_channels(&self) -> Result<Vec<Channel>> {
        match &self.backend {
            Backend::Sqlite(_) => self.sqlite(move |store| store.list_channels()).await,
            Backend::Postgres(store) => store.list_channels().await,
        }
    }

    /// Applies `change` to the channel named `name` and returns it as it is now.
    pub async fn edit_channel(&self, name: &str, change: ChannelChange) -> Result<Channel> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let name = name.to_owned();
                self.sqlite(move |store| store.edit_channel(&name, change))
                    .await
            }
            Backend::Postgres(store) => store.edit_channel(name, change).await,
        }
    }

    /// Removes the channel named `name` and its delivery log (the tasks it created stay).
    pub async fn remove_channel(&self, name: &str) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let name = name.to_owned();
                self.sqlite(move |store| store.remove_channel(&name)).await
            }
            Backend::Postgres(store) => store.remove_channel(name).await,
        }
    }

    /// Records a delivery to the known channel `channel` and trims its log to the newest
    /// [`crate::DELIVERIES_KEPT`] rows. A channel removed meanwhile records nothing.
    pub async fn record_delivery(
        &self,
        channel: &str,
        status: DeliveryStatus,
        reason: Option<&str>,
        task_id: Option<&TaskId>,
    ) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let channel = channel.to_owned();
                let reason = reason.map(str::to_owned);
                let task_id = task_id.cloned();
                self.sqlite(move |store| {
                    store.record_delivery(&channel, status, reason.as_deref(), task_id.as_ref())
                })
                .await
            }
            Backend::Postgres(store) => {
                store
                    .record_delivery(channel, status, reason, task_id)
                    .await
            }
        }
    }

    /// The newest `limit` deliveries to `channel`, newest first.
    pub async fn channel_deliveries(
        &self,
        channel: &str,
        limit: usize,
    ) -> Result<Vec<DeliveryRecord>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let channel = channel.to_owned();
                self.sqlite(move |store| store.channel_deliveries(&channel, limit))
                    .await
            }
            Backend::Postgres(store) => store.channel_deliveries(channel, limit).await,
        }
    }

    /// Records `key` (a channel's name and a delivery's signature) as seen until
    /// `expires_at`; `false` when it was already recorded and has not expired (a
    /// replay), in this process or any other sharing the database. Expired keys are
    /// purged on the way.
    pub async fn claim_signature(&self, key: &str, expires_at: Timestamp) -> Result<bool> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let key = key.to_owned();
                self.sqlite(move |store| store.claim_signature(&key, expires_at))
                    .await
            }
            Backend::Postgres(store) => store.claim_signature(key, expires_at).await,
        }
    }

    /// Creates an empty chat session.
    pub async fn create_chat_session(&self, new: NewChatSession) -> Result<ChatSession> {
        match &self.backend {
            Backend::Sqlite(_) => {
                self.sqlite(move |store| store.create_chat_session(new))
                    .await
            }
            Backend::Postgres(store) => store.create_chat_session(new).await,
        }
    }

    /// The `limit` most recently active chat sessions (`updated_at`), newest first.
    pub async fn chat_sessions(&self, limit: usize) -> Result<Vec<ChatSession>> {
        match &self.backend {
            Backend::Sqlite(_) => self.sqlite(move |store| store.chat_sessions(limit)).await,
            Backend::Postgres(store) => store.chat_sessions(limit).await,
        }
    }

    /// One chat session ([`crate::Error::NotFound`] with `what = "session"` if there is none).
    pub async fn chat_session(&self, id: &str) -> Result<ChatSession> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.to_owned();
                self.sqlite(move |store| store.chat_session(&id)).await
            }
            Backend::Postgres(store) => store.chat_session(id).await,
        }
    }

    /// The session's turns, oldest first ([`crate::Error::NotFound`] for an unknown session).
    pub async fn chat_turns(&self, id: &str) -> Result<Vec<ChatTurn>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.to_owned();
                self.sqlite(move |store| store.chat_turns(&id)).await
            }
            Backend::Postgres(store) => store.chat_turns(id).await,
        }
    }

    /// Adds a turn: creates its `queued` task (with the `task_created` audit row) and the
    /// turn row in one transaction. [`crate::Error::SessionBusy`] while the latest turn is
    /// still `queued`, `running` or `waiting_approval`; [`crate::Error::NotFound`] for an
    /// unknown session.
    pub async fn add_chat_turn(&self, session: &str, new: NewTask) -> Result<ChatTurn> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let session = session.to_owned();
                self.sqlite(move |store| store.add_chat_turn(&session, new))
                    .await
            }
            Backend::Postgres(store) => store.add_chat_turn(session, new).await,
        }
    }

    /// The session and turn index of `task`, if it is a turn of a chat session.
    pub async fn turn_of_task(&self, task: &TaskId) -> Result<Option<(String, u32)>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let task = task.clone();
                self.sqlite(move |store| store.turn_of_task(&task)).await
            }
            Backend::Postgres(store) => store.turn_of_task(task).await,
        }
    }

    /// Stores the turn's own messages when its task ends; a no-op when `task` is not a
    /// session turn.
    pub async fn set_turn_messages(&self, task: &TaskId, messages: &[Message]) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let task = task.clone();
                let messages = messages.to_vec();
                self.sqlite(move |store| store.set_turn_messages(&task, &messages))
                    .await
            }
            Backend::Postgres(store) => store.set_turn_messages(task, messages).await,
        }
    }

    /// Replaces the session's summary, which now covers turns `1..=through`.
    pub async fn set_session_summary(
        &self,
        session: &str,
        summary: &str,
        through: u32,
    ) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let session = session.to_owned();
                let summary = summary.to_owned();
                self.sqlite(move |store| store.set_session_summary(&session, &summary, through))
                    .await
            }
            Backend::Postgres(store) => store.set_session_summary(session, summary, through).await,
        }
    }

    /// Deletes the session and its turn rows (their tasks, events and audit rows stay).
    /// [`crate::Error::SessionBusy`] while a turn is active; [`crate::Error::NotFound`] if unknown.
    pub async fn delete_chat_session(&self, session: &str) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let session = session.to_owned();
                self.sqlite(move |store| store.delete_chat_session(&session))
                    .await
            }
            Backend::Postgres(store) => store.delete_chat_session(session).await,
        }
    }

    /// Appends `events` to `task` in one transaction and returns them with their sequence
    /// numbers ([`crate::Error::NotFound`] if the task does not exist).
    pub async fn append_events(&self, task: &TaskId, events: &[Event]) -> Result<Vec<StoredEvent>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let task = task.clone();
                let events = events.to_vec();
                self.sqlite(move |store| store.append_events(&task, &events))
                    .await
            }
            Backend::Postgres(store) => store.append_events(task, events).await,
        }
    }

    /// Appends `events` to `task` and the `audit` rows they caused, in one transaction:
    /// an approved call's result is never stored without its audit row, nor the other
    /// way round.
    pub async fn append_events_with_audit(
        &self,
        task: &TaskId,
        events: &[Event],
        audit: Vec<NewAudit>,
    ) -> Result<Vec<StoredEvent>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let task = task.clone();
                let events = events.to_vec();
                self.sqlite(move |store| store.append_events_with_audit(&task, &events, audit))
                    .await
            }
            Backend::Postgres(store) => store.append_events_with_audit(task, events, audit).await,
        }
    }

    /// [`Store::append_events_with_audit`] plus the change-log rows the approved call's
    /// outcome produced, all in one transaction.
    pub async fn append_events_with_records(
        &self,
        task: &TaskId,
        events: &[Event],
        audit: Vec<NewAudit>,
        changes: Vec<NewChange>,
    ) -> Result<Vec<StoredEvent>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let task = task.clone();
                let events = events.to_vec();
                self.sqlite(move |store| {
                    store.append_events_with_records(&task, &events, audit, changes)
                })
                .await
            }
            Backend::Postgres(store) => {
                store
                    .append_events_with_records(task, events, audit, changes)
                    .await
            }
        }
    }

    /// [`Store::append_events_with_records`] plus the model calls the events report
    /// (their `assistant_message` events carry the usage), all in one transaction, so a
    /// task's usage and its events never disagree.
    pub async fn append_events_with_calls(
        &self,
        task: &TaskId,
        events: &[Event],
        audit: Vec<NewAudit>,
        changes: Vec<NewChange>,
        calls: Vec<NewModelCall>,
    ) -> Result<Vec<StoredEvent>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let task = task.clone();
                let events = events.to_vec();
                self.sqlite(move |store| {
                    store.append_events_with_calls(&task, &events, audit, changes, calls)
                })
                .await
            }
            Backend::Postgres(store) => {
                store
                    .append_events_with_calls(task, events, audit, changes, calls)
                    .await
            }
        }
    }

    /// The task's events with `seq > after_seq`, oldest first (`after_seq = 0`: all).
    pub async fn task_events(&self, task: &TaskId, after_seq: i64) -> Result<Vec<StoredEvent>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let task = task.clone();
                self.sqlite(move |store| store.task_events(&task, after_seq))
                    .await
            }
            Backend::Postgres(store) => store.task_events(task, after_seq).await,
        }
    }

    /// Up to `limit` of the task's events with `seq > after_seq`, oldest first: one page
    /// (pass the last `seq` of a page to get the next one; an empty page is the end).
    pub async fn task_events_page(
        &self,
        task: &TaskId,
        after_seq: i64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let task = task.clone();
                self.sqlite(move |store| store.task_events_page(&task, after_seq, limit))
                    .await
            }
            Backend::Postgres(store) => store.task_events_page(task, after_seq, limit).await,
        }
    }

    /// Up to `limit` events of all tasks with `seq > after_seq`, oldest first.
    pub async fn events_after(&self, after_seq: i64, limit: usize) -> Result<Vec<StoredEvent>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                self.sqlite(move |store| store.events_after(after_seq, limit))
                    .await
            }
            Backend::Postgres(store) => store.events_after(after_seq, limit).await,
        }
    }

    /// The newest event's sequence number; 0 when there are none.
    pub async fn last_seq(&self) -> Result<i64> {
        match &self.backend {
            Backend::Sqlite(_) => self.sqlite(move |store| store.last_seq()).await,
            Backend::Postgres(store) => store.last_seq().await,
        }
    }

    /// Starts a console login that lasts `ttl` and returns its secret id (64 hex
    /// characters, 256 random bits). Expired logins are purged on the way.
    pub async fn create_login(&self, ttl: Duration) -> Result<String> {
        match &self.backend {
            Backend::Sqlite(_) => self.sqlite(move |store| store.create_login(ttl)).await,
            Backend::Postgres(store) => store.create_login(ttl).await,
        }
    }

    /// Whether `login` exists and has not expired.
    pub async fn login_valid(&self, login: &str) -> Result<bool> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let login = login.to_owned();
                self.sqlite(move |store| store.login_valid(&login)).await
            }
            Backend::Postgres(store) => store.login_valid(login).await,
        }
    }

    /// Ends `login` (logging out); a no-op for an unknown login.
    pub async fn delete_login(&self, login: &str) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let login = login.to_owned();
                self.sqlite(move |store| store.delete_login(&login)).await
            }
            Backend::Postgres(store) => store.delete_login(login).await,
        }
    }

    /// Ends every console login (after the API token was rotated); returns how many.
    pub async fn delete_all_logins(&self) -> Result<usize> {
        match &self.backend {
            Backend::Sqlite(_) => self.sqlite(move |store| store.delete_all_logins()).await,
            Backend::Postgres(store) => store.delete_all_logins().await,
        }
    }

    /// The task's model calls, oldest first.
    pub async fn model_calls(&self, task: &TaskId) -> Result<Vec<ModelCallRow>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let task = task.clone();
                self.sqlite(move |store| store.model_calls(&task)).await
            }
            Backend::Postgres(store) => store.model_calls(task).await,
        }
    }

    /// Removes, in one transaction, the events and audit rows older than `older_than`
    /// (by the store's clock) of tasks that finished (`completed`, `failed`,
    /// `cancelled`, `timed_out`) before that, and audit rows tied to no task (console
    /// logins) older than that.
    ///
    /// The rows of tasks that are `queued`, `running`, `waiting_approval` or
    /// `interrupted` are never removed, however old; nor are the task rows, approvals
    /// or sequence numbers (a pruned `seq` is never reused).
    pub async fn prune(&self, older_than: Duration) -> Result<PruneReport> {
        match &self.backend {
            Backend::Sqlite(_) => self.sqlite(move |store| store.prune(older_than)).await,
            Backend::Postgres(store) => store.prune(older_than).await,
        }
    }

    /// Creates a schedule. [`crate::Error::NameTaken`] when another schedule has the name.
    pub async fn create_schedule(&self, new: &NewSchedule) -> Result<Schedule> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let new = new.clone();
                self.sqlite(move |store| store.create_schedule(&new)).await
            }
            Backend::Postgres(store) => store.create_schedule(new).await,
        }
    }

    /// One schedule by id ([`crate::Error::NotFound`] with `what = "schedule"` if none).
    pub async fn schedule(&self, id: &str) -> Result<Schedule> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.to_owned();
                self.sqlite(move |store| store.schedule(&id)).await
            }
            Backend::Postgres(store) => store.schedule(id).await,
        }
    }

    /// One schedule by id or, failing that, by name ([`crate::Error::NotFound`] if neither).
    pub async fn find_schedule(&self, id_or_name: &str) -> Result<Schedule> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id_or_name = id_or_name.to_owned();
                self.sqlite(move |store| store.find_schedule(&id_or_name))
                    .await
            }
            Backend::Postgres(store) => store.find_schedule(id_or_name).await,
        }
    }

    /// Every schedule, by name.
    pub async fn schedules(&self) -> Result<Vec<Schedule>> {
        match &self.backend {
            Backend::Sqlite(_) => self.sqlite(move |store| store.schedules()).await,
            Backend::Postgres(store) => store.schedules().await,
        }
    }

    /// Enabled schedules whose `next_fire_at` is at or before `now`, earliest first, at
    /// most `limit`.
    pub async fn due_schedules(&self, now: Timestamp, limit: usize) -> Result<Vec<Schedule>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                self.sqlite(move |store| store.due_schedules(now, limit))
                    .await
            }
            Backend::Postgres(store) => store.due_schedules(now, limit).await,
        }
    }

    /// The earliest `next_fire_at` of the enabled schedules (`None`: nothing planned), so
    /// a scheduler can sleep until then.
    pub async fn earliest_fire_at(&self) -> Result<Option<Timestamp>> {
        match &self.backend {
            Backend::Sqlite(_) => self.sqlite(move |store| store.earliest_fire_at()).await,
            Backend::Postgres(store) => store.earliest_fire_at().await,
        }
    }

    /// Replaces what a schedule is, with its next occurrence recomputed by the caller
    /// (kept `None` while it is disabled). [`crate::Error::NotFound`], [`crate::Error::NameTaken`].
    pub async fn update_schedule(
        &self,
        id: &str,
        spec: &ScheduleSpec,
        next_fire_at: Option<Timestamp>,
    ) -> Result<Schedule> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.to_owned();
                let spec = spec.clone();
                self.sqlite(move |store| store.update_schedule(&id, &spec, next_fire_at))
                    .await
            }
            Backend::Postgres(store) => store.update_schedule(id, spec, next_fire_at).await,
        }
    }

    /// Enables a schedule from `next_fire_at` on (computed by the caller from now: the
    /// occurrences while it was disabled are not caught up), or disables it; either
    /// clears a pause reason. [`crate::Error::NotFound`].
    pub async fn set_schedule_enabled(
        &self,
        id: &str,
        enabled: bool,
        next_fire_at: Option<Timestamp>,
    ) -> Result<Schedule> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.to_owned();
                self.sqlite(move |store| store.set_schedule_enabled(&id, enabled, next_fire_at))
                    .await
            }
            Backend::Postgres(store) => store.set_schedule_enabled(id, enabled, next_fire_at).await,
        }
    }

    /// Removes a schedule and its history (its tasks and their audit rows stay).
    /// [`crate::Error::NotFound`].
    pub async fn delete_schedule(&self, id: &str) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.to_owned();
                self.sqlite(move |store| store.delete_schedule(&id)).await
            }
            Backend::Postgres(store) => store.delete_schedule(id).await,
        }
    }

    /// Fires one occurrence, all in one transaction: claims it with a compare-and-set on
    /// `next_fire_at` (and `updated_at`), records `schedule_missed` when occurrences were
    /// missed, then applies the overlap policy and either creates the task (recording
    /// `schedule_fired`, setting `last_fired_at` and `last_task_id`) or records
    /// `schedule_skipped`. [`Fired::Lost`] when the compare-and-set did not match.
    pub async fn fire_schedule(&self, fire: FireOccurrence) -> Result<Fired> {
        match &self.backend {
            Backend::Sqlite(_) => self.sqlite(move |store| store.fire_schedule(fire)).await,
            Backend::Postgres(store) => store.fire_schedule(fire).await,
        }
    }

    /// Fires a schedule now, at a person's request (`actor`), outside its timetable:
    /// creates its task (or its chat session's next turn) and records `schedule_fired`
    /// with no occurrence and the detail `run now by ACTOR`, in one transaction. `next_fire_at` is
    /// left alone, and so is the overlap policy: the person asked for this run.
    /// [`crate::Error::NotFound`]; [`crate::Error::SessionBusy`] while the session's turn is active.
    pub async fn run_schedule_now(
        &self,
        id: &str,
        task: NewTask,
        actor: Actor,
    ) -> Result<TaskRecord> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.to_owned();
                self.sqlite(move |store| store.run_schedule_now(&id, task, actor))
                    .await
            }
            Backend::Postgres(store) => store.run_schedule_now(id, task, actor).await,
        }
    }

    /// Pauses a schedule whose occurrence `expected_next` could not fire (its workspace
    /// is gone): disables it with `reason` and records `schedule_paused`, if its
    /// `next_fire_at` is still `expected_next`. Returns whether this call paused it.
    pub async fn pause_schedule(
        &self,
        id: &str,
        expected_next: Timestamp,
        reason: &str,
    ) -> Result<bool> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.to_owned();
                let reason = reason.to_owned();
                self.sqlite(move |store| store.pause_schedule(&id, expected_next, &reason))
                    .await
            }
            Backend::Postgres(store) => store.pause_schedule(id, expected_next, reason).await,
        }
    }

    /// A schedule's history, newest first, at most `limit` rows.
    pub async fn schedule_history(&self, id: &str, limit: usize) -> Result<Vec<ScheduleEvent>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.to_owned();
                self.sqlite(move |store| store.schedule_history(&id, limit))
                    .await
            }
            Backend::Postgres(store) => store.schedule_history(id, limit).await,
        }
    }

    /// The tasks matching `filter`, newest first (in the order they were stored).
    pub async fn search_tasks(&self, filter: &TaskFilter) -> Result<Vec<TaskRecord>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let filter = filter.clone();
                self.sqlite(move |store| store.search_tasks(&filter)).await
            }
            Backend::Postgres(store) => store.search_tasks(filter).await,
        }
    }

    /// Creates a `queued` task, with its `task_created` audit row in the same transaction.
    pub async fn create_task(&self, new: NewTask) -> Result<TaskRecord> {
        match &self.backend {
            Backend::Sqlite(_) => self.sqlite(move |store| store.create_task(new)).await,
            Backend::Postgres(store) => store.create_task(new).await,
        }
    }

    /// Creates a task already claimed by this process (`running`), in one transaction, so
    /// no other process's workers can claim it first (`pocketpilot mcp serve` runs its
    /// client's tasks itself).
    pub async fn create_running_task(&self, new: NewTask) -> Result<TaskRecord> {
        match &self.backend {
            Backend::Sqlite(_) => {
                self.sqlite(move |store| store.create_running_task(new))
                    .await
            }
            Backend::Postgres(store) => store.create_running_task(new).await,
        }
    }

    /// One task; [`crate::Error::NotFound`] if there is none with this id.
    pub async fn task(&self, id: &TaskId) -> Result<TaskRecord> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.clone();
                self.sqlite(move |store| store.task(&id)).await
            }
            Backend::Postgres(store) => store.task(id).await,
        }
    }

    /// Up to `limit` tasks, newest first, optionally only those in `state`.
    pub async fn list_tasks(
        &self,
        state: Option<TaskState>,
        limit: usize,
    ) -> Result<Vec<TaskRecord>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                self.sqlite(move |store| store.list_tasks(state, limit))
                    .await
            }
            Backend::Postgres(store) => store.list_tasks(state, limit).await,
        }
    }

    /// Moves the oldest `queued` task to `running` and returns it; `None` if none is
    /// queued. Two processes calling this at once never get the same task.
    pub async fn claim_queued(&self) -> Result<Option<TaskRecord>> {
        match &self.backend {
            Backend::Sqlite(_) => self.sqlite(move |store| store.claim_queued()).await,
            Backend::Postgres(store) => store.claim_queued().await,
        }
    }

    /// Moves one task from one of `from` to `running` ([`crate::Error::Conflict`] otherwise).
    pub async fn claim(&self, id: &TaskId, from: &[TaskState]) -> Result<TaskRecord> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.clone();
                let from = from.to_vec();
                self.sqlite(move |store| store.claim(&id, &from)).await
            }
            Backend::Postgres(store) => store.claim(id, from).await,
        }
    }

    /// Applies `change` if the task is in one of `from` ([`crate::Error::Conflict`] with its
    /// current state otherwise), appending `change.events` in the same transaction.
    pub async fn transition(
        &self,
        id: &TaskId,
        from: &[TaskState],
        change: TaskChange,
    ) -> Result<(TaskRecord, Vec<StoredEvent>)> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.clone();
                let from = from.to_vec();
                self.sqlite(move |store| store.transition(&id, &from, change))
                    .await
            }
            Backend::Postgres(store) => store.transition(id, from, change).await,
        }
    }

    /// Marks every `running` task `interrupted` with `message` as its error (call at
    /// start-up: a task found running was cut off by a crash). Appends no events.
    /// Returns the tasks' ids, oldest first.
    pub async fn interrupt_running(&self, message: &str) -> Result<Vec<TaskId>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let message = message.to_owned();
                self.sqlite(move |store| store.interrupt_running(&message))
                    .await
            }
            Backend::Postgres(store) => store.interrupt_running(message).await,
        }
    }

    /// Records that the process running `id` is alive (a no-op unless it is `running`).
    pub async fn heartbeat(&self, id: &TaskId) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.clone();
                self.sqlite(move |store| store.heartbeat(&id)).await
            }
            Backend::Postgres(store) => store.heartbeat(id).await,
        }
    }

    /// Marks `interrupted` (with `message`) every `running` task whose runner has not
    /// sent a heartbeat for `older_than`: its process stopped. Tasks that a live process
    /// is running are left alone. Returns the tasks' ids, oldest first.
    pub async fn interrupt_stale(
        &self,
        message: &str,
        older_than: Duration,
    ) -> Result<Vec<TaskId>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let message = message.to_owned();
                self.sqlite(move |store| store.interrupt_stale(&message, older_than))
                    .await
            }
            Backend::Postgres(store) => store.interrupt_stale(message, older_than).await,
        }
    }

    /// Adds a user with `role` and a fresh token; returns the user and the token, which
    /// is not stored (only its SHA-256 is). [`crate::Error::NameTaken`] if the name is used.
    pub async fn add_user(&self, name: &str, role: Role) -> Result<(UserRecord, String)> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let name = name.to_owned();
                self.sqlite(move |store| store.add_user(&name, role)).await
            }
            Backend::Postgres(store) => store.add_user(name, role).await,
        }
    }

    /// Every user, by name.
    pub async fn users(&self) -> Result<Vec<UserRecord>> {
        match &self.backend {
            Backend::Sqlite(_) => self.sqlite(move |store| store.users()).await,
            Backend::Postgres(store) => store.users().await,
        }
    }

    /// One user; [`crate::Error::NotFound`] if there is none by this name.
    pub async fn user(&self, name: &str) -> Result<UserRecord> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let name = name.to_owned();
                self.sqlite(move |store| store.user(&name)).await
            }
            Backend::Postgres(store) => store.user(name).await,
        }
    }

    /// Grants `workspace` to the user (a no-op if already granted).
    pub async fn grant_workspace(&self, name: &str, workspace: &str) -> Result<UserRecord> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let name = name.to_owned();
                let workspace = workspace.to_owned();
                self.sqlite(move |store| store.grant_workspace(&name, &workspace))
                    .await
            }
            Backend::Postgres(store) => store.grant_workspace(name, workspace).await,
        }
    }

    /// Takes `workspace` back from the user; the `bool` says whether it was granted.
    pub async fn revoke_workspace(
        &self,
        name: &str,
        workspace: &str,
    ) -> Result<(UserRecord, bool)> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let name = name.to_owned();
                let workspace = workspace.to_owned();
                self.sqlite(move |store| store.revoke_workspace(&name, &workspace))
                    .await
            }
            Backend::Postgres(store) => store.revoke_workspace(name, workspace).await,
        }
    }

    /// Gives the user a new token and ends the user's console logins, in one
    /// transaction: the old token stops working at once. Returns the user, the new token
    /// and how many logins ended.
    pub async fn rotate_user_token(&self, name: &str) -> Result<(UserRecord, String, usize)> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let name = name.to_owned();
                self.sqlite(move |store| store.rotate_user_token(&name))
                    .await
            }
            Backend::Postgres(store) => store.rotate_user_token(name).await,
        }
    }

    /// The user whose token is `token`, if any.
    pub async fn user_by_token(&self, token: &str) -> Result<Option<UserRecord>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let token = token.to_owned();
                self.sqlite(move |store| store.user_by_token(&token)).await
            }
            Backend::Postgres(store) => store.user_by_token(token).await,
        }
    }

    /// Starts a console login for the user `name` that lasts `ttl`; returns its secret
    /// id. Expired logins are purged on the way.
    pub async fn create_user_login(&self, name: &str, ttl: Duration) -> Result<String> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let name = name.to_owned();
                self.sqlite(move |store| store.create_user_login(&name, ttl))
                    .await
            }
            Backend::Postgres(store) => store.create_user_login(name, ttl).await,
        }
    }

    /// Who the live login `login` belongs to; `None` if it does not exist or expired.
    pub async fn login_owner(&self, login: &str) -> Result<Option<LoginOwner>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let login = login.to_owned();
                self.sqlite(move |store| store.login_owner(&login)).await
            }
            Backend::Postgres(store) => store.login_owner(login).await,
        }
    }

    /// Creates a `queued` task as [`Store::create_task`] does, recording `user` (when
    /// given) as its creator on the task and its `task_created` audit row.
    pub async fn create_task_as(&self, new: NewTask, user: Option<&str>) -> Result<TaskRecord> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let user = user.map(str::to_owned);
                self.sqlite(move |store| store.create_task_as(new, user.as_deref()))
                    .await
            }
            Backend::Postgres(store) => store.create_task_as(new, user).await,
        }
    }

    /// Records `user` as the creator of task `id` when none is recorded yet (a chat
    /// turn's task, created by the session code that knows no users).
    pub async fn set_task_user(&self, id: &TaskId, user: &str) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.clone();
                let user = user.to_owned();
                self.sqlite(move |store| store.set_task_user(&id, &user))
                    .await
            }
            Backend::Postgres(store) => store.set_task_user(id, user).await,
        }
    }

    /// Records the team user who created the chat session `id`.
    pub async fn set_chat_session_user(&self, id: &str, user: &str) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.to_owned();
                let user = user.to_owned();
                self.sqlite(move |store| store.set_chat_session_user(&id, &user))
                    .await
            }
            Backend::Postgres(store) => store.set_chat_session_user(id, user).await,
        }
    }

    /// The team user who created the chat session `id` (`None`: none recorded);
    /// [`crate::Error::NotFound`] for an unknown session.
    pub async fn chat_session_user(&self, id: &str) -> Result<Option<String>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.to_owned();
                self.sqlite(move |store| store.chat_session_user(&id)).await
            }
            Backend::Postgres(store) => store.chat_session_user(id).await,
        }
    }

    /// Registers a worker process and returns its row (id `w_…`), forgetting workers
    /// silent for a day on the way.
    pub async fn register_worker(&self, new: NewWorker) -> Result<WorkerRecord> {
        match &self.backend {
            Backend::Sqlite(_) => self.sqlite(move |store| store.register_worker(new)).await,
            Backend::Postgres(store) => store.register_worker(new).await,
        }
    }

    /// Records that worker `id` is alive ([`crate::Error::NotFound`] once it was removed or
    /// forgotten: register again).
    pub async fn worker_heartbeat(&self, id: &str) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.to_owned();
                self.sqlite(move |store| store.worker_heartbeat(&id)).await
            }
            Backend::Postgres(store) => store.worker_heartbeat(id).await,
        }
    }

    /// The workers that sent a heartbeat within `within`, oldest registration first.
    pub async fn live_workers(&self, within: Duration) -> Result<Vec<WorkerRecord>> {
        match &self.backend {
            Backend::Sqlite(_) => self.sqlite(move |store| store.live_workers(within)).await,
            Backend::Postgres(store) => store.live_workers(within).await,
        }
    }

    /// Removes worker `id` (a clean shutdown); removing an unknown worker is not an error.
    pub async fn remove_worker(&self, id: &str) -> Result<()> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let id = id.to_owned();
                self.sqlite(move |store| store.remove_worker(&id)).await
            }
            Backend::Postgres(store) => store.remove_worker(id).await,
        }
    }

    /// Like [`Store::claim_queued`], but only tasks of `workspaces` (by name): a
    /// worker claims only what it can run. `None` if no such task is queued.
    pub async fn claim_queued_in(&self, workspaces: &[String]) -> Result<Option<TaskRecord>> {
        match &self.backend {
            Backend::Sqlite(_) => {
                let workspaces = workspaces.to_vec();
                self.sqlite(move |store| store.claim_queued_in(&workspaces))
                    .await
            }
            Backend::Postgres(store) => store.claim_queued_in(workspaces).await,
        }
    }
}
