//! Figures for the store on a real file (WAL, `synchronous = NORMAL`) and, when
//! `PP_TEST_POSTGRES_URL` names a server, on PostgreSQL (in a schema of its own, dropped
//! afterwards): event appends one per transaction and batched, resolve latency,
//! create + claim throughput, backup (SQLite) and prune.
//!
//! Run with `cargo bench -p pp-store` (release). Prints plain text; no harness.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark binary: prints figures and panics on setup failure"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use pp_store::{NewApproval, NewTask, Resolve, Store, StoreUrl, TaskChange};
use pp_types::{
    Actor, ApprovalState, CHECKPOINT_VERSION, Checkpoint, Event, EventKind, Message, NewAudit,
    PendingCall, Risk, SystemClock, TaskState, ToolCall,
};
use serde_json::json;

const SINGLE_EVENTS: usize = 5_000;
const BATCH: usize = 100;
const BATCHED_EVENTS: usize = 50_000;
const RESOLVES: usize = 1_000;
const TASKS: usize = 5_000;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        run(StoreUrl::Sqlite(dir.path().join("bench.db")), dir.path()).await;
        if let Some(server) = postgres_url() {
            let schema = format!("bench_{}", std::process::id());
            let admin = admin(&server).await;
            admin
                .batch_execute(&format!("CREATE SCHEMA {schema}"))
                .await
                .unwrap();
            let separator = if server.contains('?') { '&' } else { '?' };
            let url = format!("{server}{separator}options=-csearch_path%3D{schema}");
            run(StoreUrl::parse(&url).unwrap(), dir.path()).await;
            admin
                .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
                .await
                .unwrap();
        }
    });
}

