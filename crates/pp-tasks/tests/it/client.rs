//! The client session behind `pocketpilot mcp serve`: calls as assistant turns of tasks
//! created by `mcp_client`, a task's share of the connection, concurrent calls around a
//! suspended write, a stale approval, and what is never offered.

use std::sync::Arc;
use std::time::Duration;

use pp_store::Store;
use pp_tasks::{
    ClientLink, ClientSession, ClientSettings, Decision, ModelSource, ResolveRequest, TaskService,
    TaskSettings, TaskShare, Waiting, Workspaces,
};
use pp_test_support::{TempTree, wait_until_async};
use pp_types::{Actor, ApprovalId, ManualClock, TaskRecord, TaskState, Timestamp};
use serde_json::json;

struct Setup {
    tree: TempTree,
    _data: tempfile::TempDir,
    store: Store,
    session: Arc<ClientSession>,
    /// Another process on the same database, resolving approvals.
    other: TaskService,
    /// The clock both processes' stores read.
    clock: Arc<ManualClock>,
}

fn setup(settings: TaskSettings) -> Setup {
    let tree = TempTree::new();
    let data = tempfile::tempdir().unwrap();
    let path = data.path().join("test.db");
    let clock = Arc::new(ManualClock::new(Timestamp::now()));
    let store = pp_test_support::sqlite_store_with_clock(&path, clock.clone());
    let link = Arc::new(ClientLink::new(TaskShare::of(&settings)));
    let service = TaskService::build(
        store.clone(),
        settings.clone(),
        Workspaces::single("test", tree.workspace()),
        ModelSource::Driven(Arc::clone(&link) as _),
        pp_tools::Toolbox::files(),
        Some(Arc::clone(&link) as _),
    );
    let other = TaskService::new(
        pp_test_support::sqlite_store_with_clock(&path, clock.clone()),
        settings,
        Workspaces::single("test", tree.workspace()),
        ModelSource::Scripted,
    );
    let session = ClientSession::new(
        service,
        link,
        ClientSettings {
            wait_limit: Duration::from_secs(120),
            progress_every: Duration::from_secs(5),
            poll: Duration::from_millis(10),
        },
    );
    session.set_client("unit-client", "0.1");
    Setup {
        tree,
        _data: data,
        store,
        session: Arc::new(session),
        other,
        clock,
    }
}

/// How long a test waits for something before it fails.
const WITHIN: Duration = Duration::from_secs(30);

fn quiet(_: &Waiting) {}

/// The tasks, oldest first (the store lists them newest first; tasks created at one
/// instant of the manual clock keep that order).
async fn tasks(setup: &Setup) -> Vec<TaskRecord> {
    let mut tasks = setup.store.list_tasks(None, 100).await.unwrap();
    tasks.reverse();
    tasks.sort_by_key(|task| task.created_at);
    tasks
}

/// Waits for the (only) pending approval and returns its id.
async fn pending_approval(store: &Store) -> ApprovalId {
    let mut found = None;
    let waited = wait_until_async(WITHIN, async || {
        let pending = store
            .list_approvals(Some(pp_types::ApprovalState::Pending), 10)
            .await
            .unwrap();
        found = pending.first().map(|approval| approval.id.clone());
        found.is_some()
    })
    .await;
    assert!(waited, "no approval became pending");
    found.unwrap()
}

