//! Per-step overhead of PocketPilot against a local OpenAI-compatible server: each step
//! is one model call (served by a loopback mock that waits a fixed delay before
//! answering) plus the tool call it asks for, through the real task service, store, gate
//! and tools. Prints time per step, the part spent waiting for the model, and the rest.
//! Run with `cargo bench -p pp-tasks --bench step_overhead`.
#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::disallowed_methods,
    missing_docs,
    reason = "a benchmark binary that prints its figures"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use pp_model::{ProviderKind, ProviderSettings};
use pp_store::Store;
use pp_tasks::{CreateTask, ModelSource, TaskService, TaskSettings, Workspaces};
use pp_types::{Actor, TaskState};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

const MODEL_DELAY: Duration = Duration::from_millis(20);
const STEPS_PER_TASK: u64 = 5;

/// Answers every request: a `read_file` call for the first steps, then a final answer.
async fn mock_server(listener: TcpListener, served: Arc<AtomicU64>, waited: Arc<AtomicU64>) {
    loop {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        let served = Arc::clone(&served);
        let waited = Arc::clone(&waited);
        tokio::spawn(async move {
            socket.set_nodelay(true).unwrap();
            let mut buffer = Vec::new();
            let mut chunk = [0u8; 8192];
            loop {
                // Read one request (headers + Content-Length body).
                let (head_end, length) = loop {
                    if let Some(end) = find(&buffer, b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buffer[..end]).to_lowercase();
                        let length = head
                            .lines()
                            .find_map(|line| line.strip_prefix("content-length:"))
                            .map_or(0, |value| value.trim().parse().unwrap_or(0));
                        break (end + 4, length);
                    }
                    let read = socket.read(&mut chunk).await.unwrap_or(0);
                    if read == 0 {
                        return;
                    }
                    buffer.extend_from_slice(&chunk[..read]);
                };
                while buffer.len() < head_end + length {
                    let read = socket.read(&mut chunk).await.unwrap_or(0);
                    if read == 0 {
                        return;
                    }
                    buffer.extend_from_slice(&chunk[..read]);
                }
                let body: serde_json::Value =
                    serde_json::from_slice(&buffer[head_end..head_end + length]).unwrap();
                buffer.drain(..head_end + length);
                let assistant_turns = body["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|m| m["role"] == "assistant")
                    .count() as u64;
                let slept = Instant::now();
                tokio::time::sleep(MODEL_DELAY).await;
                let slept = u64::try_from(slept.elapsed().as_micros()).unwrap();
                waited.fetch_add(slept, Ordering::Relaxed);
                served.fetch_add(1, Ordering::Relaxed);
                let message = if assistant_turns + 1 < STEPS_PER_TASK {
                    serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
                        {"id": format!("c{assistant_turns}"), "type": "function",
                         "function": {"name": "read_file", "arguments": "{\"path\":\"notes.txt\"}"}}]})
                } else {
                    serde_json::json!({"role": "assistant", "content": "done"})
                };
                let reply = serde_json::json!({
                    "id": "x", "model": "bench",
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10}
                })
                .to_string();
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{reply}",
                    reply.len()
                );
                if socket.write_all(response.as_bytes()).await.is_err() {
                    return;
                }
            }
        });
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let served = Arc::new(AtomicU64::new(0));
        let waited = Arc::new(AtomicU64::new(0));
        tokio::spawn(mock_server(
            listener,
            Arc::clone(&served),
            Arc::clone(&waited),
        ));

        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("workspace");
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::write(workspace.join("notes.txt"), "hello\n".repeat(50)).unwrap();
        let mut settings = ProviderSettings::new(
            ProviderKind::OpenAi,
            format!("http://127.0.0.1:{port}/v1"),
            "bench",
        );
        settings.stream = false;
        let model = Arc::from(pp_model::provider(&settings).unwrap());
        let service = TaskService::new(
            Store::open(&dir.path().join("bench.db")).unwrap(),
            TaskSettings::default(),
            Workspaces::single("bench", workspace),
            ModelSource::Provider(model),
        );

        let tasks = 40;
        let started = Instant::now();
        for _ in 0..tasks {
            let task = service
                .create(CreateTask {
                    prompt: "read the notes five times".into(),
                    workspace: None,
                    actor: Actor::Operator,
                    script: None,
                })
                .await
                .unwrap();
            let done = service.run_now(&task.id).await.unwrap();
            assert_eq!(done.state, TaskState::Completed, "{:?}", done.error);
        }
        let elapsed = started.elapsed();
        let steps = served.load(Ordering::Relaxed);
        assert_eq!(steps, tasks * STEPS_PER_TASK);
        let per_step = elapsed / u32::try_from(steps).unwrap();
        // The server's real wait (a 20 ms timer overshoots by about a millisecond).
        let model_wait = Duration::from_micros(waited.load(Ordering::Relaxed) / steps);
        let overhead = per_step.saturating_sub(model_wait);
        println!(
            "{tasks} tasks x {STEPS_PER_TASK} steps against a loopback OpenAI-compatible server \
             answering after {MODEL_DELAY:?}:"
        );
        println!("  time per step:            {per_step:?}");
        println!("  waiting for the model:    {model_wait:?} (measured inside the server)");
        println!(
            "  in PocketPilot + HTTP:    {overhead:?} per step ({:.1}% of the step)",
            overhead.as_secs_f64() / per_step.as_secs_f64() * 100.0
        );
    });
}
