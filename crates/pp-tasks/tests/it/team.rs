//! Team mode: several worker processes share one database. Each claims only tasks of
//! the workspaces it has and runs them at its own folder for the workspace's name; a
//! task no live worker can run waits and says so; a decision made where the workspace
//! is not is carried out by a worker that has it; the worker registry lists the live
//! processes.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use pp_tasks::{
    CreateTask, ModelSource, TaskService, TaskSettings, TeamWorker, Workspace, Workspaces,
};
use pp_test_support::TempTree;
use pp_types::{Actor, ApprovalState, ManualClock, TaskRecord, TaskState, Timestamp};
use serde_json::json;

use crate::fixture::{approve, write_then_done};

/// A worker process on the shared database with the workspaces `names`, each mapped to
/// a folder of this "host" (`root/<name>`), its store on the test's `clock`.
fn worker(database: &Path, clock: &Arc<ManualClock>, root: &Path, names: &[&str]) -> TaskService {
    worker_on(
        pp_test_support::sqlite_store_with_clock(database, clock.clone()),
        root,
        names,
    )
}

/// A worker process on `store` (SQLite or PostgreSQL) with the workspaces `names`, each
/// mapped to a folder of this "host" (`root/<name>`).
pub(crate) fn worker_on(store: pp_store::Store, root: &Path, names: &[&str]) -> TaskService {
    let list = names
        .iter()
        .map(|name| {
            let path = root.join(name);
            #[expect(
                clippy::disallowed_methods,
                reason = "the test makes the host's folders"
            )]
            std::fs::create_dir_all(&path).unwrap();
            Workspace {
                name: (*name).to_owned(),
                path,
            }
        })
        .collect();
    TaskService::new(
        store,
        TaskSettings {
            workers: 2,
            poll_interval: Duration::from_millis(20),
            lease: Duration::from_secs(3),
            team: Some(TeamWorker {
                host: root.display().to_string(),
            }),
            ..TaskSettings::default()
        },
        Workspaces {
            list,
            default: None,
        },
        ModelSource::Scripted,
    )
}

async fn create(service: &TaskService, workspace: &str, script: serde_json::Value) -> TaskRecord {
    service
        .create(CreateTask {
            prompt: format!("work in {workspace}"),
            workspace: Some(workspace.to_owned()),
            actor: Actor::Operator,
            script: Some(script),
        })
        .await
        .unwrap()
}

