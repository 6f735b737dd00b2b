//! The store's operations, one async method each, dispatched to the backend, all
//! generated from one table (`store_methods!`): each entry is a method's doc, name,
//! arguments and return type. The SQLite backend's synchronous method of the same name
//! runs on the blocking pool ([`Store::sqlite`]), its borrowed arguments first made
//! owned as the entry says (`=> owned`: `to_owned()` then lent as `&`; `=> owned_str`
//! and `=> owned_opt`: an `Option<&str>` or `Option<&T>` made owned, then lent back);
//! the PostgreSQL backend's async method of the same name is awaited with the arguments
//! as given. So both backends have every method with the same arguments and meaning,
//! and the conformance suite (`tests/it`) runs each on both and fails on a method no
//! test calls.
#![allow(clippy::too_many_arguments)]

use std::collections::HashSet;
use std::time::Duration;

use pp_types::{
    Actor, ApprovalId, ApprovalRecord, ApprovalState, AuditAction, AuditEntry, ChangeId, Event,
    Message, NewAudit, Role, StoredEvent, TaskId, TaskRecord, TaskState, Timestamp, UserRecord,
};

use super::{Backend, Store};
use crate::error::Result;
use crate::types::{
    ApprovalLink, AuditFilter, ChangeRow, Changeset, Channel, ChannelChange, ChatSession, ChatTurn,
    DeliveryRecord, DeliveryStatus, FireOccurrence, Fired, LinkEnd, LoginOwner, ModelCallRow,
    NewApproval, NewApprovalLink, NewChange, NewChannel, NewChatSession, NewModelCall,
    NewRemoteMessage, NewSchedule, NewStartedCall, NewTask, NewWorker, PruneReport, Recovered,
    RemoteMessage, Resolve, Schedule, ScheduleEvent, ScheduleSpec, SkillFile, StartedCall,
    TaskChange, TaskFilter, TeamImport, TeamMemory, TeamSkill, WorkerRecord,
};

