//! Figures for the task service with the scripted model: tasks per second through
//! create → claim → run → complete with 1, 2 and 3 workers, and resolve latency (decision
//! durable → returned, and decision → resumed run finished). Run with
//! `cargo bench -p pp-tasks --bench service`; on SQLite always, and also on PostgreSQL
//! when `PP_TEST_POSTGRES_URL` names a server (a schema of its own per run, made and
//! dropped with `psql`).
#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::disallowed_methods,
    missing_docs,
    reason = "a benchmark binary that prints its figures"
)]

use std::time::{Duration, Instant};

use pp_store::{Store, StoreUrl};
use pp_tasks::{
    CreateTask, Decision, ModelSource, ResolveRequest, TaskService, TaskSettings, Workspaces,
};
use pp_types::{Actor, ApprovalState, TaskState};
use serde_json::json;

/// Where a bench service keeps its tasks.
enum Backend {
    /// A fresh SQLite file.
    Sqlite,
    /// A fresh schema on the PostgreSQL server `PP_TEST_POSTGRES_URL` names.
    Postgres(String),
}

impl Backend {
    fn name(&self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }
}

/// Runs one SQL statement with `psql`.
fn psql(server: &str, sql: &str) {
    let status = std::process::Command::new("psql")
        .args(["-q", "-v", "ON_ERROR_STOP=1", server, "-c"])
        .arg(format!("SET client_min_messages = warning; {sql}"))
        .status()
        .unwrap();
    assert!(status.success(), "psql failed: {sql}");
}

/// A service on a fresh database of `backend`; the returned schema name (PostgreSQL)
/// is dropped by the caller.
async fn build_service(
    backend: &Backend,
    dir: &std::path::Path,
    workers: usize,
) -> (TaskService, Option<String>) {
    let workspace = dir.join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("notes.txt"), "hello\n").unwrap();
    let (url, schema) = match backend {
        Backend::Sqlite => (StoreUrl::Sqlite(dir.join("bench.db")), None),
        Backend::Postgres(server) => {
            let schema = format!("tasks_bench_{}_{workers}", std::process::id());
            psql(server, &format!("CREATE SCHEMA {schema}"));
            let separator = if server.contains('?') { '&' } else { '?' };
            let url = format!("{server}{separator}options=-csearch_path%3D{schema}");
            (StoreUrl::parse(&url).unwrap(), Some(schema))
        }
    };
    let store = Store::connect(&url, std::sync::Arc::new(pp_types::SystemClock))
        .await
        .unwrap();
    let service = TaskService::new(
        store,
        TaskSettings {
            workers,
            poll_interval: Duration::from_millis(5),
            ..TaskSettings::default()
        },
        Workspaces::single("bench", workspace),
        ModelSource::Scripted,
    )
    .with_data_dir(dir.to_path_buf());
    (service, schema)
}

async fn create(service: &TaskService, script: serde_json::Value) -> pp_types::TaskRecord {
    service
        .create(CreateTask {
            prompt: "bench".into(),
            workspace: None,
            actor: Actor::Operator,
            script: Some(script),
        })
        .await
        .unwrap()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn p99(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() * 99 / 100]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut backends = vec![Backend::Sqlite];
    if let Some(server) = std::env::var("PP_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty())
    {
        backends.push(Backend::Postgres(server));
    }
    runtime.block_on(async {
        for backend in &backends {
            for workers in [1, 2, 3] {
                throughput(backend, workers).await;
            }
            resolve_latency(backend).await;
        }
    });
}

/// Tasks per second through the worker pool (2 model turns, 1 tool call each).
async fn throughput(backend: &Backend, workers: usize) {
    let read = json!([
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
        {"content": "done"}
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (service, schema) = build_service(backend, dir.path(), workers).await;
    let count = 500;
    let started = Instant::now();
    for _ in 0..count {
        create(&service, read.clone()).await;
    }
    service.start_workers();
    loop {
        let done = service
            .list_tasks(Some(TaskState::Completed), count + 1)
            .await
            .unwrap()
            .len();
        if done == count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let elapsed = started.elapsed();
    println!(
        "{}: tasks through the service ({workers} workers, read + answer): {count} in {:.2} s = {:.0} tasks/s",
        backend.name(),
        elapsed.as_secs_f64(),
        count as f64 / elapsed.as_secs_f64()
    );
    let events = service.last_seq().await.unwrap();
    println!(
        "  events stored along the way: {events} ({:.0} events/s)",
        events as f64 / elapsed.as_secs_f64()
    );
    drop(service);
    if let (Backend::Postgres(server), Some(schema)) = (backend, schema) {
        psql(server, &format!("DROP SCHEMA {schema} CASCADE"));
    }
}

/// Resolve latency: decision durable → returned, and decision → resumed run finished.
async fn resolve_latency(backend: &Backend) {
    let dir = tempfile::tempdir().unwrap();
    let (service, schema) = build_service(backend, dir.path(), 2).await;
    let write = json!([
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "out.txt", "content": "x"}}]},
        {"content": "done"}
    ]);
    let mut durable = Vec::new();
    let mut finished = Vec::new();
    for i in 0..300 {
        let task = create(&service, write.clone()).await;
        let task = service.run_now(&task.id).await.unwrap();
        assert_eq!(task.state, TaskState::WaitingApproval);
        let approval = service
            .approvals_for_task(&task.id)
            .await
            .unwrap()
            .into_iter()
            .find(|a| a.state == ApprovalState::Pending)
            .unwrap();
        let wait = i % 2 == 1;
        let started = Instant::now();
        let record = service
            .resolve(
                &approval.id,
                ResolveRequest {
                    decision: Decision::Approve,
                    edited_arguments: None,
                    reason: None,
                    seen_fingerprint: None,
                    actor: Actor::Operator,
                    wait,
                    via: Some(pp_types::Via::Api),
                    remote_user: None,
                },
            )
            .await
            .unwrap();
        let took = started.elapsed();
        if wait {
            assert_eq!(record.state, TaskState::Completed);
            finished.push(took);
        } else {
            durable.push(took);
            while service.task(&task.id).await.unwrap().state != TaskState::Completed {
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
        }
    }
    println!(
        "{}: resolve, returns once the decision is durable (wait=false): median {:?}, p99 {:?}",
        backend.name(),
        median(durable.clone()),
        p99(durable)
    );
    println!(
        "{}: resolve + resumed run to completion (wait=true): median {:?}, p99 {:?}",
        backend.name(),
        median(finished.clone()),
        p99(finished)
    );
    drop(service);
    if let (Backend::Postgres(server), Some(schema)) = (backend, schema) {
        psql(server, &format!("DROP SCHEMA {schema} CASCADE"));
    }
}
