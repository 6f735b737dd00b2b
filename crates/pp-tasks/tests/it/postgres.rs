//! The task service on PostgreSQL (a team server's store): the same lifecycle as on
//! SQLite, and two services ("processes") sharing one database run each task once.
//!
//! The server comes from `PP_TEST_POSTGRES_URL` (as in the store's conformance suite);
//! each test makes a schema `tasks_…` of its own with `psql` and connects with
//! `options=-csearch_path=<schema>`. Without the variable the tests print a skip line and
//! pass, except under CI (`CI=true`), where they fail.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use pp_store::{Store, StoreUrl};
use pp_tasks::{CreateTask, ModelSource, TaskService, TaskSettings, Workspaces};
use pp_test_support::TempTree;
use pp_types::{Actor, ApprovalState, EventKind, ManualClock, TaskState, Timestamp};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::fixture::{approve, write_then_done};

/// A fresh schema on the test server (dropped on drop) and the clock of every store on
/// it (its "processes").
struct Schema {
    schema: pp_test_support::postgres::Schema,
    clock: Arc<ManualClock>,
}

impl Schema {
    /// A fresh schema, or `None` (after a skip line) without a server.
    fn create(test: &str) -> Option<Schema> {
        Some(Schema {
            schema: pp_test_support::postgres::Schema::create("tasks", test)?,
            clock: Arc::new(ManualClock::new(Timestamp::now())),
        })
    }

    /// The store URL of this schema.
    fn url(&self) -> StoreUrl {
        self.schema.store_url()
    }
}

/// A service on the schema's database (each call: another process's connections).
async fn service_on(schema: &Schema, tree: &TempTree, workers: usize) -> TaskService {
    let store = Store::connect(&schema.url(), schema.clock.clone())
        .await
        .unwrap();
    assert_eq!(store.backend_name(), "postgres");
    TaskService::new(
        store,
        TaskSettings {
            workers,
            poll_interval: Duration::from_millis(20),
            ..TaskSettings::default()
        },
        Workspaces::single("test", tree.workspace()),
        ModelSource::Scripted,
    )
}

/// Create → run → wait for approval → approve → complete on `service`; a second
/// approval of the same call is refused. Returns the task's event types.
async fn write_after_approval(service: &TaskService, tree: &TempTree) -> Vec<&'static str> {
    tree.file("notes.txt", "old\n");
    let task = service
        .create(CreateTask {
            prompt: "do the thing".into(),
            workspace: None,
            actor: Actor::Operator,
            script: Some(write_then_done("notes.txt", "new\n")),
        })
        .await
        .unwrap();
    let task = service.run_now(&task.id).await.unwrap();
    assert_eq!(task.state, TaskState::WaitingApproval);
    assert_eq!(
        tree.read("notes.txt"),
        "old\n",
        "nothing written before approval"
    );

    let views = service
        .approval_views(Some(ApprovalState::Pending), 10)
        .await
        .unwrap();
    assert_eq!(views.len(), 1);
    let approval = pp_types::ApprovalId(views[0].id.clone());
    let done = service.resolve(&approval, approve()).await.unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(tree.read("notes.txt"), "new\n");
    let second = service.resolve(&approval, approve()).await.unwrap_err();
    assert!(
        matches!(second, pp_tasks::Error::AlreadyResolved { .. }),
        "{second}"
    );
    let view = service.approval_view(&approval).await.unwrap();
    assert_eq!(
        view.outcome.map(|outcome| outcome.status),
        Some(pp_tasks::OutcomeStatus::Done)
    );
    let changes = service.changes().of_task(&task.id).await.unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    // The snapshot of what the write replaced is in the data directory: revert it.
    let reverted = service
        .changes()
        .revert(&changes[0].id, Actor::Operator)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reverted.kind, pp_types::ChangeKind::Reverted);
    assert_eq!(tree.read("notes.txt"), "old\n");
    service
        .task_events_page(&task.id, 0, 100)
        .await
        .unwrap()
        .events
        .iter()
        .map(|stored| stored.event.type_name())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_waits_then_completes_after_approval_as_on_sqlite() {
    let Some(schema) = Schema::create(module_path!()) else {
        return;
    };
    let (tree, data) = (TempTree::new(), tempfile::tempdir().unwrap());
    let service = service_on(&schema, &tree, 2)
        .await
        .with_data_dir(data.path().to_path_buf());
    let on_postgres = write_after_approval(&service, &tree).await;

    let (data, tree) = (tempfile::tempdir().unwrap(), TempTree::new());
    let sqlite = TaskService::new(
        pp_test_support::sqlite_store_with_clock(
            &data.path().join("test.db"),
            Arc::new(ManualClock::new(Timestamp::now())),
        ),
        TaskSettings::default(),
        Workspaces::single("test", tree.workspace()),
        ModelSource::Scripted,
    );
    let on_sqlite = write_after_approval(&sqlite, &tree).await;
    assert_eq!(on_postgres, on_sqlite);
}