/// `PP_TEST_POSTGRES_URL`, if set and not empty.
#[expect(
    clippy::disallowed_methods,
    reason = "the bench's one switch: which PostgreSQL server to also measure"
)]
fn postgres_url() -> Option<String> {
    std::env::var("PP_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty())
}

/// A plain connection to `server`, for creating and dropping the bench's schema.
async fn admin(server: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(server, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

async fn run(url: StoreUrl, dir: &std::path::Path) {
    let store = Store::connect(&url, Arc::new(SystemClock)).await.unwrap();
    println!("pp-store bench: {url} ({})", store.backend_name());

    let task = store.create_task(new_task()).await.unwrap();
    store.claim(&task.id, &[TaskState::Queued]).await.unwrap();
    let event = Event {
        step: 3,
        kind: EventKind::ToolResult {
            call_id: "call_1".into(),
            name: "read_file".into(),
            content: "x".repeat(200),
        },
    };

    let start = Instant::now();
    for _ in 0..SINGLE_EVENTS {
        store
            .append_events(&task.id, std::slice::from_ref(&event))
            .await
            .unwrap();
    }
    let single = start.elapsed();
    println!(
        "event append, one per transaction: {:>9.0} events/s ({SINGLE_EVENTS} events, {:.1} µs each)",
        rate(SINGLE_EVENTS, single),
        micros(single) / SINGLE_EVENTS as f64
    );

    let batch = vec![event; BATCH];
    let start = Instant::now();
    for _ in 0..BATCHED_EVENTS / BATCH {
        store.append_events(&task.id, &batch).await.unwrap();
    }
    let batched = start.elapsed();
    println!(
        "event append, {BATCH} per transaction: {:>9.0} events/s ({BATCHED_EVENTS} events)",
        rate(BATCHED_EVENTS, batched)
    );

    let start = Instant::now();
    let read = store.events_after(0, usize::MAX).await.unwrap();
    println!(
        "events_after(0), all rows:         {:>9.0} events/s ({} events)",
        rate(read.len(), start.elapsed()),
        read.len()
    );

    // Resolve latency: suspend RESOLVES tasks first, then time each resolve alone.
    let mut approvals = Vec::with_capacity(RESOLVES);
    let mut suspend_times = Vec::with_capacity(RESOLVES);
    for _ in 0..RESOLVES {
        let task = store.create_task(new_task()).await.unwrap();
        store.claim(&task.id, &[TaskState::Queued]).await.unwrap();
        let start = Instant::now();
        let (approval, _) = store
            .suspend(
                &task.id,
                vec![new_approval()],
                TaskChange::to(TaskState::WaitingApproval),
            )
            .await
            .unwrap();
        suspend_times.push(start.elapsed());
        approvals.extend(approval.into_iter().map(|approval| approval.id));
    }
    let mut resolve_times = Vec::with_capacity(RESOLVES);
    for id in &approvals {
        let start = Instant::now();
        store.resolve(id, approve()).await.unwrap();
        resolve_times.push(start.elapsed());
    }
    report("suspend (checkpoint ~2 KiB)", &mut suspend_times);
    report("resolve (CAS + audit + event)", &mut resolve_times);

    let start = Instant::now();
    for _ in 0..TASKS {
        store.create_task(new_task()).await.unwrap();
    }
    let created = start.elapsed();
    let start = Instant::now();
    let mut claimed = 0;
    while store.claim_queued().await.unwrap().is_some() {
        claimed += 1;
    }
    let claiming = start.elapsed();
    assert_eq!(claimed, TASKS);
    println!(
        "create_task:                       {:>9.0} tasks/s ({TASKS} tasks)",
        rate(TASKS, created)
    );
    println!(
        "claim_queued:                      {:>9.0} tasks/s",
        rate(TASKS, claiming)
    );
    println!(
        "create + claim:                    {:>9.0} tasks/s",
        rate(TASKS, created + claiming)
    );

    if store.path().is_some() {
        let copy = dir.join("backup.db");
        let start = Instant::now();
        store.backup_to(&copy).await.unwrap();
        let backed_up = start.elapsed();
        let size = copy.metadata().unwrap().len();
        println!(
            "backup_to (online backup):         {:>9.1} ms ({:.1} MiB)",
            micros(backed_up) / 1000.0,
            size as f64 / (1024.0 * 1024.0)
        );
    }

    // Prune the history of the first task (every appended event) once it has finished.
    store
        .transition(
            &task.id,
            &[TaskState::Running],
            TaskChange::to(TaskState::Completed),
        )
        .await
        .unwrap();
    let start = Instant::now();
    let pruned = store.prune(Duration::ZERO).await.unwrap();
    let pruning = start.elapsed();
    println!(
        "prune:                             {:>9.0} events/s ({} events)",
        rate(pruned.events, pruning),
        pruned.events
    );
}

fn rate(count: usize, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64()
}

fn micros(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64() * 1e6
}

fn report(what: &str, times: &mut [Duration]) {
    times.sort();
    let at = |q: f64| micros(times[((times.len() - 1) as f64 * q) as usize]);
    println!(
        "{what:<34} median {:>6.1} µs, p99 {:>6.1} µs, max {:>7.1} µs ({} runs)",
        at(0.5),
        at(0.99),
        at(1.0),
        times.len()
    );
}

fn new_task() -> NewTask {
    NewTask {
        prompt: "Summarise notes.md into notes/summary.md".into(),
        workspace: "home".into(),
        workspace_path: "/srv/home".into(),
        created_by: Actor::Operator,
        origin: None,
        script: None,
    }
}

fn new_approval() -> NewApproval {
    let call = ToolCall {
        id: "call_1".into(),
        name: "write_file".into(),
        arguments: r#"{"path":"notes/summary.md","content":"Three points."}"#.into(),
    };
    let arguments = json!({"path": "notes/summary.md", "content": "Three points."});
    let checkpoint = Checkpoint {
        version: CHECKPOINT_VERSION,
        pending: PendingCall {
            call: call.clone(),
            arguments: arguments.clone(),
            capability: "file:write".into(),
            risk: Risk::High,
            preview: None,
        },
        more_pending: Vec::new(),
        later_calls: Vec::new(),
        messages: vec![
            Message::system("You are PocketPilot.".repeat(40)),
            Message::user("Summarise notes.md into notes/summary.md"),
            Message::tool("call_0", "notes ".repeat(150)),
            Message::Assistant {
                content: None,
                tool_calls: vec![call],
                reasoning_content: None,
            },
        ],
        step: 2,
        denials: 0,
        tokens_used: 900,
        last_usage: None,
        events: Vec::new(),
    };
    NewApproval {
        tool: "write_file".into(),
        capability: "file:write".into(),
        risk: Risk::High,
        label: None,
        target: Some("notes/summary.md".into()),
        arguments,
        fingerprint: Some("absent".into()),
        call_id: checkpoint.pending.call.id.clone(),
        changeset_id: None,
        checkpoint,
        revertible: None,
    }
}

fn approve() -> Resolve {
    Resolve {
        state: ApprovalState::Approved,
        actor: Actor::Operator,
        reason: None,
        edited_arguments: None,
        edited_preview: None,
        fingerprint: None,
        audit: NewAudit {
            ..NewAudit::new(pp_types::AuditAction::ApprovalApproved)
        },
        task_to: TaskState::Running,
        events: vec![Event {
            step: 2,
            kind: EventKind::ApprovalResolved {
                call_id: "call_1".into(),
                decision: pp_types::ResolutionKind::Approved,
                edited: false,
                reason: None,
                arguments: None,
                preview: None,
                edited_by: None,
            },
        }],
    }
}