fn decide(decision: Decision) -> ResolveRequest {
    ResolveRequest {
        decision,
        edited_arguments: None,
        reason: None,
        seen_fingerprint: None,
        actor: Actor::Operator,
        wait: true,
        via: Some(pp_types::Via::Api),
        remote_user: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_hands_on_to_the_next_after_its_share_of_calls() {
    let setup = setup(TaskSettings {
        max_steps: 4,
        ..TaskSettings::default()
    });
    setup.tree.file("a.txt", "alpha\n");
    for _ in 0..5 {
        let reply = setup
            .session
            .call("read_file", json!({"path": "a.txt"}), &quiet)
            .await;
        assert!(!reply.is_error, "{reply:?}");
        assert!(reply.text.contains("alpha"), "{reply:?}");
        setup.clock.advance(Duration::from_secs(1));
    }
    setup.session.close().await;
    let tasks = tasks(&setup).await;
    // Two calls per task (max_steps − 2): three tasks, all ended, all the client's.
    assert_eq!(tasks.len(), 3, "{tasks:?}");
    for task in &tasks {
        assert_eq!(task.created_by, Actor::McpClient);
        assert_eq!(task.state, TaskState::Completed, "{task:?}");
        assert!(task.prompt.contains("`unit-client 0.1`"), "{}", task.prompt);
        assert_eq!(task.origin.as_deref(), Some("unit-client 0.1"));
    }
    assert!(
        tasks[2]
            .final_text
            .as_deref()
            .unwrap()
            .contains("disconnected")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_while_a_write_waits_runs_in_a_new_task() {
    let setup = setup(TaskSettings::default());
    setup.tree.file("a.txt", "alpha\n");
    let session = Arc::clone(&setup.session);
    let write = tokio::spawn(async move {
        session
            .call(
                "write_file",
                json!({"path": "b.txt", "content": "bravo\n"}),
                &quiet,
            )
            .await
    });
    let approval = pending_approval(&setup.store).await;
    let read = setup
        .session
        .call("read_file", json!({"path": "a.txt"}), &quiet)
        .await;
    assert!(read.text.contains("alpha"), "{read:?}");
    assert!(!setup.tree.exists("b.txt"));

    setup
        .other
        .resolve(&approval, decide(Decision::Approve))
        .await
        .unwrap();
    let written = write.await.unwrap();
    assert!(!written.is_error, "{written:?}");
    assert_eq!(setup.tree.read("b.txt"), "bravo\n");
    setup.session.close().await;

    let tasks = tasks(&setup).await;
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    assert!(tasks.iter().all(|task| task.state == TaskState::Completed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_approval_tells_the_client_the_call_did_not_run() {
    let setup = setup(TaskSettings::default());
    setup.tree.file("a.txt", "alpha\n");
    let session = Arc::clone(&setup.session);
    let write = tokio::spawn(async move {
        session
            .call(
                "write_file",
                json!({"path": "a.txt", "content": "overwritten\n"}),
                &quiet,
            )
            .await
    });
    let approval = pending_approval(&setup.store).await;
    setup
        .tree
        .file("a.txt", "changed by the person meanwhile\n");
    let _ = setup
        .other
        .resolve(&approval, decide(Decision::Approve))
        .await;
    let reply = write.await.unwrap();
    assert!(reply.is_error, "{reply:?}");
    assert_eq!(
        setup.tree.read("a.txt"),
        "changed by the person meanwhile\n"
    );
    setup.session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_that_are_not_served_are_refused_without_a_task() {
    let setup = setup(TaskSettings::default());
    let names: Vec<String> = setup
        .session
        .tools()
        .await
        .unwrap()
        .into_iter()
        .map(|spec| spec.name)
        .collect();
    assert!(names.contains(&"write_file".to_owned()), "{names:?}");
    for name in ["run_command", "memory_write", "no_such_tool"] {
        let reply = setup.session.call(name, json!({}), &quiet).await;
        assert!(reply.is_error, "{name}: {reply:?}");
        assert!(reply.text.contains("unknown tool"), "{reply:?}");
    }
    setup.session.close().await;
    assert!(tasks(&setup).await.is_empty());
}

/// Another process's workers (the console's `serve`) never claim the connection's tasks:
/// they are stored already running here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_process_workers_never_take_the_connection_tasks() {
    let setup = setup(TaskSettings {
        max_steps: 3,
        poll_interval: Duration::from_millis(1),
        ..TaskSettings::default()
    });
    setup.other.start_workers();
    setup.tree.file("a.txt", "alpha\n");
    for _ in 0..12 {
        let reply = setup
            .session
            .call("read_file", json!({"path": "a.txt"}), &quiet)
            .await;
        assert!(!reply.is_error, "{reply:?}");
    }
    setup.session.close().await;
    let tasks = tasks(&setup).await;
    assert_eq!(tasks.len(), 12, "one call per task with max_steps 3");
    for task in tasks {
        let events = setup.store.task_events(&task.id, 0).await.unwrap();
        let results = events
            .iter()
            .filter(|event| event.event.type_name() == "tool_result")
            .count();
        assert_eq!(results, 1, "{task:?}");
    }
}

/// A cancel from another process (the console) ends the connection's task: it takes no
/// more calls, and the next call runs in a new task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_cancelled_elsewhere_takes_no_more_calls() {
    let setup = setup(TaskSettings {
        poll_interval: Duration::from_millis(10),
        ..TaskSettings::default()
    });
    setup.tree.file("a.txt", "alpha\n");
    let read = || {
        setup
            .session
            .call("read_file", json!({"path": "a.txt"}), &quiet)
    };
    assert!(!read().await.is_error);
    let first = tasks(&setup).await.remove(0);
    setup.clock.advance(Duration::from_secs(1));
    setup.other.cancel(&first.id).await.unwrap();
    // Until the session notices, a call may still land in the first task; soon it no
    // longer does.
    let moved_on = wait_until_async(WITHIN, async || {
        let reply = read().await;
        assert!(!reply.is_error, "{reply:?}");
        tasks(&setup).await.len() > 1
    })
    .await;
    assert!(moved_on, "calls kept landing in the cancelled task");
    setup.session.close().await;
    let tasks = tasks(&setup).await;
    assert_eq!(tasks[0].state, TaskState::Cancelled);
    assert!(
        tasks[1..]
            .iter()
            .all(|task| task.state == TaskState::Completed)
    );
}
