//! Figures for the task service with the scripted model: tasks per second through
//! create → claim → run → complete, and resolve latency (decision durable → returned, and
//! decision → resumed run finished). Run with `cargo bench -p pp-tasks`.
#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::disallowed_methods,
    missing_docs,
    reason = "a benchmark binary that prints its figures"
)]

use std::time::{Duration, Instant};

use pp_tasks::store::Store;
use pp_tasks::{
    CreateTask, Decision, ModelSource, ResolveRequest, TaskService, TaskSettings, Workspaces,
};
use pp_types::{Actor, ApprovalState, TaskState};
use serde_json::json;

fn build_service(dir: &std::path::Path, workers: usize) -> TaskService {
    let workspace = dir.join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("notes.txt"), "hello\n").unwrap();
    let store = Store::open(&dir.join("bench.db")).unwrap();
    TaskService::new(
        store,
        TaskSettings {
            workers,
            poll_interval: Duration::from_millis(5),
            ..TaskSettings::default()
        },
        Workspaces::single("bench", workspace),
        ModelSource::Scripted,
    )
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
    runtime.block_on(async {
        let read = json!([
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
            {"content": "done"}
        ]);

        // Tasks per second through the worker pool (2 model turns, 1 tool call each).
        let dir = tempfile::tempdir().unwrap();
        let service = build_service(dir.path(), 2);
        let count = 500;
        let started = Instant::now();
        for _ in 0..count {
            create(&service, read.clone()).await;
        }
        service.start_workers();
        loop {
            let done = service
                .store()
                .list_tasks(Some(TaskState::Completed), count + 1).await
                .unwrap()
                .len();
            if done == count {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let elapsed = started.elapsed();
        println!(
            "tasks through the service (2 workers, read + answer): {count} in {:.2} s = {:.0} tasks/s",
            elapsed.as_secs_f64(),
            count as f64 / elapsed.as_secs_f64()
        );
        let events = service.store().last_seq().await.unwrap();
        println!(
            "  events stored along the way: {events} ({:.0} events/s)",
            events as f64 / elapsed.as_secs_f64()
        );

        // Resolve latency.
        let dir = tempfile::tempdir().unwrap();
        let service = build_service(dir.path(), 2);
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
                .store()
                .approvals_for_task(&task.id).await
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
                        actor: Actor::Operator,
                        wait,
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
                while service.store().task(&task.id).await.unwrap().state != TaskState::Completed {
                    tokio::time::sleep(Duration::from_micros(200)).await;
                }
            }
        }
        println!(
            "resolve, returns once the decision is durable (wait=false): median {:?}, p99 {:?}",
            median(durable.clone()),
            p99(durable)
        );
        println!(
            "resolve + resumed run to completion (wait=true): median {:?}, p99 {:?}",
            median(finished.clone()),
            p99(finished)
        );
    });
}
