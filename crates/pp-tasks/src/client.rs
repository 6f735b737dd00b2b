//! A client session: an MCP client (through `pocketpilot mcp serve`) calling the
//! workspace tools, each call one assistant turn of a task created by
//! [`Actor::McpClient`], through the real loop, so the jail, the policy, durable
//! approvals, events, snapshots, the change log and the audit ledger behave exactly as
//! for any task.
//!
//! The service runs on [`ClientLink`] (as [`crate::ModelSource::Driven`] and as its event
//! observer): the loop asks it for a turn, it hands over the client's next call; the
//! loop reports the call's outcome, it hands that back to the client. A write the policy
//! asks about suspends the task at a durable approval like any other; whoever resolves
//! it resumes the task in their own process from the task's script (one closing turn),
//! so the resumed loop never waits for a client that is not there, and the session here
//! watches the store for that call's outcome. The next call of the connection starts a
//! new task.

pub(crate) mod link;
mod wait;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pp_types::{Actor, ApprovalId, PathRoot, ToolSpec};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use link::{ClientLink, Reply};

use crate::error::{Error, Result};
use crate::runner::{Start, run_segment};
use crate::service::TaskService;

/// The closing turn a task of an MCP client is resumed with in another process, after
/// an approval: the resumed loop runs (or refuses) the decided call, then ends.
const RESUME_SCRIPT: &str = "The decided call was handed back to the MCP client.";

/// How long a session waits for a person's decision, and how it reports the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientSettings {
    /// How long a call waits for the decision before it answers "pending approval".
    pub wait_limit: Duration,
    /// How often the client is told the call is still waiting.
    pub progress_every: Duration,
    /// How often the store is read while waiting.
    pub poll: Duration,
}

impl Default for ClientSettings {
    fn default() -> Self {
        Self {
            wait_limit: Duration::from_secs(600),
            progress_every: Duration::from_secs(5),
            poll: Duration::from_millis(100),
        }
    }
}

/// What one client call answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallReply {
    /// The tool's output, the gate's or the person's refusal, or "pending approval".
    pub text: String,
    /// Whether the client should see it as a tool error.
    pub is_error: bool,
}

impl CallReply {
    fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
        }
    }
}

/// A call that waits for a person's decision: told once at the start, then every
/// [`ClientSettings::progress_every`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// The approval the call waits for.
    pub approval: ApprovalId,
    /// How long it has waited.
    pub waited: Duration,
    /// When it stops waiting and answers "pending approval".
    pub limit: Duration,
}

/// One MCP client connection.
pub struct ClientSession {
    service: TaskService,
    link: Arc<ClientLink>,
    settings: ClientSettings,
    /// The prompt and origin (the client's name and version) of the tasks to come.
    identity: Arc<Mutex<Identity>>,
    tools: Mutex<Option<Vec<ToolSpec>>>,
    /// Creates and runs the connection's tasks; aborted with the session.
    supervisor: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for ClientSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSession")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Drop for ClientSession {
    fn drop(&mut self) {
        if let Ok(mut supervisor) = self.supervisor.lock()
            && let Some(handle) = supervisor.take()
        {
            handle.abort();
        }
    }
}

impl ClientSession {
    /// A session of `service`, which must run on `link` ([`crate::ModelSource::Driven`]
    /// and its observer); its tasks run in the default workspace.
    pub fn new(service: TaskService, link: Arc<ClientLink>, settings: ClientSettings) -> Self {
        Self {
            service,
            link,
            settings,
            identity: Arc::new(Mutex::new(Identity::of(None))),
            tools: Mutex::new(None),
            supervisor: Mutex::new(None),
        }
    }

    /// Records the client's name and version (from `initialize`) for the tasks to come.
    pub fn set_client(&self, name: &str, version: &str) {
        if let Ok(mut identity) = self.identity.lock() {
            *identity = Identity::of(Some((name, version)));
        }
    }

    /// The tools offered to the client: those of the default workspace's segment that
    /// act on the workspace (capability `file:*`, paths in the workspace), as the
    /// toolbox builds them for any task.
    pub async fn tools(&self) -> Result<Vec<ToolSpec>> {
        if let Ok(tools) = self.tools.lock()
            && let Some(tools) = tools.as_ref()
        {
            return Ok(tools.clone());
        }
        let workspace = self
            .service
            .workspaces()
            .find(None)
            .ok_or_else(|| Error::NotFound {
                what: "workspace",
                id: "(default)".into(),
            })?;
        let path = workspace.path.display().to_string();
        let segment = self.service.inner.segment(&path).await?;
        let tools: Vec<ToolSpec> = segment
            .registry
            .specs()
            .filter(|spec| served(spec))
            .cloned()
            .collect();
        if let Ok(mut cached) = self.tools.lock() {
            *cached = Some(tools.clone());
        }
        Ok(tools)
    }

