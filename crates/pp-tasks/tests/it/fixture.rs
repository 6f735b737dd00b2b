//! A service over a temp database and a temp workspace.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pp_agent::{BoxFuture, Tool};
use pp_store::Store;
use pp_tasks::{
    CreateTask, Decision, ModelSource, ResolveRequest, TaskService, TaskSettings, Workspaces,
};
use pp_test_support::TempTree;
use pp_types::{
    Actor, ApprovalRecord, ApprovalState, Capability, Risk, TaskId, TaskRecord, TaskState,
    ToolOutput, ToolSpec,
};
use serde_json::{Value, json};

/// The fixtures' heartbeat lease: a task whose runner is silent this long is stale.
pub(crate) const LEASE: Duration = Duration::from_millis(200);

/// Waits until a stopped runner's heartbeat is older than the lease (instant in tests
/// on paused time: the store's clock is tokio's).
pub(crate) async fn outlive_the_lease() {
    tokio::time::sleep(LEASE + Duration::from_millis(100)).await;
}

/// The store's clock in these tests: tokio's clock, so a test on paused time
/// (`start_paused = true`) moves heartbeats, leases and running time together, with no
/// real sleeping.
#[derive(Debug)]
pub(crate) struct TokioClock {
    base: pp_types::Timestamp,
    start: tokio::time::Instant,
}

impl TokioClock {
    fn new() -> Self {
        Self {
            base: pp_types::Timestamp::now(),
            start: tokio::time::Instant::now(),
        }
    }
}

impl pp_types::Clock for TokioClock {
    fn now(&self) -> pp_types::Timestamp {
        self.base.saturating_add(self.start.elapsed())
    }
}

pub(crate) struct Fixture {
    pub(crate) tree: TempTree,
    pub(crate) data: tempfile::TempDir,
    pub(crate) service: TaskService,
    /// The store under `service` (the tests read it directly; the service never hands
    /// it out).
    store: Store,
    /// The `blocking_read` tool of this fixture's service, to observe what it saw.
    pub(crate) blocking: BlockingRead,
    /// The clock every store of this fixture (its "processes") shares.
    clock: Arc<TokioClock>,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        Self::with(TaskSettings {
            poll_interval: Duration::from_millis(20),
            lease: LEASE,
            ..TaskSettings::default()
        })
    }

    pub(crate) fn with(settings: TaskSettings) -> Self {
        Self::with_model(settings, ModelSource::Scripted)
    }

    /// A fixture whose tasks without a script use `models` (a shared scripted model
    /// records every request, across tasks).
    pub(crate) fn with_model(settings: TaskSettings, models: ModelSource) -> Self {
        let tree = TempTree::new();
        let data = tempfile::tempdir().unwrap();
        let blocking = BlockingRead::default();
        let clock = Arc::new(TokioClock::new());
        let (service, store) = service_on(&tree, &data, settings, models, &blocking, &clock);
        Self {
            tree,
            data,
            service,
            store,
            blocking,
            clock,
        }
    }

    /// A second service on the same database, as another process would have.
    pub(crate) fn another_process(&self) -> TaskService {
        service_on(
            &self.tree,
            &self.data,
            self.service.settings().clone(),
            ModelSource::Scripted,
            &self.blocking,
            &self.clock,
        )
        .0
    }

    /// The store under [`Fixture::service`].
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    pub(crate) async fn create(&self, script: Value) -> TaskRecord {
        self.service
            .create(CreateTask {
                prompt: "do the thing".into(),
                workspace: None,
                actor: Actor::Operator,
                script: Some(script),
            })
            .await
            .unwrap()
    }

    pub(crate) async fn run(&self, script: Value) -> TaskRecord {
        let task = self.create(script).await;
        self.service.run_now(&task.id).await.unwrap()
    }

    pub(crate) async fn pending(&self, task: &TaskId) -> ApprovalRecord {
        pending_approval(&self.service, task).await
    }

    pub(crate) async fn audit_count(&self, action: &str) -> usize {
        audit_rows(&self.service, action).await.len()
    }

    /// The audit actions recorded for `task` after its creation, oldest first.
    pub(crate) async fn audit_actions(&self, task: &TaskId) -> Vec<String> {
        let mut rows = self
            .store()
            .list_audit(&pp_store::AuditFilter {
                actor: None,
                task_id: Some(task.clone()),
                action: None,
                before_id: None,
                exclude: Vec::new(),
                limit: 1000,
            })
            .await
            .unwrap();
        rows.reverse();
        rows.into_iter()
            .map(|row| row.action.as_str().to_owned())
            .filter(|action| action != "task_created")
            .collect()
    }

    /// Waits (bounded) until `task` is in `state`; fails the test otherwise.
    pub(crate) async fn wait_for_state(&self, task: &TaskId, state: TaskState) -> TaskRecord {
        self.wait_until(task, |current| current == state).await
    }

    /// Waits (bounded) until `task` is no longer queued or running.
    pub(crate) async fn wait_for_end(&self, task: &TaskId) -> TaskRecord {
        self.wait_until(task, |current| {
            !matches!(current, TaskState::Queued | TaskState::Running)
        })
        .await
    }

    /// Polls `task` (at most 1,000 times, 5 ms apart) until its state passes `done`.
    async fn wait_until(&self, task: &TaskId, done: impl Fn(TaskState) -> bool) -> TaskRecord {
        for _ in 0..1000 {
            let record = self.store().task(task).await.unwrap();
            if done(record.state) {
                return record;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("task {task} never reached the state waited for");
    }

    pub(crate) async fn event_types(&self, task: &TaskId) -> Vec<&'static str> {
        self.store()
            .task_events(task, 0)
            .await
            .unwrap()
            .iter()
            .map(|stored| stored.event.type_name())
            .collect()
    }
}

