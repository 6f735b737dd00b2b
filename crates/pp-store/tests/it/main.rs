//! Integration tests of the store (one binary, see STYLE T2): one conformance suite for
//! both backends. Generic tests run on a fresh SQLite file and in a fresh PostgreSQL
//! schema (`backend.rs`, `both!`); the SQLite-only ones live in `sqlite/`; `coverage.rs`
//! fails on a store method no generic test calls.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers panic on setup failure, like the #[test] functions they serve"
)]
#![allow(
    clippy::disallowed_methods,
    reason = "tests inspect the database file they created with std::fs"
)]

#[macro_use]
mod backend;

mod approvals;
mod audit;
mod changes;
mod changesets;
mod channels;
mod chat;
mod concurrency;
mod coverage;
mod events;
mod knowledge;
mod links;
mod logins;
mod prune;
mod remote;
mod schedules;
mod sqlite;
mod started;
mod store;
mod task_search;
mod tasks;
mod usage;
mod users;
mod workers;

use std::path::PathBuf;
use std::sync::Arc;

use pp_store::{NewApproval, NewTask, Resolve, Store, StoreUrl, TaskChange};
use pp_types::{
    Actor, ApprovalRecord, ApprovalState, CHECKPOINT_VERSION, Checkpoint, EffectPreview, Event,
    EventKind, ManualClock, Message, NewAudit, PendingCall, Risk, TaskId, TaskRecord, TaskState,
    Timestamp, ToolCall, WriteLabel,
};
use serde_json::json;

use backend::TestDb;

/// Where every test's manual clock starts: 2026-11-29T20:26:56.123Z.
const START: Timestamp = Timestamp::from_millis(1_795_984_016_123);

impl TestDb {
    async fn create(&self, prompt: &str) -> TaskRecord {
        self.store.create_task(new_task(prompt)).await.unwrap()
    }

    /// A task suspended on a write approval.
    async fn waiting(&self, prompt: &str) -> (TaskRecord, ApprovalRecord) {
        let task = self.create(prompt).await;
        self.store
            .claim(&task.id, &[TaskState::Queued])
            .await
            .unwrap();
        let (approval, _) = self
            .store
            .suspend(&task.id, vec![new_approval()], suspend_change())
            .await
            .map(|(mut approvals, events)| (approvals.remove(0), events))
            .unwrap();
        (self.store.task(&task.id).await.unwrap(), approval)
    }
}

/// Opens the SQLite file at `path` on the system clock, off the async threads.
async fn open_file(path: &std::path::Path) -> pp_store::Result<Store> {
    let url = StoreUrl::Sqlite(path.to_path_buf());
    Store::connect(&url, Arc::new(pp_types::SystemClock)).await
}

/// Opens the SQLite file at `path` on `clock`, off the async threads.
async fn open_file_with_clock(
    path: &std::path::Path,
    clock: Arc<ManualClock>,
) -> pp_store::Result<Store> {
    Store::connect(&StoreUrl::Sqlite(path.to_path_buf()), clock).await
}

