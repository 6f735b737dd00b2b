//! API tests: the router driven with `oneshot` (no socket) over a real task service, a
//! temporary SQLite store on a [`ManualClock`] and a temporary workspace; one SSE test
//! on a real port.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests panic on fixture failures and unexpected responses"
)]

mod approval_precheck;
mod approvals;
mod assets;
mod audit;
mod auth;
mod bad_input;
mod cancel;
mod changes;
mod changesets;
mod channels;
mod console_names;
mod events;
mod files;
mod health_and_icon;
mod mcp;
mod memory;
mod not_configured;
mod openapi;
mod provenance;
mod schedules;
mod security;
mod sessions;
mod skills;
mod sse;
mod task_search;
mod team;
mod uploads;
mod usage;
mod webhooks;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use pp_channels::ChannelSettings;
use pp_server::{AppState, ServerSettings};
use pp_tasks::AuditFilter;
use pp_tasks::{CreateTask, ModelSource, TaskService, TaskSettings, Workspaces};
use pp_test_support::Store;
use pp_test_support::TempTree;
use pp_types::{Actor, AuditEntry, ManualClock, TaskId, TaskRecord, TaskState, Timestamp};
use serde_json::{Value, json};
use tower::ServiceExt;

/// The API token every fixture uses.
pub(crate) const TOKEN: &str = "test-token-0123456789abcdef";
/// The Host every request names.
pub(crate) const HOST: &str = "localhost:8420";

/// A router over a fresh store and workspace.
pub(crate) struct App {
    pub(crate) tree: TempTree,
    pub(crate) service: TaskService,
    /// The service's store (what the schedules and channels of `state` keep theirs in).
    pub(crate) store: Store,
    pub(crate) state: AppState,
    pub(crate) router: Router,
    /// The store's clock: it stands still until a test moves it (the service, its
    /// leases, sessions and webhook windows read it; nothing here waits on wall time).
    pub(crate) clock: Arc<ManualClock>,
}

impl App {
    /// A fixture whose workers are not running (tasks stay queued).
    pub(crate) fn idle() -> Self {
        Self::with_settings(ServerSettings::default())
    }

    /// A fixture with running workers.
    pub(crate) fn running() -> Self {
        let app = Self::idle();
        app.service.start_workers();
        app
    }

    pub(crate) fn with_settings(settings: ServerSettings) -> Self {
        let tree = TempTree::new();
        let clock = Arc::new(ManualClock::new(Timestamp::now()));
        let store = pp_test_support::sqlite_store_with_clock(
            &tree.base().join("pocketpilot.db"),
            clock.clone(),
        );
        let task_settings = TaskSettings {
            workers: 4,
            poll_interval: Duration::from_millis(20),
            ..TaskSettings::default()
        };
        let service = TaskService::new(
            store.clone(),
            task_settings,
            Workspaces::single("main", tree.workspace()),
            ModelSource::Scripted,
        );
        let script = settings.default_script.clone();
        let state = bare_state(&service, &store, settings);
        state.set_skills(skills::service(&tree, &store));
        state.set_memory(memory::service(&tree, &store));
        state.set_channels(channels::service(
            &service,
            &store,
            ChannelSettings::default(),
        ));
        state.set_scheduler(schedules::scheduler(&service, &store, script));
        Self::assemble(tree, clock, store, service, state)
    }

    /// An app of these parts, its router over `state`.
    pub(crate) fn assemble(
        tree: TempTree,
        clock: Arc<ManualClock>,
        store: Store,
        service: TaskService,
        state: AppState,
    ) -> Self {
        let router = pp_server::router(state.clone());
        Self {
            tree,
            service,
            store,
            state,
            router,
            clock,
        }
    }

    /// Sends `request` through the router.
    pub(crate) async fn send(&self, request: Request<Body>) -> Reply {
        send(&self.router, request).await
    }

    /// An authenticated request without a body.
    pub(crate) async fn call(&self, method: Method, uri: &str) -> Reply {
        self.send(authed(method, uri).body(Body::empty()).unwrap())
            .await
    }

    /// An authenticated request with a JSON body.
    pub(crate) async fn call_json(&self, method: Method, uri: &str, body: &Value) -> Reply {
        self.send(json_request(method, uri, body)).await
    }