/// The pending approval of `task` (the newest, if several).
pub(crate) async fn pending_approval(service: &TaskService, task: &TaskId) -> ApprovalRecord {
    service
        .approvals_for_task(task)
        .await
        .unwrap()
        .into_iter()
        .rfind(|approval| approval.state == ApprovalState::Pending)
        .expect("a pending approval")
}

/// Every audit row with `action`, newest first.
pub(crate) async fn audit_rows(service: &TaskService, action: &str) -> Vec<pp_types::AuditEntry> {
    service
        .list_audit(pp_store::AuditFilter {
            action: Some(action.into()),
            limit: 1000,
            ..pp_store::AuditFilter::default()
        })
        .await
        .unwrap()
}

fn service_on(
    tree: &TempTree,
    data: &tempfile::TempDir,
    settings: TaskSettings,
    models: ModelSource,
    blocking: &BlockingRead,
    clock: &Arc<TokioClock>,
) -> (TaskService, Store) {
    let store =
        Store::open_with_clock(&data.path().join("test.db"), Arc::clone(clock) as _).unwrap();
    let service = TaskService::build(
        store.clone(),
        settings,
        Workspaces::single("test", tree.workspace()),
        models,
        pp_tools::Toolbox::files()
            .with(Arc::new(pp_test_support::provider::Fixed::new(
                "fixture",
                vec![
                    Arc::new(SlowRead) as Arc<dyn Tool>,
                    Arc::new(blocking.clone()) as Arc<dyn Tool>,
                ],
            )))
            // A provider pp-tasks has never heard of (the tool seam's acceptance test).
            .with(Arc::new(pp_test_support::provider::Stamps)),
        None,
    );
    (service, store)
}

pub(crate) fn approve() -> ResolveRequest {
    ResolveRequest {
        decision: Decision::Approve,
        edited_arguments: None,
        reason: None,
        seen_fingerprint: None,
        actor: Actor::Operator,
        wait: true,
        via: Some(pp_types::Via::Api),
        remote_user: None,
    }
}

/// Runs `script` and approves every call it asks for; returns the task.
pub(crate) async fn run_approving(fixture: &Fixture, script: Value) -> TaskId {
    let task = fixture.run(script).await;
    let mut state = task.state;
    while state == TaskState::WaitingApproval {
        let pending = fixture.pending(&task.id).await;
        state = fixture
            .service
            .resolve(&pending.id, approve())
            .await
            .unwrap()
            .state;
    }
    assert_eq!(state, TaskState::Completed);
    task.id
}