    /// Runs one call of the client: at once when the policy allows it; a write waits for
    /// the person's decision (telling `waiting` as it waits) up to the wait limit, then
    /// answers `pending approval <id>` and the approval stays open.
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        waiting: &(dyn Fn(&Waiting) + Send + Sync),
    ) -> CallReply {
        let known: HashSet<String> = match self.tools().await {
            Ok(tools) => tools.into_iter().map(|spec| spec.name).collect(),
            Err(error) => return CallReply::error(format!("the workspace is unusable: {error}")),
        };
        if !known.contains(name) {
            return CallReply::error(format!("unknown tool `{name}`"));
        }
        let (call_id, reply) = self.link.submit(name, arguments);
        self.ensure_supervisor();
        match reply.await {
            Ok(Reply::Done { text, is_error }) => CallReply { text, is_error },
            Ok(Reply::Suspended { task }) => {
                wait::decision(&self.service, &task, &call_id, &self.settings, waiting).await
            }
            Ok(Reply::Ended { task }) => CallReply::error(format!(
                "task {} ended ({}) before the call ran{}",
                task.id,
                task.state.as_str(),
                task.error
                    .as_deref()
                    .map(|error| format!(": {error}"))
                    .unwrap_or_default()
            )),
            Err(_) => CallReply::error("the session ended before the call ran"),
        }
    }

    /// The client is gone: the running task ends (completed), pending approvals stay
    /// pending. Returns once the task is stored as ended.
    pub async fn close(&self) {
        self.link.close();
        let handle = self
            .supervisor
            .lock()
            .ok()
            .and_then(|mut supervisor| supervisor.take());
        if let Some(handle) = handle {
            let _ = handle.await;
        }
    }

    fn ensure_supervisor(&self) {
        let Ok(mut supervisor) = self.supervisor.lock() else {
            return;
        };
        if supervisor
            .as_ref()
            .is_some_and(|handle| !handle.is_finished())
        {
            return;
        }
        *supervisor = Some(tokio::spawn(supervise(
            self.service.clone(),
            Arc::clone(&self.link),
            Arc::clone(&self.identity),
        )));
    }
}

/// Whether `spec` is offered to MCP clients: the workspace's file, search and document
/// tools; not the shell, memory or skills.
fn served(spec: &ToolSpec) -> bool {
    spec.root == PathRoot::Workspace
        && spec
            .capability
            .as_ref()
            .is_some_and(|capability| capability.as_str().starts_with("file:"))
}

/// What a connection's tasks say about their client.
#[derive(Debug, Clone, Default)]
struct Identity {
    /// The task's prompt (its title in the console).
    prompt: String,
    /// The task's origin: the client's name and version, as it gave them.
    origin: Option<String>,
}

impl Identity {
    fn of(client: Option<(&str, &str)>) -> Self {
        match client {
            Some((name, version)) => {
                let origin = format!("{} {}", name.trim(), version.trim())
                    .trim()
                    .to_owned();
                Self {
                    prompt: format!(
                        "MCP client `{origin}` calling the workspace tools through \
                         `pocketpilot mcp serve`"
                    ),
                    origin: Some(origin),
                }
            }
            None => Self {
                prompt: "an MCP client calling the workspace tools through `pocketpilot mcp \
                         serve`"
                    .to_owned(),
                origin: None,
            },
        }
    }
}

/// Creates a task whenever calls are queued and runs it here until it ends or waits for
/// an approval; the calls it took and did not answer learn why.
async fn supervise(service: TaskService, link: Arc<ClientLink>, identity: Arc<Mutex<Identity>>) {
    while link.wait_for_work().await {
        let identity = identity.lock().map(|i| i.clone()).unwrap_or_default();
        let task = match create_running(&service, identity).await {
            Ok(task) => task,
            Err(error) => {
                link.fail_queued(&format!("no task could be started: {error}"));
                continue;
            }
        };
        let before = link.taken();
        link.serve_task(&task.id);
        let id = task.id.clone();
        let record = run_here(&service, &link, task).await;
        link.run_ended(&id, record.as_ref());
        if link.taken() == before {
            // The task ended without taking a call (its workspace is gone, the store
            // failed): say so rather than start task after task.
            let why = record
                .as_ref()
                .and_then(|record| record.error.clone())
                .unwrap_or_else(|| "the task could not run".to_owned());
            link.fail_queued(&format!("task {id} could not run the call: {why}"));
        }
    }
}

/// Stores the connection's next task already `running` (created by `mcp_client`, in the
/// default workspace, carrying the closing turn another process resumes it with), so
/// the workers of another process (the console's `serve`) never claim it.
async fn create_running(service: &TaskService, identity: Identity) -> Result<pp_types::TaskRecord> {
    let workspace = service
        .workspaces()
        .find(None)
        .ok_or_else(|| Error::NotFound {
            what: "workspace",
            id: "(default)".into(),
        })?;
    let new = pp_store::NewTask {
        prompt: identity.prompt,
        workspace: workspace.name.clone(),
        workspace_path: workspace.path.display().to_string(),
        created_by: Actor::McpClient,
        origin: identity.origin,
        script: Some(json!([{ "content": RESUME_SCRIPT }])),
    };
    Ok(service.inner.store.create_running_task(new).await?)
}

/// Runs `task` (already `running`) here, under the service's worker limit, until it ends
/// or waits for an approval; `None` if the service is shutting down. A task another
/// process ended meanwhile (cancelled from the console) takes no more calls.
async fn run_here(
    service: &TaskService,
    link: &ClientLink,
    task: pp_types::TaskRecord,
) -> Option<pp_types::TaskRecord> {
    let permit = Arc::clone(&service.inner.workers)
        .acquire_owned()
        .await
        .ok()?;
    service.inner.cancellation(&task.id);
    let id = task.id.clone();
    // The permit may have been waited for: the run checks the task is still running.
    let run = run_segment(&service.inner.shared, task, Start::Fresh, true);
    // A cancel from another process (the console) only changes the store: notice it, so
    // the loop stops taking the client's calls into a cancelled task.
    let watch = async {
        loop {
            tokio::time::sleep(service.settings().poll_interval).await;
            let state = service.inner.store.task(&id).await;
            if state.is_ok_and(|task| task.state != pp_types::TaskState::Running) {
                link.end_task(&id);
                return std::future::pending::<()>().await;
            }
        }
    };
    let record = tokio::select! {
        record = run => record,
        () = watch => return None,
    };
    drop(permit);
    Some(record)
}