/// The `-wal` or `-shm` file next to `path`.
fn sidecar(path: &std::path::Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn new_task(prompt: &str) -> NewTask {
    NewTask {
        prompt: prompt.into(),
        workspace: "home".into(),
        workspace_path: "/srv/home".into(),
        created_by: Actor::Operator,
        origin: None,
        script: None,
    }
}

fn event(step: u32, kind: EventKind) -> Event {
    Event { step, kind }
}

fn started(prompt: &str) -> Event {
    event(
        0,
        EventKind::TaskStarted {
            prompt: prompt.into(),
        },
    )
}

fn write_call() -> ToolCall {
    ToolCall {
        id: "call_1".into(),
        name: "write_file".into(),
        arguments: r#"{"path":"notes/summary.md","content":"Three points."}"#.into(),
    }
}

/// A realistic checkpoint: a pending write with a preview, a later call, the whole
/// conversation and the segment's events.
fn checkpoint() -> Checkpoint {
    let call = write_call();
    let later = ToolCall {
        id: "call_2".into(),
        name: "read_file".into(),
        arguments: r#"{"path":"notes.md"}"#.into(),
    };
    let arguments = json!({"path": "notes/summary.md", "content": "Three points."});
    Checkpoint {
        version: CHECKPOINT_VERSION,
        pending: PendingCall {
            call: call.clone(),
            arguments,
            capability: "file:write".into(),
            risk: Risk::High,
            preview: Some(EffectPreview {
                target: "notes/summary.md".into(),
                resolved: None,
                notice: None,
                label: WriteLabel::Create,
                diff: None,
                content: Some("Three points.".into()),
                fingerprint: "absent".into(),
                scope: None,
                added: None,
                removed: None,
                ..Default::default()
            }),
        },
        more_pending: Vec::new(),
        later_calls: vec![later.clone()],
        messages: vec![
            Message::system("You are PocketPilot. Ünïcode ✓"),
            Message::user("Summarise notes.md into notes/summary.md"),
            Message::Assistant {
                content: Some("Writing the summary.".into()),
                tool_calls: vec![call.clone(), later],
                reasoning_content: None,
            },
        ],
        step: 1,
        denials: 0,
        tokens_used: 1234,
        last_usage: None,
        events: vec![
            started("Summarise notes.md into notes/summary.md"),
            event(
                1,
                EventKind::ToolCall {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments,
                },
            ),
        ],
    }
}

fn new_approval() -> NewApproval {
    let checkpoint = checkpoint();
    NewApproval {
        tool: "write_file".into(),
        capability: "file:write".into(),
        risk: Risk::High,
        label: Some(WriteLabel::Create),
        target: Some("notes/summary.md".into()),
        arguments: checkpoint.pending.arguments.clone(),
        fingerprint: Some("absent".into()),
        call_id: checkpoint.pending.call.id.clone(),
        changeset_id: None,
        checkpoint,
        revertible: Some(true),
    }
}

fn approval_required() -> Event {
    let checkpoint = checkpoint();
    event(
        1,
        EventKind::ApprovalRequired {
            approval_id: None,
            changeset_id: None,
            call_id: "call_1".into(),
            name: "write_file".into(),
            capability: "file:write".into(),
            risk: Risk::High,
            arguments: checkpoint.pending.arguments,
            preview: checkpoint.pending.preview.map(Box::new),
        },
    )
}

fn suspend_change() -> TaskChange {
    TaskChange {
        add_running_ms: 40,
        events: vec![approval_required()],
        ..TaskChange::to(TaskState::WaitingApproval)
    }
}

/// The operator approves, the task runs again.
fn approve() -> Resolve {
    Resolve {
        state: ApprovalState::Approved,
        actor: Actor::Operator,
        reason: None,
        edited_arguments: None,
        edited_preview: None,
        fingerprint: None,
        audit: NewAudit {
            tool: Some("write_file".into()),
            target: Some("notes/summary.md".into()),
            ..NewAudit::new(pp_types::AuditAction::ApprovalApproved)
        },
        task_to: TaskState::Running,
        events: vec![event(
            1,
            EventKind::ApprovalResolved {
                call_id: "call_1".into(),
                decision: pp_types::ResolutionKind::Approved,
                edited: false,
                reason: None,
                arguments: None,
                preview: None,
                edited_by: None,
            },
        )],
    }
}

fn ids(tasks: &[TaskRecord]) -> Vec<TaskId> {
    tasks.iter().map(|task| task.id.clone()).collect()
}

/// Runs `work` once per store, each on its own tokio task, released together by a
/// barrier (as several processes racing for one row would be), and returns the outcomes
/// in the stores' order.
async fn race<T, F, Fut>(stores: Vec<Store>, work: F) -> Vec<T>
where
    F: Fn(usize, Store) -> Fut,
    Fut: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let barrier = Arc::new(tokio::sync::Barrier::new(stores.len()));
    let handles: Vec<_> = stores
        .into_iter()
        .enumerate()
        .map(|(index, store)| {
            let work = work(index, store);
            let barrier = Arc::clone(&barrier);
            tokio::spawn(async move {
                barrier.wait().await;
                work.await
            })
        })
        .collect();
    let mut outcomes = Vec::with_capacity(handles.len());
    for handle in handles {
        outcomes.push(handle.await.unwrap());
    }
    outcomes
}