/// The task's change log.
pub(crate) async fn changes(fixture: &Fixture, task: &TaskId) -> Vec<pp_types::Change> {
    fixture.service.changes().of_task(task).await.unwrap()
}

/// One call of `tool` with `arguments`, then "done".
pub(crate) fn call_then_done(tool: &str, arguments: &Value) -> Value {
    json!([{"tool_calls": [{"name": tool, "arguments": arguments}]}, {"content": "done"}])
}

pub(crate) fn write_then_done(path: &str, content: &str) -> Value {
    json!([{"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]},
           {"content": "done"}])
}

/// A read tool that takes `millis` milliseconds (for timeouts and cancellation).
struct SlowRead;

static SLOW_SPEC: std::sync::LazyLock<ToolSpec> = std::sync::LazyLock::new(|| ToolSpec {
    name: "slow_read".into(),
    description: "waits, then returns".into(),
    parameters: json!({"type": "object", "properties": {"millis": {"type": "integer"}}}),
    capability: Some(Capability::new("test:read")),
    risk: Risk::Low,
    path_params: Vec::new(),
    root: pp_types::PathRoot::Workspace,
});

impl Tool for SlowRead {
    fn spec(&self) -> &ToolSpec {
        &SLOW_SPEC
    }

    fn execute<'a>(
        &'a self,
        _context: &'a pp_agent::ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, ToolOutput> {
        let millis = arguments["millis"].as_u64().unwrap_or(0);
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(millis)).await;
            ToolOutput::success("slept")
        })
    }
}

/// A read tool whose work blocks a thread (as file IO does) for `millis` milliseconds, or
/// with `until_stopped` until its context says stop (bounded by 20 s); runs on the
/// blocking pool like the file tools.
#[derive(Default, Clone)]
pub(crate) struct BlockingRead(Arc<BlockingFlags>);

#[derive(Default)]
struct BlockingFlags {
    /// Set once a call has started its blocking work.
    started: AtomicBool,
    /// Set when a call saw its context's stop signal.
    saw_stop: AtomicBool,
}

impl BlockingRead {
    /// Whether a call has started its blocking work.
    pub(crate) fn started(&self) -> bool {
        self.0.started.load(Ordering::SeqCst)
    }

    /// Whether a call saw its context's stop signal.
    pub(crate) fn saw_stop(&self) -> bool {
        self.0.saw_stop.load(Ordering::SeqCst)
    }
}

static BLOCKING_SPEC: std::sync::LazyLock<ToolSpec> = std::sync::LazyLock::new(|| ToolSpec {
    name: "blocking_read".into(),
    description: "blocks a thread, then returns".into(),
    parameters: json!({"type": "object", "properties": {
        "millis": {"type": "integer"}, "until_stopped": {"type": "boolean"}}}),
    capability: Some(Capability::new("test:read")),
    risk: Risk::Low,
    path_params: Vec::new(),
    root: pp_types::PathRoot::Workspace,
});

impl Tool for BlockingRead {
    fn spec(&self) -> &ToolSpec {
        &BLOCKING_SPEC
    }

    fn execute<'a>(
        &'a self,
        context: &'a pp_agent::ToolContext,
        arguments: &'a Value,
    ) -> BoxFuture<'a, ToolOutput> {
        let millis = arguments["millis"].as_u64().unwrap_or(0);
        let until_stopped = arguments["until_stopped"].as_bool().unwrap_or(false);
        let (flags, context) = (Arc::clone(&self.0), context.clone());
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                flags.started.store(true, Ordering::SeqCst);
                let began = std::time::Instant::now();
                let limit = if until_stopped {
                    Duration::from_secs(20)
                } else {
                    Duration::from_millis(millis)
                };
                while began.elapsed() < limit {
                    if until_stopped && context.should_stop() {
                        flags.saw_stop.store(true, Ordering::SeqCst);
                        return ToolOutput::error("stopped");
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                ToolOutput::success("blocked, then done")
            })
            .await
            .unwrap()
        })
    }
}