    /// A task created directly through the service with a script.
    pub(crate) async fn create_task(&self, script: Value) -> TaskRecord {
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

    /// Waits until the task reaches `state` (at most 10 s).
    pub(crate) async fn wait_for(&self, task: &TaskId, state: TaskState) -> TaskRecord {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let record = self.service.task(task).await.unwrap();
            if record.state == state {
                return record;
            }
            assert!(
                Instant::now() < deadline,
                "task {task} stuck in {:?} waiting for {state:?}: {record:?}",
                record.state
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A task waiting for approval of a `write_file` to `path`, and the approval's id.
    pub(crate) async fn waiting_write(&self, path: &str, content: &str) -> (TaskId, String) {
        let task = self.create_task(write_script(path, content)).await;
        self.wait_for(&task.id, TaskState::WaitingApproval).await;
        let approvals = self.service.approvals_for_task(&task.id).await.unwrap();
        let approval = approvals.last().unwrap();
        (task.id, approval.id.to_string())
    }

    /// Audit rows matching `filter`'s action and task.
    pub(crate) async fn audit(&self, action: &str, task: Option<&TaskId>) -> Vec<AuditEntry> {
        self.service
            .list_audit(AuditFilter {
                actor: None,
                task_id: task.cloned(),
                action: Some(action.into()),
                before_id: None,
                exclude: Vec::new(),
                limit: 1000,
            })
            .await
            .unwrap()
    }
}

/// A script that writes `content` to `path` (which asks for approval), then finishes.
pub(crate) fn write_script(path: &str, content: &str) -> Value {
    json!([
        {"tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]},
        {"content": "done"}
    ])
}

/// A server state over `service` as `serve` builds it: the users and the chat sessions on
/// `store` (the service's), with the test token; nothing else equipped.
pub(crate) fn bare_state(
    service: &TaskService,
    store: &Store,
    settings: ServerSettings,
) -> AppState {
    AppState::new(
        service.clone(),
        pp_users::Users::new(service.clone(), store.clone()),
        pp_chat::Sessions::new(service.clone(), store.clone()),
        TOKEN,
        settings,
    )
}

/// A request builder with the loopback Host and the bearer token.
pub(crate) fn authed(method: Method, uri: &str) -> axum::http::request::Builder {
    Request::builder()
        .method(method)
        .uri(uri)
        .header("host", HOST)
        .header("authorization", format!("Bearer {TOKEN}"))
}

/// A request builder with the loopback Host and no credentials.
pub(crate) fn anonymous(method: Method, uri: &str) -> axum::http::request::Builder {
    Request::builder()
        .method(method)
        .uri(uri)
        .header("host", HOST)
}

/// An authenticated JSON request.
pub(crate) fn json_request(method: Method, uri: &str, body: &Value) -> Request<Body> {
    authed(method, uri)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

/// A response: status, headers, body bytes and the body as JSON (`Null` if it is not).
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) bytes: Vec<u8>,
    pub(crate) json: Value,
}

impl Reply {
    /// The error code of an error response.
    pub(crate) fn code(&self) -> &str {
        self.json["error"]["code"].as_str().unwrap_or("")
    }

    /// Asserts the status and, for errors, the code; returns `self` for chaining.
    #[track_caller]
    pub(crate) fn expect(&self, status: u16, code: Option<&str>) -> &Self {
        assert_eq!(self.status.as_u16(), status, "{self:?}");
        if let Some(code) = code {
            assert_eq!(self.code(), code, "{self:?}");
            assert!(self.json["error"]["message"].is_string(), "{self:?}");
        }
        self
    }

    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map(|value| value.to_str().unwrap())
            .unwrap_or("")
    }
}

/// Sends `request` through `router`.
pub(crate) async fn send(router: &Router, request: Request<Body>) -> Reply {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), 64 << 20)
        .await
        .unwrap()
        .to_vec();
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        bytes,
        json,
    }
}

/// Every store call of a route goes through the task service's async queries (which run
/// on the blocking pool), never `service().store()` on an async worker thread; operator
/// file work goes through `spawn_blocking`.
#[test]
fn routes_never_call_the_store_on_async_threads() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut pending = vec![src];
    let mut offenders = Vec::new();
    let mut files = 0;
    while let Some(dir) = pending.pop() {
        #[expect(
            clippy::disallowed_methods,
            reason = "the test reads this crate's sources"
        )]
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files += 1;
                #[expect(
                    clippy::disallowed_methods,
                    reason = "the test reads this crate's sources"
                )]
                let text = std::fs::read_to_string(&path).unwrap();
                for (number, line) in text.lines().enumerate() {
                    if line.contains(".store()") {
                        offenders.push(format!("{}:{}: {line}", path.display(), number + 1));
                    }
                }
            }
        }
    }
    assert!(files > 10, "the sources were found");
    assert_eq!(offenders, Vec::<String>::new());
}