async fn wait_for(service: &TaskService, task: &TaskRecord, state: TaskState) -> TaskRecord {
    for _ in 0..1000 {
        let now = service.task(&task.id).await.unwrap();
        if now.state == state {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {} never became {}", task.id, state.as_str());
}

async fn wait_until_live(service: &TaskService, count: usize) {
    for _ in 0..500 {
        if service.live_workers().await.unwrap().len() == count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never {count} live workers");
}

fn done() -> serde_json::Value {
    json!([{"content": "done"}])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_claim_only_their_workspaces_and_run_at_their_own_folders() {
    let tree = TempTree::new();
    let database = tree.base().join("team.db");
    let clock = Arc::new(ManualClock::new(Timestamp::now()));
    let (host_a, host_b) = (tree.base().join("host-a"), tree.base().join("host-b"));
    // Both hosts have `shared`, each at its own folder; only A has `finance`.
    let a = worker(&database, &clock, &host_a, &["finance", "shared"]);
    let b = worker(&database, &clock, &host_b, &["research", "shared"]);

    // A may only name workspaces it has or a live worker has.
    let unknown = a
        .create(CreateTask {
            prompt: "p".into(),
            workspace: Some("research".into()),
            actor: Actor::Operator,
            script: Some(done()),
        })
        .await
        .unwrap_err();
    assert!(
        matches!(unknown, pp_tasks::Error::NotFound { .. }),
        "{unknown}"
    );
    b.start_workers();
    a.start_workers();
    wait_until_live(&a, 2).await;
    // Now A creates a task for B's workspace: B (not A) claims it.
    let research = create(&a, "research", write_then_done("r.txt", "research\n")).await;
    assert_eq!(research.workspace_path, "", "A has no folder for it");
    // C has `legal` but is not running: a task for it waits.
    let c = worker(&database, &clock, &tree.base().join("host-c"), &["legal"]);
    let legal = create(&c, "legal", done()).await;
    // B (not A) claims the research task and writes in B's folder.
    let waiting = wait_for(&b, &research, TaskState::WaitingApproval).await;
    let pending = b
        .approval_views(Some(ApprovalState::Pending), 10)
        .await
        .unwrap();
    assert_eq!(pending.len(), 1);
    let approval = pp_types::ApprovalId(pending[0].id.clone());
    // Decide anywhere, run where the files are: A has no `research`. Its card says where
    // the call will be checked; A records the decision and hands the run to B.
    let card = a.approval_view_checked(&approval).await.unwrap();
    let precheck = card.precheck.unwrap();
    assert_eq!(precheck.status, pp_tasks::PrecheckStatus::Unavailable);
    let message = precheck.message.unwrap();
    assert!(
        message.contains("`research` is not on this server") && message.contains("host-b"),
        "{message}"
    );
    let handed = a.resolve(&approval, approve()).await.unwrap();
    assert_eq!(
        handed.state,
        TaskState::Queued,
        "a worker that has it runs it"
    );
    let finished = wait_for(&b, &research, TaskState::Completed).await;
    assert_eq!(waiting.id, finished.id);
    assert_eq!(
        b.approval_view(&approval).await.unwrap().state,
        ApprovalState::Approved
    );
    let pending = b.approval_views(Some(ApprovalState::Pending), 10);
    assert!(pending.await.unwrap().is_empty(), "asked once");
    #[expect(clippy::disallowed_methods, reason = "reads what the task wrote")]
    let written = std::fs::read_to_string(host_b.join("research/r.txt")).unwrap();
    assert_eq!(written, "research\n");
    assert!(!host_a.join("research").exists(), "A never ran it");

    // A task for `shared` runs once, on whichever host claimed it, at that host's folder.
    let shared = create(&b, "shared", done()).await;
    wait_for(&a, &shared, TaskState::Completed).await;

    // Nobody has `legal`: it waits, visibly, until a worker that has it starts.
    let still = a.task(&legal.id).await.unwrap();
    assert_eq!(still.state, TaskState::Queued);
    let reason = a.waiting_reason(&still).await.unwrap().unwrap();
    assert!(reason.contains("`legal`"), "{reason}");
    assert_eq!(a.waiting_reason(&finished).await.unwrap(), None);
    c.start_workers();
    wait_for(&c, &legal, TaskState::Completed).await;
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_registry_lists_live_workers_and_forgets_those_that_leave() {
    let tree = TempTree::new();
    let database = tree.base().join("team.db");
    let clock = Arc::new(ManualClock::new(Timestamp::now()));
    let a = worker(&database, &clock, &tree.base().join("a"), &["finance"]);
    let b = worker(
        &database,
        &clock,
        &tree.base().join("b"),
        &["research", "finance"],
    );
    assert!(a.live_workers().await.unwrap().is_empty(), "none started");
    a.start_workers();
    b.start_workers();
    wait_until_live(&a, 2).await;
    let live = a.live_workers().await.unwrap();
    let mut workspaces: Vec<Vec<String>> = live.iter().map(|w| w.workspaces.clone()).collect();
    workspaces.sort();
    assert_eq!(workspaces, [vec!["finance"], vec!["research", "finance"]]);
    assert!(live.iter().all(|worker| worker.pid == std::process::id()));
    b.leave().await.unwrap();
    let left = a.live_workers().await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].workspaces, ["finance"]);
    // B's heartbeat loop goes on until B is dropped, but it does not come back: on paused
    // time the sleep lets it beat again at once, and the stores' clock moves as far.
    clock.advance(Duration::from_millis(1200));
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(
        a.live_workers().await.unwrap().len(),
        1,
        "B registered again"
    );
    // Outside team mode nothing registers.
    let single = TaskService::new(
        pp_test_support::sqlite_store_with_clock(&database, clock.clone()),
        TaskSettings::default(),
        Workspaces::single("solo", tree.workspace()),
        ModelSource::Scripted,
    );
    single.start_workers();
    let queued = create(&single, "solo", done()).await;
    wait_for(&single, &queued, TaskState::Completed).await;
    assert_eq!(a.live_workers().await.unwrap().len(), 1);
}

/// Issue 29, item 8: a workspace only a dead worker had is not "not found" while that
/// worker is remembered (ten leases): its task is queued and says why it waits; a name
/// no worker ever had stays 404; and the dead worker's row is pruned after ten leases.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_dead_workers_workspace_queues_with_a_reason_until_it_is_forgotten() {
    let tree = TempTree::new();
    let database = tree.base().join("team.db");
    let clock = Arc::new(ManualClock::new(Timestamp::now()));
    let store = pp_test_support::sqlite_store_with_clock(&database, clock.clone());
    // A worker that had `legal` registered, then died (no leave, no more heartbeats).
    store
        .register_worker(pp_store::NewWorker {
            host: "gone".into(),
            pid: 1,
            workspaces: vec!["legal".into()],
        })
        .await
        .unwrap();
    let a = worker(&database, &clock, &tree.base().join("a"), &["finance"]);
    let lease = Duration::from_secs(3);
    // Dead for three leases: no longer live, still remembered.
    clock.advance(lease * 3);
    assert!(a.live_workers().await.unwrap().is_empty());
    let legal = create(&a, "legal", done()).await;
    assert_eq!(legal.state, TaskState::Queued);
    assert_eq!(
        legal.workspace_path, "",
        "runs at the path of whichever worker has it"
    );
    let reason = a.waiting_reason(&legal).await.unwrap().unwrap();
    assert!(
        reason.contains("no live worker has workspace `legal`"),
        "{reason}"
    );
    let never = a
        .create(CreateTask {
            prompt: "p".into(),
            workspace: Some("nobody-ever".into()),
            actor: Actor::Operator,
            script: Some(done()),
        })
        .await
        .unwrap_err();
    assert!(matches!(never, pp_tasks::Error::NotFound { .. }), "{never}");

    // Past ten leases: forgotten by the next heartbeat, and the name is unknown again.
    clock.advance(lease * 8);
    a.start_workers();
    wait_until_live(&a, 1).await;
    let rows = store
        .live_workers(Duration::from_secs(86_400))
        .await
        .unwrap();
    assert_eq!(rows.len(), 1, "the dead worker's row is pruned: {rows:?}");
    assert_eq!(rows[0].workspaces, ["finance"]);
    let forgotten = a
        .create(CreateTask {
            prompt: "p".into(),
            workspace: Some("legal".into()),
            actor: Actor::Operator,
            script: Some(done()),
        })
        .await
        .unwrap_err();
    assert!(
        matches!(forgotten, pp_tasks::Error::NotFound { .. }),
        "{forgotten}"
    );
    // The task queued meanwhile still waits, and says why.
    let still = a.task(&legal.id).await.unwrap();
    assert_eq!(still.state, TaskState::Queued);
    assert!(a.waiting_reason(&still).await.unwrap().is_some());
}

/// Finding 9/10: `authenticate` turns a name and a token into the caller the API uses,
/// and `authorize` reads the grants as they are at the moment of the action, not as they
/// were when the caller was authenticated.
#[tokio::test]
async fn authorize_reads_the_grant_at_the_moment_of_the_action() {
    use pp_tasks::{Action, Error};
    use pp_types::Role;

    let tree = TempTree::new();
    let database = tree.base().join("pocketpilot.db");
    let clock = Arc::new(ManualClock::new(Timestamp::now()));
    let service = worker(&database, &clock, &tree.base().join("host"), &["finance"]);
    // The users as `pp-users` keeps them: straight in the shared database.
    let users = pp_test_support::sqlite_store_with_clock(&database, clock.clone());
    let (_, carol_token) = users.add_user("carol", Role::Member).await.unwrap();
    users.add_user("dave", Role::Member).await.unwrap();
    users.grant_workspace("carol", "finance").await.unwrap();

    let wrong = service.authenticate("dave", carol_token.clone()).await;
    assert!(matches!(wrong, Err(Error::Unauthorized(_))), "{wrong:?}");
    let garbage = service.authenticate("carol", "ppu_nope".into()).await;
    assert!(
        matches!(garbage, Err(Error::Unauthorized(_))),
        "{garbage:?}"
    );
    let caller = service.authenticate("carol", carol_token).await.unwrap();
    assert_eq!(caller.user.as_deref(), Some("carol"));
    assert_eq!(caller.workspaces, ["finance"]);

    let task = service
        .create_as_user(
            CreateTask {
                prompt: "carol's".into(),
                workspace: Some("finance".into()),
                actor: Actor::Operator,
                script: Some(json!([{"content": "done"}])),
            },
            Some("carol".into()),
        )
        .await
        .unwrap();
    let turn = Action::Work {
        workspace: "finance",
    };
    service
        .authorize(&caller, Action::Cancel(&task))
        .await
        .unwrap();
    service.authorize(&caller, turn).await.unwrap();

    users.revoke_workspace("carol", "finance").await.unwrap();
    // The same caller value, authenticated before the revoke.
    for action in [Action::Cancel(&task), Action::Retry(&task), turn] {
        let refused = service.authorize(&caller, action).await;
        assert!(matches!(refused, Err(Error::Forbidden(_))), "{refused:?}");
    }
}

/// Issue 29, item 2: a decision made on a server without the workspace sends the seen
/// fingerprint along; the worker that has the workspace checks it right before the call
/// runs, and a file changed since the person saw it ends the approval `stale`, unrun.
/// (The same flow on PostgreSQL: `postgres::a_decision_made_elsewhere_runs_where_the_files_are`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_made_elsewhere_is_checked_where_the_files_are() {
    let tree = TempTree::new();
    let database = tree.base().join("team.db");
    let clock = Arc::new(ManualClock::new(Timestamp::now()));
    let store = || pp_test_support::sqlite_store_with_clock(&database, clock.clone());
    decided_elsewhere(store(), store(), &tree).await;
}

/// The flow of [`a_decision_made_elsewhere_is_checked_where_the_files_are`] on two stores
/// of one database (two processes): A has only `finance`, B (started) has `research` at
/// `tree.base()/host-b/research`. A decision A records without a change runs on B exactly
/// once; one whose target changed since the person saw it ends `stale`, unrun; an edit
/// is refused on A.
pub(crate) async fn decided_elsewhere(
    store_a: pp_store::Store,
    store_b: pp_store::Store,
    tree: &TempTree,
) {
    let host_b = tree.base().join("host-b");
    let b = worker_on(store_b, &host_b, &["research"]);
    let a = worker_on(store_a, &tree.base().join("host-a"), &["finance"]);
    b.start_workers();
    wait_until_live(&b, 1).await;
    #[expect(clippy::disallowed_methods, reason = "the file the cards show")]
    std::fs::write(host_b.join("research/r.txt"), "before\n").unwrap();

    // Unchanged: A records the decision (the task goes back to the queue), B runs the
    // call exactly once.
    let once = create(&a, "research", write_then_done("r.txt", "once\n")).await;
    wait_for(&b, &once, TaskState::WaitingApproval).await;
    let approval = only_pending(&b).await;
    let card = a.approval_view_checked(&approval).await.unwrap();
    assert_eq!(
        card.precheck.unwrap().status,
        pp_tasks::PrecheckStatus::Unavailable,
        "A cannot check a file it does not have"
    );
    let handed = a.resolve(&approval, approve()).await.unwrap();
    assert_eq!(handed.state, TaskState::Queued, "handed to a worker");
    wait_for(&b, &once, TaskState::Completed).await;
    assert_eq!(
        b.approval_view(&approval).await.unwrap().state,
        ApprovalState::Approved
    );
    #[expect(clippy::disallowed_methods, reason = "reads what the task wrote")]
    let written = std::fs::read_to_string(host_b.join("research/r.txt")).unwrap();
    assert_eq!(written, "once\n");
    let events = b.task_events_page(&once.id, 0, 200).await.unwrap().events;
    let executed = events
        .iter()
        .filter(|stored| stored.event.type_name() == "tool_result")
        .count();
    assert_eq!(executed, 1, "the approved write ran exactly once");
    assert_eq!(b.changes().of_task(&once.id).await.unwrap().len(), 1);
    assert!(
        !tree.base().join("host-a/research").exists(),
        "A never ran it"
    );

    // The file changes after the person saw it, before the worker runs the call.
    let seen = create(&a, "research", write_then_done("r.txt", "mine\n")).await;
    wait_for(&b, &seen, TaskState::WaitingApproval).await;
    let approval = only_pending(&b).await;
    let shown = b
        .approval_view_checked(&approval)
        .await
        .unwrap()
        .precheck
        .unwrap()
        .fingerprint
        .unwrap();
    #[expect(clippy::disallowed_methods, reason = "someone edits the file")]
    std::fs::write(host_b.join("research/r.txt"), "edited meanwhile\n").unwrap();
    let handed = a
        .resolve(
            &approval,
            pp_tasks::ResolveRequest {
                seen_fingerprint: Some(shown),
                ..approve()
            },
        )
        .await
        .unwrap();
    assert_eq!(handed.state, TaskState::Queued);
    wait_for(&b, &seen, TaskState::Completed).await;
    assert_eq!(
        b.approval_view(&approval).await.unwrap().state,
        ApprovalState::Stale,
        "checked where the file is, against what the person saw"
    );
    #[expect(clippy::disallowed_methods, reason = "reads the file")]
    let now = std::fs::read_to_string(host_b.join("research/r.txt")).unwrap();
    assert_eq!(now, "edited meanwhile\n", "nothing written");
    // An edit cannot be checked where the workspace is not.
    let second = create(&a, "research", write_then_done("s.txt", "s\n")).await;
    wait_for(&b, &second, TaskState::WaitingApproval).await;
    let other = only_pending(&b).await;
    let refused = a
        .resolve(
            &other,
            pp_tasks::ResolveRequest {
                edited_arguments: Some(json!({"path": "s.txt", "content": "t\n"})),
                ..approve()
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(refused, pp_tasks::Error::BadRequest(_)),
        "{refused}"
    );
    b.leave().await.unwrap();
}

/// The one pending approval.
async fn only_pending(service: &TaskService) -> pp_types::ApprovalId {
    let pending = service
        .approval_views(Some(ApprovalState::Pending), 10)
        .await
        .unwrap();
    assert_eq!(pending.len(), 1, "{pending:?}");
    pp_types::ApprovalId(pending[0].id.clone())
}
