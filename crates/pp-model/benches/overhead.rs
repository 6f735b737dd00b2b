//! Per-request overhead of the HTTP providers against the local mock server.
//!
//! Run with `cargo bench -p pp-model --bench overhead`. For each scenario it prints the
//! median and mean wall time per call when the mock answers at once (an upper bound on
//! our cost plus loopback HTTP and the mock's own work), and the time beyond a fixed
//! server delay (what PocketPilot adds while a real server would be thinking).
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark binary that reports on stdout"
)]

use std::time::{Duration, Instant};

use pp_agent::{Model, ModelRequest, ToolDefinition};
use pp_model::{HttpModel, ProviderKind, ProviderSettings};
use pp_test_support::mock::{MockServer, Reply};
use pp_types::{Message, ToolCall};
use serde_json::json;

const CALLS: usize = 200;
const SERVER_DELAY: Duration = Duration::from_millis(20);

/// A mid-sized conversation: system prompt, 8 tools, 10 tool round trips of ~1 KiB.
fn request() -> ModelRequest {
    let mut messages = vec![Message::system("x".repeat(4000)), Message::user("do it")];
    for turn in 0..10 {
        let id = format!("call_{turn}");
        messages.push(Message::Assistant {
            content: Some("working".into()),
            tool_calls: vec![ToolCall {
                id: id.clone(),
                name: "read_file".into(),
                arguments: json!({"path": format!("file{turn}.txt")}).to_string(),
            }],
            reasoning_content: None,
        });
        messages.push(Message::tool(id, "y".repeat(1024)));
    }
    let tools = (0..8)
        .map(|index| ToolDefinition {
            name: format!("tool_{index}"),
            description: "A tool used by the benchmark".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}},
                               "required": ["path"]}),
        })
        .collect::<Vec<_>>()
        .into();
    ModelRequest { messages, tools }
}

fn full_reply(delay: Duration) -> Reply {
    Reply::json(
        200,
        &json!({"choices": [{"message": {"content": "z".repeat(500),
            "tool_calls": [{"id": "c", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}}]}}],
            "usage": {"prompt_tokens": 4000, "completion_tokens": 150}}),
    )
    .delayed(delay)
}

/// 200 text chunks and a tool call split in 20 fragments, then usage and `[DONE]`.
fn stream_reply(delay: Duration) -> Reply {
    let mut items: Vec<String> = (0..200)
        .map(|_| json!({"choices": [{"delta": {"content": "word "}}]}).to_string())
        .collect();
    items.push(
        json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c",
        "function": {"name": "read_file", "arguments": ""}}]}}]})
        .to_string(),
    );
    for _ in 0..20 {
        items.push(
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0,
            "function": {"arguments": "ab"}}]}}]})
            .to_string(),
        );
    }
    items.push(
        json!({"choices": [], "usage": {"prompt_tokens": 4000, "completion_tokens": 220}})
            .to_string(),
    );
    items.push("[DONE]".into());
    Reply::sse(&items).delayed(delay)
}

async fn measure(stream: bool, delay: Duration) -> Vec<Duration> {
    let reply = if stream {
        stream_reply(delay)
    } else {
        full_reply(delay)
    };
    let server = MockServer::start(vec![reply]).await;
    let mut settings =
        ProviderSettings::new(ProviderKind::OpenAi, format!("{}/v1", server.url()), "m")
            .with_api_key("sk-bench");
    settings.stream = stream;
    let model = HttpModel::new(&settings).unwrap();
    let request = request();
    // Warm up the connection pool.
    model.complete(&request).await.unwrap();
    let mut times = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let start = Instant::now();
        let response = model.complete(&request).await.unwrap();
        times.push(start.elapsed());
        assert_eq!(response.tool_calls.len(), 1);
    }
    times.sort();
    times
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let body_bytes = serde_json::to_vec(&request().messages).unwrap().len();
    println!(
        "conversation: 22 messages, 8 tools, ~{body_bytes} bytes of messages; {CALLS} calls each"
    );
    // What the mock's 20 ms sleep really takes (timer granularity), to subtract.
    let slept = runtime.block_on(async {
        let mut total = Duration::ZERO;
        for _ in 0..50 {
            let start = Instant::now();
            tokio::time::sleep(SERVER_DELAY).await;
            total += start.elapsed();
        }
        total / 50
    });
    println!(
        "a {} ms tokio sleep in the mock really takes {:.0} µs",
        SERVER_DELAY.as_millis(),
        micros(slept)
    );
    for stream in [false, true] {
        let label = if stream {
            "streamed (222 chunks)"
        } else {
            "non-streamed"
        };
        let instant = runtime.block_on(measure(stream, Duration::ZERO));
        let delayed = runtime.block_on(measure(stream, SERVER_DELAY));
        let median = |times: &[Duration]| times[times.len() / 2];
        let mean = |times: &[Duration]| times.iter().sum::<Duration>() / times.len() as u32;
        println!(
            "{label:>22}: instant server: median {:>7.0} µs, mean {:>7.0} µs | \
             beyond the server's {} ms delay: median {:>7.0} µs, mean {:>7.0} µs",
            micros(median(&instant)),
            micros(mean(&instant)),
            SERVER_DELAY.as_millis(),
            micros(median(&delayed).saturating_sub(slept)),
            micros(mean(&delayed).saturating_sub(slept)),
        );
    }
}
