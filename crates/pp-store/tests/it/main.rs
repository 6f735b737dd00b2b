//! Integration tests of the store (one binary, see STYLE T2). Every test gets a fresh
//! database file in its own temporary directory.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers panic on setup failure, like the #[test] functions they serve"
)]
#![allow(
    clippy::disallowed_methods,
    reason = "tests inspect the database file they created with std::fs"
)]

mod approvals;
mod audit;
mod backup;
mod changes;
mod chat;
mod concurrency;
mod corrupt;
mod events;
mod logins;
mod open;
mod prune;
mod schedules;
mod task_search;
mod tasks;
mod usage;
mod users;

use std::path::PathBuf;
use std::sync::Arc;

use pp_store::{NewApproval, NewTask, Resolve, Store, TaskChange};
use pp_types::{
    Actor, ApprovalRecord, ApprovalState, CHECKPOINT_VERSION, Checkpoint, EffectPreview, Event,
    EventKind, ManualClock, Message, NewAudit, PendingCall, Risk, TaskId, TaskRecord, TaskState,
    Timestamp, ToolCall, WriteLabel,
};
use serde_json::json;
use tempfile::TempDir;

/// Where every test's manual clock starts: 2026-11-29T20:26:56.123Z.
const START: Timestamp = Timestamp::from_millis(1_795_984_016_123);

/// A fresh database in a temporary directory, on a manual clock standing at [`START`]:
/// tests move time with `db.clock.advance(..)`, never by sleeping.
struct TestDb {
    dir: TempDir,
    store: Store,
    clock: Arc<ManualClock>,
}

impl TestDb {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(START));
        let store =
            Store::open_with_clock(&dir.path().join("pocketpilot.db"), clock.clone()).unwrap();
        Self { dir, store, clock }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("pocketpilot.db")
    }

    /// A second, independent connection to the same file (as another process would),
    /// on the same clock.
    fn open_again(&self) -> Store {
        Store::open_with_clock(&self.path(), self.clock.clone()).unwrap()
    }

    /// A raw SQLite connection, for poking at rows behind the store's back.
    fn raw(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.path()).unwrap()
    }

    fn create(&self, prompt: &str) -> TaskRecord {
        self.store.create_task(new_task(prompt)).unwrap()
    }

    /// A task suspended on a write approval.
    fn waiting(&self, prompt: &str) -> (TaskRecord, ApprovalRecord) {
        let task = self.create(prompt);
        self.store.claim(&task.id, &[TaskState::Queued]).unwrap();
        let (approval, _) = self
            .store
            .suspend(&task.id, new_approval(), suspend_change())
            .unwrap();
        (self.store.task(&task.id).unwrap(), approval)
    }
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
            },
        )],
    }
}

fn ids(tasks: &[TaskRecord]) -> Vec<TaskId> {
    tasks.iter().map(|task| task.id.clone()).collect()
}
