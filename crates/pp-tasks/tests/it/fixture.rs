//! A service over a temp database and a temp workspace.

use std::sync::Arc;
use std::time::Duration;

use pp_agent::{BoxFuture, Tool};
use pp_tasks::store::Store;
use pp_tasks::{
    CreateTask, Decision, ModelSource, ResolveRequest, TaskService, TaskSettings, Workspaces,
};
use pp_test_support::TempTree;
use pp_types::{
    Actor, ApprovalRecord, ApprovalState, Capability, Risk, TaskId, TaskRecord, ToolOutput,
    ToolSpec,
};
use serde_json::{Value, json};

/// The fixtures' heartbeat lease: a task whose runner is silent this long is stale.
pub(crate) const LEASE: Duration = Duration::from_millis(200);

/// Waits until a stopped runner's heartbeat is older than the lease.
pub(crate) async fn outlive_the_lease() {
    tokio::time::sleep(LEASE + Duration::from_millis(100)).await;
}

pub(crate) struct Fixture {
    pub(crate) tree: TempTree,
    pub(crate) data: tempfile::TempDir,
    pub(crate) service: TaskService,
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
        let tree = TempTree::new();
        let data = tempfile::tempdir().unwrap();
        let service = service_on(&tree, &data, settings);
        Self {
            tree,
            data,
            service,
        }
    }

    /// A second service on the same database, as another process would have.
    pub(crate) fn another_process(&self) -> TaskService {
        service_on(&self.tree, &self.data, self.service.settings().clone())
    }

    pub(crate) fn create(&self, script: Value) -> TaskRecord {
        self.service
            .create(CreateTask {
                prompt: "do the thing".into(),
                workspace: None,
                actor: Actor::Operator,
                script: Some(script),
            })
            .unwrap()
    }

    pub(crate) async fn run(&self, script: Value) -> TaskRecord {
        let task = self.create(script);
        self.service.run_now(&task.id).await.unwrap()
    }

    pub(crate) fn pending(&self, task: &TaskId) -> ApprovalRecord {
        self.service
            .store()
            .approvals_for_task(task)
            .unwrap()
            .into_iter()
            .rfind(|approval| approval.state == ApprovalState::Pending)
            .expect("a pending approval")
    }

    pub(crate) fn audit_count(&self, action: &str) -> usize {
        self.service
            .store()
            .list_audit(&pp_tasks::store::AuditFilter {
                actor: None,
                task_id: None,
                action: Some(action.into()),
                before_id: None,
                limit: 1000,
            })
            .unwrap()
            .len()
    }

    pub(crate) fn event_types(&self, task: &TaskId) -> Vec<&'static str> {
        self.service
            .store()
            .task_events(task, 0)
            .unwrap()
            .iter()
            .map(|stored| stored.event.type_name())
            .collect()
    }
}

fn service_on(tree: &TempTree, data: &tempfile::TempDir, settings: TaskSettings) -> TaskService {
    let store = Arc::new(Store::open(&data.path().join("test.db")).unwrap());
    TaskService::build(
        store,
        settings,
        Workspaces::single("test", tree.workspace()),
        ModelSource::Scripted,
        vec![Arc::new(SlowRead) as Arc<dyn Tool>],
        None,
    )
}

pub(crate) fn approve() -> ResolveRequest {
    ResolveRequest {
        decision: Decision::Approve,
        edited_arguments: None,
        reason: None,
        actor: Actor::Operator,
        wait: true,
    }
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
});

impl Tool for SlowRead {
    fn spec(&self) -> &ToolSpec {
        &SLOW_SPEC
    }

    fn execute<'a>(&'a self, arguments: &'a Value) -> BoxFuture<'a, ToolOutput> {
        let millis = arguments["millis"].as_u64().unwrap_or(0);
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(millis)).await;
            ToolOutput::success("slept")
        })
    }
}
