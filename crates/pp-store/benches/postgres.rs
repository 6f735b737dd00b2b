//! Rough per-operation latency of the two backends side by side: create + claim +
//! complete a task, append one event, append a batch of 100, on an SQLite file and (when
//! `PP_TEST_POSTGRES_URL` names a server) on PostgreSQL, in a schema of its own that is
//! dropped afterwards. One caller at a time: this is latency, not throughput.
//!
//! Run with `PP_TEST_POSTGRES_URL=postgres://… cargo bench -p pp-store --bench postgres`.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "a benchmark binary: prints figures, reads its server from the environment and \
              panics on setup failure"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use pp_store::{NewTask, Store, StoreUrl, TaskChange};
use pp_types::{Actor, Event, EventKind, SystemClock, TaskState};

const TASKS: usize = 500;
const EVENTS: usize = 2_000;
const BATCH: usize = 100;
const BATCHES: usize = 50;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.db");
        let url = StoreUrl::parse(&format!("sqlite://{}", path.display())).unwrap();
        let sqlite = Store::connect(&url, Arc::new(SystemClock)).await.unwrap();
        run("sqlite", &sqlite).await;
        let Ok(base) = std::env::var("PP_TEST_POSTGRES_URL") else {
            println!("postgres: skipped (PP_TEST_POSTGRES_URL is not set)");
            return;
        };
        let schema = "pgh_bench";
        admin(
            &base,
            &format!("DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"),
        )
        .await;
        let separator = if base.contains('?') { '&' } else { '?' };
        let url = StoreUrl::parse(&format!(
            "{base}{separator}options=-csearch_path%3D{schema}"
        ))
        .unwrap();
        let postgres = Store::connect(&url, Arc::new(SystemClock)).await.unwrap();
        run("postgres", &postgres).await;
        drop(postgres);
        admin(&base, &format!("DROP SCHEMA {schema} CASCADE")).await;
    });
}

async fn admin(base: &str, sql: &str) {
    let (client, connection) = tokio_postgres::connect(base, tokio_postgres::NoTls)
        .await
        .unwrap();
    let driver = tokio::spawn(connection);
    client.batch_execute(sql).await.unwrap();
    drop(client);
    let _ = driver.await;
}

async fn run(name: &str, store: &Store) {
    let start = Instant::now();
    for _ in 0..TASKS {
        let task = store.create_task(new_task()).await.unwrap();
        let claimed = store.claim_queued().await.unwrap().unwrap();
        assert_eq!(claimed.id, task.id);
        let done = TaskChange {
            events: vec![event()],
            ..TaskChange::to(TaskState::Completed)
        };
        store
            .transition(&task.id, &[TaskState::Running], done)
            .await
            .unwrap();
    }
    let lifecycle = start.elapsed();
    let task = store.create_task(new_task()).await.unwrap();
    let start = Instant::now();
    for _ in 0..EVENTS {
        store.append_events(&task.id, &[event()]).await.unwrap();
    }
    let appends = start.elapsed();
    let batch = vec![event(); BATCH];
    let start = Instant::now();
    for _ in 0..BATCHES {
        store.append_events(&task.id, &batch).await.unwrap();
    }
    let batches = start.elapsed();
    println!(
        "{name:>8}: append_events in batches of {BATCH}: {:>6.1} ms/batch ({BATCHES} batches)",
        micros(batches) / 1000.0 / BATCHES as f64,
    );
    println!(
        "{name:>8}: create+claim+complete {:>7.0} µs/task ({TASKS} tasks); \
         append_events {:>6.0} µs/event ({EVENTS} events)",
        micros(lifecycle) / TASKS as f64,
        micros(appends) / EVENTS as f64,
    );
}

fn new_task() -> NewTask {
    NewTask {
        prompt: "Summarise notes.md".into(),
        workspace: "home".into(),
        workspace_path: "/srv/home".into(),
        created_by: Actor::Operator,
        origin: None,
        script: None,
    }
}

fn event() -> Event {
    Event {
        step: 1,
        kind: EventKind::ToolResult {
            call_id: "call_1".into(),
            name: "read_file".into(),
            content: "x".repeat(200),
        },
    }
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}