/// Two services on one database, each with workers, take 40 queued tasks: every task
/// runs once, in one of them, and the global feed holds each task's start once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_run_each_task_once_on_postgres() {
    let Some(schema) = Schema::create(module_path!()) else {
        return;
    };
    let tree = TempTree::new();
    tree.file("notes.txt", "hello\n");
    let (first, second) = (
        service_on(&schema, &tree, 2).await,
        service_on(&schema, &tree, 2).await,
    );
    let read = json!([
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"content": "done"}
    ]);
    let mut ids = Vec::new();
    for index in 0..40 {
        let service = if index % 2 == 0 { &first } else { &second };
        let task = service
            .create(CreateTask {
                prompt: format!("read {index}"),
                workspace: None,
                actor: Actor::Operator,
                script: Some(read.clone()),
            })
            .await
            .unwrap();
        ids.push(task.id);
    }
    first.start_workers();
    second.start_workers();
    for _ in 0..2000 {
        let done = first
            .list_tasks(Some(TaskState::Completed), 100)
            .await
            .unwrap()
            .len();
        if done == ids.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let completed = first
        .list_tasks(Some(TaskState::Completed), 100)
        .await
        .unwrap();
    assert_eq!(completed.len(), ids.len(), "every task completed");

    // The global feed, read in small pages as a resuming reader does: each task started
    // once and completed once, and the sequence never goes back.
    let mut starts: HashMap<_, usize> = HashMap::new();
    let (mut after, mut seqs) = (0, Vec::new());
    loop {
        let page = second.events_after(after, 7).await.unwrap();
        let Some(last) = page.last() else { break };
        after = last.seq;
        for stored in page {
            seqs.push(stored.seq);
            if matches!(stored.event.kind, EventKind::TaskStarted { .. }) {
                *starts.entry(stored.task_id).or_default() += 1;
            }
        }
    }
    assert!(seqs.windows(2).all(|pair| pair[0] < pair[1]), "{seqs:?}");
    assert_eq!(starts.len(), ids.len());
    assert!(starts.values().all(|&count| count == 1), "{starts:?}");
}

/// Issue 29, item 2 on PostgreSQL: a process without the workspace (A) records the
/// decision and queues the task; the worker that has it (B, another store on the same
/// schema) claims it and runs the call exactly once, or ends the approval `stale` when
/// the target changed since the person saw it (`team::decided_elsewhere`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_made_elsewhere_runs_where_the_files_are() {
    let Some(schema) = Schema::create(module_path!()) else {
        return;
    };
    let tree = TempTree::new();
    let store_a = Store::connect(&schema.url(), schema.clock.clone())
        .await
        .unwrap();
    let store_b = Store::connect(&schema.url(), schema.clock.clone())
        .await
        .unwrap();
    assert_eq!(store_a.backend_name(), "postgres");
    crate::team::decided_elsewhere(store_a, store_b, &tree).await;
}