/// Expands the table into the async [`Store`] methods (see the module doc).
macro_rules! store_methods {
    ($(
        $(#[$doc:meta])*
        fn $name:ident($($arg:ident: $ty:ty $(=> $how:ident)?),* $(,)?) -> $ret:ty;
    )*) => {
        impl Store {
            $(
                $(#[$doc])*
                pub async fn $name(&self, $($arg: $ty),*) -> Result<$ret> {
                    match &self.backend {
                        Backend::Sqlite(_) => {
                            $(owned!($arg $(, $how)?);)*
                            self.sqlite(move |store| store.$name($(lent!($arg $(, $how)?)),*))
                                .await
                        }
                        Backend::Postgres(store) => store.$name($($arg),*).await,
                    }
                }
            )*
        }
    };
}

/// Makes a borrowed argument owned, for the blocking pool (nothing for an owned one).
macro_rules! owned {
    ($arg:ident) => {};
    ($arg:ident, owned) => {
        let $arg = $arg.to_owned();
    };
    ($arg:ident, owned_str) => {
        let $arg = $arg.map(str::to_owned);
    };
    ($arg:ident, owned_opt) => {
        let $arg = $arg.cloned();
    };
}

/// Lends an argument [`owned!`] made owned back as the SQLite method takes it.
macro_rules! lent {
    ($arg:ident) => {
        $arg
    };
    ($arg:ident, owned) => {
        &$arg
    };
    ($arg:ident, owned_str) => {
        $arg.as_deref()
    };
    ($arg:ident, owned_opt) => {
        $arg.as_ref()
    };
}

store_methods! {
    /// Suspends a running task: in one transaction, the task moves `Running →
    /// change.to` (normally `WaitingApproval`; [`crate::Error::Conflict`] if it is not running)
    /// with `change`'s other fields applied and `change.events` appended as given, and the
    /// `news` are inserted `pending`, together one new changeset (in the given order: the
    /// model's), whose pending count is their number.
    ///
    /// The caller cannot know the ids in advance: the store fills the approval id and
    /// the changeset id into every `approval_required` event of `change.events` whose
    /// `approval_id` is `None` and whose `call_id` is an approval's (the returned events
    /// show them); other events are stored as given.
    fn suspend(task: &TaskId => owned, news: Vec<NewApproval>, change: TaskChange) -> (Vec<ApprovalRecord>, Vec<StoredEvent>);

    /// A changeset with its approvals in the model's order; [`crate::Error::NotFound`]
    /// if there is none with this id.
    fn changeset(id: &str => owned) -> Changeset;

    /// One approval; [`crate::Error::NotFound`] if there is none with this id.
    fn approval(id: &ApprovalId => owned) -> ApprovalRecord;

    /// Up to `limit` approvals, newest first, optionally only those in `state`.
    fn list_approvals(state: Option<ApprovalState>, limit: usize) -> Vec<ApprovalRecord>;

    /// Every approval of `task`, oldest first.
    fn approvals_for_task(task: &TaskId => owned) -> Vec<ApprovalRecord>;

    /// The task of every pending approval (one per approval, so a task waiting on two
    /// appears twice): what an inbox badge counts, without reading any checkpoint.
    fn pending_approval_tasks() -> Vec<TaskId>;

    /// Records a decision, all or nothing, in one transaction:
    /// - the approval moves `pending → resolve.state` ([`crate::Error::AlreadyResolved`] if it is
    ///   not pending: this is what turns a double click into a 409), with `resolved_at`,
    ///   `resolved_by`, `reason` and `edited_arguments` (and `resolved_by_user`: the
    ///   audit row's `user`);
    /// - the audit row is appended;
    /// - for an approval of a changeset, the changeset's pending count goes down by one
    ///   (a compare-and-set under the row's lock); the decision that takes it to 0 — or
    ///   on an approval stored before changesets, every decision — moves the task
    ///   `WaitingApproval → resolve.task_to`, the others leave it waiting
    ///   ([`crate::Error::Conflict`] if it is not waiting);
    /// - `resolve.events` are appended.
    fn resolve(id: &ApprovalId => owned, resolve: Resolve) -> (ApprovalRecord, TaskRecord);

    /// Turns an `approved` approval into `stale` (its target changed between the decision
    /// and the moment the call was about to run), with the reason and an audit row, in
    /// one transaction. Any other state is [`crate::Error::AlreadyResolved`].
    fn mark_stale(id: &ApprovalId => owned, reason: &str => owned, audit: NewAudit) -> ApprovalRecord;

    /// The retry path: in one transaction, moves the task from one of `from` (normally
    /// `Interrupted`) to `WaitingApproval`, inserts a new `pending` approval (typically
    /// carrying an older approval's checkpoint) and appends `events`, filling the new
    /// approval's id into `approval_required` events as [`Store::suspend`] does.
    fn reopen_approval(task: &TaskId => owned, from: &[TaskState] => owned, new: NewApproval, events: Vec<Event>) -> ApprovalRecord;

    /// Appends one row (`actor: None` means the operator).
    fn append_audit(entry: NewAudit) -> AuditEntry;

    /// The rows matching `filter`, newest first.
    fn list_audit(filter: &AuditFilter => owned) -> Vec<AuditEntry>;

    /// Cancels a task in one of `from`, in one transaction: applies `change` (whose `to`
    /// must be `cancelled`), cancels its pending approvals (and the approved ones of a
    /// changeset still waiting for other decisions, with the reason
    /// [`crate::NOT_RUN_CANCELLED`]: they never ran), appends `change.events` and
    /// `audit`. The audit row exists exactly when the cancel happened.
    ///
    /// A `running` task whose approved call has not produced its outcome yet is refused
    /// with [`crate::Error::ApprovedCallPending`]: once a person's approval won, a racing cancel
    /// loses (it never stops the approved call halfway or records a cancel that did not
    /// happen). Other states outside `from` are [`crate::Error::Conflict`].
    fn cancel_task(id: &TaskId => owned, from: &[TaskState] => owned, change: TaskChange, audit: NewAudit) -> TaskRecord;

    /// Whether `task` has an approved call whose outcome (executed, failed or denied) is
    /// not in the audit ledger yet.
    fn approved_call_pending(task: &TaskId => owned) -> bool;

    /// Records one change (state `done`).
    fn insert_change(new: NewChange) -> ChangeRow;

    /// One change, whatever its state; [`crate::Error::NotFound`] if there is none.
    fn change(id: &ChangeId => owned) -> ChangeRow;

    /// The task's changes, oldest first (abandoned revert intents left out).
    fn task_changes(task: &TaskId => owned) -> Vec<ChangeRow>;

    /// The changes an approval's call made, oldest first.
    fn approval_changes(approval: &ApprovalId => owned) -> Vec<ChangeRow>;

    /// The ledger's actions (and details) about an approved call, oldest first: what
    /// an approval card's outcome is derived from.
    fn approval_ledger(approval: &ApprovalId => owned) -> Vec<(AuditAction, Option<String>)>;

    /// Records that an approved call is about to run: `started` (what its targets held
    /// right before it) and its `audit` row (`tool_started`), in one transaction.
    fn call_started(started: NewStartedCall, audit: NewAudit) -> ();

    /// Marks the started calls of `task` with no result in the ledger `cut` (they may
    /// or may not have run): what a retry does first. Returns how many.
    fn mark_cut_calls(task: &TaskId => owned) -> usize;

    /// Names `approval` as the one asking again the oldest cut call of `task` with the
    /// same `tool` and `target` that no approval asks again yet; returns that call
    /// (`None`: the approval asks nothing that may already have run).
    fn ask_cut_call_again(approval: &ApprovalId => owned, task: &TaskId => owned, tool: &str => owned, target: Option<&str> => owned_str) -> Option<StartedCall>;

    /// The cut call `approval` asks again, if it is one: what its card's "this call may
    /// already have run" shows.
    fn cut_call_asked_by(approval: &ApprovalId => owned) -> Option<StartedCall>;

    /// Revert intents a crash may have left (`pending`), of one task or (`None`) of all.
    fn pending_reverts(task: Option<&TaskId> => owned_opt) -> Vec<ChangeRow>;

    /// Records a revert's intent before its file write: a `pending` change of kind
    /// `reverted` undoing `of`, in one transaction that checks `of` is still revertible
    /// and has no other revert under way. `None` when it is not (reverted meanwhile).
    fn begin_revert(of: &ChangeId => owned, new: NewChange) -> Option<ChangeRow>;

    /// Records a revert done: the intent becomes `done` with the file's state after the
    /// write, the reverted change gets `reverted_by`, and `audit` is appended (its
    /// `task_id` filled in), all in one transaction.
    fn finish_revert(revert: &ChangeId => owned, after_fingerprint: Option<&str> => owned_str, bytes: Option<u64>, audit: NewAudit) -> ChangeRow;

    /// Marks a revert intent whose write never happened `abandoned`.
    fn abandon_revert(revert: &ChangeId => owned) -> ();

    /// Retention of snapshots: the changes recorded at or before `cutoff` (by the store's
    /// clock, `now - older_than`) lose their kept contents (`expired`: no longer
    /// revertible). Returns how many changes expired and every blob hash still named by
    /// a row, which the snapshot store must keep.
    fn expire_snapshots(older_than: Duration) -> (usize, HashSet<String>);

    /// The team's memory (team mode), `None` when there is none.
    fn team_memory() -> Option<TeamMemory>;

    /// Makes `content` (of version `version`) the team's memory if its version is still
    /// `expected` (`None`: there is no memory yet), in any process sharing the database;
    /// `false` when it is not (nothing is written).
    fn replace_team_memory(expected: Option<&str> => owned_str, content: &str => owned, version: &str => owned) -> bool;

    /// Removes the team's memory if its version is still `expected`; `false` when it is
    /// not, or there is none.
    fn remove_team_memory(expected: &str => owned) -> bool;

    /// Every team skill's name and version, by name (what a skills cache compares).
    fn team_skill_versions() -> Vec<(String, String)>;

    /// The team skill `name` with its files, `None` when there is none.
    fn team_skill(name: &str => owned) -> Option<TeamSkill>;

    /// Makes `files` (of version `version`) the team skill `name` if its version is still
    /// `expected` (`None`: no such skill yet); `false` when it is not (nothing is written).
    fn put_team_skill(name: &str => owned, expected: Option<&str> => owned_str, version: &str => owned, files: &[SkillFile] => owned) -> bool;

    /// Removes the team skill `name` if its version is still `expected`; `false` when it
    /// is not, or there is no such skill.
    fn remove_team_skill(name: &str => owned, expected: &str => owned) -> bool;

    /// The record of the team's one import of memory and skills from a folder.
    fn team_import() -> Option<TeamImport>;

    /// Records the team's import from `source` (`detail`: what was imported); `false`
    /// when one is already recorded.
    fn record_team_import(source: &str => owned, detail: &str => owned) -> bool;

    /// Creates a channel (enabled). Fails with [`crate::Error::NameTaken`] when the name is used.
    fn create_channel(new: &NewChannel => owned) -> Channel;

    /// The channel named `name`, if any.
    fn find_channel(name: &str => owned) -> Option<Channel>;

    /// Every channel, by name.
    fn list_channels() -> Vec<Channel>;

    /// Applies `change` to the channel named `name` and returns it as it is now.
    fn edit_channel(name: &str => owned, change: ChannelChange) -> Channel;

    /// Removes the channel named `name` and its delivery log (the tasks it created stay).
    fn remove_channel(name: &str => owned) -> ();

    /// Replaces the sealed secret of the channel `name` with `sealed` only if it is still
    /// `expected` (re-sealing the same secret under another key: neither `updated_at` nor
    /// `rotated_at` changes); `false` when it is not (rotated or re-sealed meanwhile) or
    /// the channel is gone.
    fn reseal_channel(name: &str => owned, expected: &[u8] => owned, sealed: &[u8] => owned) -> bool;

    /// Records a delivery to the known channel `channel` and trims its log to the newest
    /// [`crate::DELIVERIES_KEPT`] rows. A channel removed meanwhile records nothing.
    fn record_delivery(channel: &str => owned, status: DeliveryStatus, reason: Option<&str> => owned_str, task_id: Option<&TaskId> => owned_opt) -> ();

    /// The newest `limit` deliveries to `channel`, newest first.
    fn channel_deliveries(channel: &str => owned, limit: usize) -> Vec<DeliveryRecord>;

    /// Records `key` (a channel's name and a delivery's signature) as seen until
    /// `expires_at`; `false` when it was already recorded and has not expired (a
    /// replay), in this process or any other sharing the database. Expired keys are
    /// purged on the way.
    fn claim_signature(key: &str => owned, expires_at: Timestamp) -> bool;

    /// Creates an empty chat session, recording the team `user` who created it (team
    /// mode) on it and its `session_created` audit row.
    fn create_chat_session(new: NewChatSession, user: Option<&str> => owned_str) -> ChatSession;

    /// The `limit` most recently active chat sessions (`updated_at`), newest first.
    fn chat_sessions(limit: usize) -> Vec<ChatSession>;

    /// One chat session ([`crate::Error::NotFound`] with `what = "session"` if there is none).
    fn chat_session(id: &str => owned) -> ChatSession;

    /// The session's turns, oldest first ([`crate::Error::NotFound`] for an unknown session).
    fn chat_turns(id: &str => owned) -> Vec<ChatTurn>;

    /// Adds a turn: creates its `queued` task (with the `task_created` audit row) and the
    /// turn row in one transaction. [`crate::Error::SessionBusy`] while the latest turn is
    /// still `queued`, `running` or `waiting_approval`; [`crate::Error::NotFound`] for an
    /// unknown session. The team `user` who sent it (team mode) is recorded on the task
    /// and its `task_created` row.
    fn add_chat_turn(session: &str => owned, new: NewTask, user: Option<&str> => owned_str) -> ChatTurn;

    /// The session and turn index of `task`, if it is a turn of a chat session.
    fn turn_of_task(task: &TaskId => owned) -> Option<(String, u32)>;

    /// Stores the turn's own messages when its task ends; a no-op when `task` is not a
    /// session turn.
    fn set_turn_messages(task: &TaskId => owned, messages: &[Message] => owned) -> ();

    /// Replaces the session's summary, which now covers turns `1..=through`.
    fn set_session_summary(session: &str => owned, summary: &str => owned, through: u32) -> ();

    /// Deletes the session and its turn rows (their tasks, events and audit rows stay).
    /// [`crate::Error::SessionBusy`] while a turn is active; [`crate::Error::NotFound`] if unknown.
    fn delete_chat_session(session: &str => owned, user: Option<&str> => owned_str) -> ();

    /// Appends `events` to `task` in one transaction and returns them with their sequence
    /// numbers ([`crate::Error::NotFound`] if the task does not exist).
    fn append_events(task: &TaskId => owned, events: &[Event] => owned) -> Vec<StoredEvent>;

    /// Appends `events` to `task` and the `audit` rows they caused, in one transaction:
    /// an approved call's result is never stored without its audit row, nor the other
    /// way round.
    fn append_events_with_audit(task: &TaskId => owned, events: &[Event] => owned, audit: Vec<NewAudit>) -> Vec<StoredEvent>;

    /// [`Store::append_events_with_audit`] plus the change-log rows the approved call's
    /// outcome produced, all in one transaction.
    fn append_events_with_records(task: &TaskId => owned, events: &[Event] => owned, audit: Vec<NewAudit>, changes: Vec<NewChange>) -> Vec<StoredEvent>;

    /// [`Store::append_events_with_records`] plus the model calls the events report
    /// (their `assistant_message` events carry the usage), all in one transaction, so a
    /// task's usage and its events never disagree.
    fn append_events_with_calls(task: &TaskId => owned, events: &[Event] => owned, audit: Vec<NewAudit>, changes: Vec<NewChange>, calls: Vec<NewModelCall>) -> Vec<StoredEvent>;

    /// The task's events with `seq > after_seq`, oldest first (`after_seq = 0`: all).
    fn task_events(task: &TaskId => owned, after_seq: i64) -> Vec<StoredEvent>;

    /// Up to `limit` of the task's events with `seq > after_seq`, oldest first: one page
    /// (pass the last `seq` of a page to get the next one; an empty page is the end).
    fn task_events_page(task: &TaskId => owned, after_seq: i64, limit: usize) -> Vec<StoredEvent>;

    /// Up to `limit` events of all tasks with `seq > after_seq`, oldest first.
    fn events_after(after_seq: i64, limit: usize) -> Vec<StoredEvent>;

    /// The newest event's sequence number; 0 when there are none.
    fn last_seq() -> i64;

    /// Starts a console login that lasts `ttl` and returns its secret id (64 hex
    /// characters, 256 random bits). Expired logins are purged on the way.
    fn create_login(ttl: Duration) -> String;

    /// Whether `login` exists and has not expired.
    fn login_valid(login: &str => owned) -> bool;

    /// Ends `login` (logging out); a no-op for an unknown login.
    fn delete_login(login: &str => owned) -> ();

    /// Ends every console login (after the API token was rotated); returns how many.
    fn delete_all_logins() -> usize;

    /// The task's model calls, oldest first.
    fn model_calls(task: &TaskId => owned) -> Vec<ModelCallRow>;

    /// Removes, in one transaction, the events and audit rows older than `older_than`
    /// (by the store's clock) of tasks that finished (`completed`, `failed`,
    /// `cancelled`, `timed_out`) before that, and audit rows tied to no task (console
    /// logins) older than that.
    ///
    /// The rows of tasks that are `queued`, `running`, `waiting_approval` or
    /// `interrupted` are never removed, however old; nor are the task rows, approvals
    /// or sequence numbers (a pruned `seq` is never reused).
    fn prune(older_than: Duration) -> PruneReport;

    /// Creates a schedule. [`crate::Error::NameTaken`] when another schedule has the name.
    fn create_schedule(new: &NewSchedule => owned) -> Schedule;

    /// One schedule by id ([`crate::Error::NotFound`] with `what = "schedule"` if none).
    fn schedule(id: &str => owned) -> Schedule;

    /// One schedule by id or, failing that, by name ([`crate::Error::NotFound`] if neither).
    fn find_schedule(id_or_name: &str => owned) -> Schedule;

    /// Every schedule, by name.
    fn schedules() -> Vec<Schedule>;

    /// Enabled schedules whose `next_fire_at` is at or before `now`, earliest first, at
    /// most `limit`.
    fn due_schedules(now: Timestamp, limit: usize) -> Vec<Schedule>;

    /// The earliest `next_fire_at` of the enabled schedules (`None`: nothing planned), so
    /// a scheduler can sleep until then.
    fn earliest_fire_at() -> Option<Timestamp>;

    /// Replaces what a schedule is, with its next occurrence recomputed by the caller
    /// (kept `None` while it is disabled). [`crate::Error::NotFound`], [`crate::Error::NameTaken`].
    fn update_schedule(id: &str => owned, spec: &ScheduleSpec => owned, next_fire_at: Option<Timestamp>) -> Schedule;

    /// Enables a schedule from `next_fire_at` on (computed by the caller from now: the
    /// occurrences while it was disabled are not caught up), or disables it; either
    /// clears a pause reason. [`crate::Error::NotFound`].
    fn set_schedule_enabled(id: &str => owned, enabled: bool, next_fire_at: Option<Timestamp>) -> Schedule;

    /// Removes a schedule and its history (its tasks and their audit rows stay).
    /// [`crate::Error::NotFound`].
    fn delete_schedule(id: &str => owned) -> ();

    /// Fires one occurrence, all in one transaction: claims it with a compare-and-set on
    /// `next_fire_at` (and `updated_at`), records `schedule_missed` when occurrences were
    /// missed, then applies the overlap policy and either creates the task (recording
    /// `schedule_fired`, setting `last_fired_at` and `last_task_id`) or records
    /// `schedule_skipped`. [`Fired::Lost`] when the compare-and-set did not match.
    fn fire_schedule(fire: FireOccurrence) -> Fired;

    /// Fires a schedule now, at a person's request (`actor`), outside its timetable:
    /// creates its task (or its chat session's next turn) and records `schedule_fired`
    /// with no occurrence and the detail `run now by ACTOR`, in one transaction. `next_fire_at` is
    /// left alone, and so is the overlap policy: the person asked for this run.
    /// [`crate::Error::NotFound`]; [`crate::Error::SessionBusy`] while the session's turn is active.
    fn run_schedule_now(id: &str => owned, task: NewTask, actor: Actor) -> TaskRecord;

    /// Pauses a schedule whose occurrence `expected_next` could not fire (its workspace
    /// is gone): disables it with `reason` and records `schedule_paused`, if its
    /// `next_fire_at` is still `expected_next`. Returns whether this call paused it.
    fn pause_schedule(id: &str => owned, expected_next: Timestamp, reason: &str => owned) -> bool;

    /// A schedule's history, newest first, at most `limit` rows.
    fn schedule_history(id: &str => owned, limit: usize) -> Vec<ScheduleEvent>;

    /// The tasks matching `filter`, newest first (in the order they were stored).
    fn search_tasks(filter: &TaskFilter => owned) -> Vec<TaskRecord>;

    /// Creates a `queued` task, with its `task_created` audit row in the same transaction.
    fn create_task(new: NewTask) -> TaskRecord;

    /// Creates a task already claimed by this process (`running`), in one transaction, so
    /// no other process's workers can claim it first (`pocketpilot mcp serve` runs its
    /// client's tasks itself).
    fn create_running_task(new: NewTask) -> TaskRecord;

    /// One task; [`crate::Error::NotFound`] if there is none with this id.
    fn task(id: &TaskId => owned) -> TaskRecord;

    /// The tasks with these ids, in one query, in no particular order; an id with no
    /// task is simply absent (what a list of approvals reads its tasks with).
    fn tasks_by_ids(ids: &[TaskId] => owned) -> Vec<TaskRecord>;

    /// Up to `limit` tasks, newest first, optionally only those in `state`.
    fn list_tasks(state: Option<TaskState>, limit: usize) -> Vec<TaskRecord>;

    /// Moves the oldest `queued` task to `running` and returns it; `None` if none is
    /// queued. Two processes calling this at once never get the same task.
    fn claim_queued() -> Option<TaskRecord>;

    /// Moves one task from one of `from` to `running` ([`crate::Error::Conflict`] otherwise).
    fn claim(id: &TaskId => owned, from: &[TaskState] => owned) -> TaskRecord;

    /// Applies `change` if the task is in one of `from` ([`crate::Error::Conflict`] with its
    /// current state otherwise), appending `change.events` in the same transaction.
    fn transition(id: &TaskId => owned, from: &[TaskState] => owned, change: TaskChange) -> (TaskRecord, Vec<StoredEvent>);

    /// Marks every `running` task `interrupted` with `message` as its error (call at
    /// start-up: a task found running was cut off by a crash). Appends no events.
    /// Returns the tasks' ids, oldest first.
    fn interrupt_running(message: &str => owned) -> Vec<TaskId>;

    /// Records that the process running `id` is alive (a no-op unless it is `running`
    /// and no cancel was requested on it: [`Store::request_cancel`]).
    fn heartbeat(id: &TaskId => owned) -> ();

    /// Marks `interrupted` (with `message`) every `running` task whose runner has not
    /// sent a heartbeat for `older_than`: its process stopped. A stale task whose cancel
    /// was requested ([`Store::request_cancel`]) ends `cancelled` instead, with
    /// [`crate::CANCELLED_AFTER_STOP`] as its error, its `task_cancelled` event and the
    /// audit row naming who asked, in the same transaction. Tasks that a live process is
    /// running are left alone.
    fn interrupt_stale(message: &str => owned, older_than: Duration) -> Recovered;

    /// Records that `user` (or the operator, `None`) asked to cancel the `running` task
    /// `id` and that its process is leaving it without waiting for the running call to
    /// stop (a second Ctrl+C in `run`): the request is stored on the task and its
    /// heartbeat cleared, so it gets no more heartbeats and the next recovery
    /// ([`Store::interrupt_stale`]) ends it `cancelled`. Any later state change clears
    /// the request. `false` (nothing recorded) unless the task is `running`.
    fn request_cancel(id: &TaskId => owned, user: Option<&str> => owned_str) -> bool;

    /// Adds a user with `role` and a fresh token; returns the user and the token, which
    /// is not stored (only its SHA-256 is). [`crate::Error::NameTaken`] if the name is used.
    fn add_user(name: &str => owned, role: Role) -> (UserRecord, String);

    /// Every user, by name.
    fn users() -> Vec<UserRecord>;

    /// One user; [`crate::Error::NotFound`] if there is none by this name.
    fn user(name: &str => owned) -> UserRecord;

    /// Grants `workspace` to the user (a no-op if already granted).
    fn grant_workspace(name: &str => owned, workspace: &str => owned) -> UserRecord;

    /// Takes `workspace` back from the user; the `bool` says whether it was granted.
    fn revoke_workspace(name: &str => owned, workspace: &str => owned) -> (UserRecord, bool);

    /// Gives the user a new token and ends the user's console logins, in one
    /// transaction: the old token stops working at once. Returns the user, the new token
    /// and how many logins ended.
    fn rotate_user_token(name: &str => owned) -> (UserRecord, String, usize);

    /// Removes the user, in one transaction: their row (so their token stops working),
    /// their grants and their console logins. Their tasks, approvals and audit rows stay,
    /// naming them. [`crate::Error::LastOwner`] for the only owner. Returns the user as
    /// they were and how many logins ended.
    fn remove_user(name: &str => owned) -> (UserRecord, usize);

    /// Gives the user `role`; [`crate::Error::LastOwner`] when that would leave no
    /// owner. Returns the user as they are now and their role before.
    fn set_user_role(name: &str => owned, role: Role) -> (UserRecord, Role);

    /// The user whose token is `token`, if any.
    fn user_by_token(token: &str => owned) -> Option<UserRecord>;

    /// Starts a console login for the user `name` that lasts `ttl`; returns its secret
    /// id. Expired logins are purged on the way.
    fn create_user_login(name: &str => owned, ttl: Duration) -> String;

    /// Who the live login `login` belongs to; `None` if it does not exist or expired.
    fn login_owner(login: &str => owned) -> Option<LoginOwner>;

    /// Creates a `queued` task as [`Store::create_task`] does, recording `user` (when
    /// given) as its creator on the task and its `task_created` audit row.
    fn create_task_as(new: NewTask, user: Option<&str> => owned_str) -> TaskRecord;

    /// Records `user` as the creator of task `id` when none is recorded yet (a chat
    /// turn's task, created by the session code that knows no users).
    fn set_task_user(id: &TaskId => owned, user: &str => owned) -> ();

    /// Records the team user who created the chat session `id`.
    fn set_chat_session_user(id: &str => owned, user: &str => owned) -> ();

    /// The team user who created the chat session `id` (`None`: none recorded);
    /// [`crate::Error::NotFound`] for an unknown session.
    fn chat_session_user(id: &str => owned) -> Option<String>;

    /// Registers a worker process and returns its row (id `w_…`), forgetting workers
    /// silent for a day on the way.
    fn register_worker(new: NewWorker) -> WorkerRecord;

    /// Records that worker `id` is alive ([`crate::Error::NotFound`] once it was removed or
    /// forgotten: register again).
    fn worker_heartbeat(id: &str => owned) -> ();

    /// The workers that sent a heartbeat within `within`, oldest registration first.
    fn live_workers(within: Duration) -> Vec<WorkerRecord>;

    /// Removes worker `id` (a clean shutdown); removing an unknown worker is not an error.
    fn remove_worker(id: &str => owned) -> ();

    /// Deletes the workers silent for longer than `silent_for` (dead processes: their
    /// rows only said which workspaces they had); how many were deleted.
    fn forget_workers(silent_for: Duration) -> u64;

    /// Like [`Store::claim_queued`], but only tasks of `workspaces` (by name): a
    /// worker claims only what it can run. `None` if no such task is queued.
    fn claim_queued_in(workspaces: &[String] => owned) -> Option<TaskRecord>;

    /// Creates an approval link to `new.approval_id` lasting `new.ttl`
    /// ([`crate::Error::NotFound`] for an unknown approval); returns the link and its
    /// token (256 random bits as 64 hex characters), which is not stored: only its
    /// SHA-256 is.
    fn create_approval_link(new: NewApprovalLink) -> (ApprovalLink, String);

    /// The approval link whose token is `token` (looked up by its SHA-256), whatever
    /// its state; `None` if there is none.
    fn approval_link(token: &str => owned) -> Option<ApprovalLink>;

    /// Ends the approval link `token` with `ended`, exactly once, as a compare-and-set:
    /// with `from: None`, only if it is still open — and to end it `used`, only if it has
    /// not expired; to end it `expired`, only if it has — so of two requests using one
    /// link, one wins. With `from: Some(end)`, only if it ended `end` (a link claimed
    /// `used` whose decision did not happen is corrected to `changed`, `forbidden` or
    /// `decided`). `false` when it was not in that state (or there is no such link).
    fn end_approval_link(token: &str => owned, ended: LinkEnd, from: Option<LinkEnd>) -> bool;

    /// Ends every open link of `approval` `revoked` (`approvals unlink`); how many.
    fn revoke_approval_links(approval: &ApprovalId => owned) -> usize;

    /// Ends every open link bound to the team user `user` `revoked` (the user was
    /// removed); how many.
    fn revoke_user_links(user: &str => owned) -> usize;

    /// Records a card message a bot sent (`messenger` `telegram`, …): bound to one
    /// approval and the precheck fingerprint of its target at send time, its buttons
    /// carrying `callback_id`. A second row for the same (messenger, chat, message) is
    /// a database error.
    fn add_remote_message(new: NewRemoteMessage) -> RemoteMessage;

    /// The card message `message_id` of `chat_id`, if the bot sent it (a tap on any other
    /// message is not applied).
    fn remote_message(messenger: &str => owned, chat_id: &str => owned, message_id: &str => owned) -> Option<RemoteMessage>;

    /// Every card message about `approval`, oldest first.
    fn remote_messages_for_approval(messenger: &str => owned, approval: &ApprovalId => owned) -> Vec<RemoteMessage>;

    /// The card messages of `messenger` not settled yet, oldest first.
    fn live_remote_messages(messenger: &str => owned) -> Vec<RemoteMessage>;

    /// Settles a card message with `outcome` (what it was edited to), once: `true` if
    /// this call did, `false` if it was settled already (a second tap, another process).
    fn settle_remote_message(messenger: &str => owned, chat_id: &str => owned, message_id: &str => owned, outcome: &str => owned) -> bool;

    /// The stored update offset of `messenger` (Telegram's next `getUpdates` offset) and
    /// when it was last stored, if ever: a restart goes on from there and replays no
    /// tap, and knows how long updates may have waited.
    fn remote_offset(messenger: &str => owned) -> Option<(i64, Timestamp)>;

    /// Stores the update offset of `messenger` (a smaller one than stored is ignored)
    /// and that the updates were read at the store clock's now.
    fn set_remote_offset(messenger: &str => owned, offset: i64) -> ();

    /// Takes or renews the poller lease of `messenger` for `holder` until the store
    /// clock's now + `ttl`: `true` if `holder` holds it now (it was free, expired or
    /// `holder`'s already), `false` while another holder's lease runs. One poller at a
    /// time across processes.
    fn acquire_remote_lease(messenger: &str => owned, holder: &str => owned, ttl: Duration) -> bool;

    /// Gives the poller lease up if `holder` holds it (a clean shutdown).
    fn release_remote_lease(messenger: &str => owned, holder: &str => owned) -> ();

    /// Whether a refused tap in `chat_id` gets an audit row now: `true` (and the window
    /// starts again) unless one was audited within `window` — refusals are audited at
    /// most once per chat per window, so a stranger tapping cannot flood the ledger.
    fn note_remote_refusal(messenger: &str => owned, chat_id: &str => owned, window: Duration) -> bool;
}
