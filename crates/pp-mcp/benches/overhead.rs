//! Per-call overhead of a [`pp_mcp::Connection`] against a bare rmcp client: `echo`
//! calls to `@modelcontextprotocol/server-everything` over stdio, the same number each
//! way, in alternating rounds (so machine noise hits both), one server process each.
//!
//! Run with `cargo bench -p pp-mcp --bench overhead` (release; needs `npm ci` in
//! `crates/pp-mcp/tests/servers`). `-- N` sets the calls per round (default 300).
//! Prints plain text; no harness.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark binary: prints figures and panics on setup failure"
)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use pp_agent::Interrupt;
use pp_mcp::config::defaults;
use pp_mcp::{Backend, Connection, ServerConfig, Start, Transport};
use pp_test_support::mcp_servers::{everything, installed};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::json;

const ROUNDS: usize = 5;
const WARMUP: usize = 20;

fn main() {
    let Some(dir) = installed() else { return };
    let calls: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(300);
    let (command, args) = everything(&dir);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let connection = Connection::new(ServerConfig {
            name: "everything".to_owned(),
            transport: Transport::Stdio {
                command: command.clone(),
                args: args.clone(),
                env: BTreeMap::new(),
                cwd: None,
            },
            allow: vec!["*".to_owned()],
            default_action: None,
            trust_annotations: false,
            start: Start::Lazy,
            call_timeout: Duration::from_secs(60),
            max_output_bytes: defaults::MAX_OUTPUT_BYTES,
            include_instructions: false,
            tools: BTreeMap::new(),
            sandbox: pp_mcp::config::SandboxConfig::unconfined(),
        });
        let started = Instant::now();
        connection.connect().await.unwrap();
        let ours_start = started.elapsed();

        let started = Instant::now();
        let bare = ()
            .serve(
                TokioChildProcess::new(tokio::process::Command::new(&command).configure(
                    |command| {
                        command.args(&args);
                    },
                ))
                .unwrap(),
            )
            .await
            .unwrap();
        let bare_start = started.elapsed();

        let interrupt = Interrupt::default();
        let ours_call = || async {
            let output = connection
                .call("echo", json!({"message": "ping"}), &interrupt)
                .await
                .unwrap();
            assert_eq!(output.text, "Echo: ping");
        };
        let bare_call = || async {
            let mut params = CallToolRequestParams::new("echo");
            params.arguments = json!({"message": "ping"}).as_object().cloned();
            let result = bare.call_tool(params).await.unwrap();
            assert_eq!(result.content.len(), 1);
        };
        for _ in 0..WARMUP {
            ours_call().await;
            bare_call().await;
        }
        let mut ours = Vec::new();
        let mut direct = Vec::new();
        for _ in 0..ROUNDS {
            let started = Instant::now();
            for _ in 0..calls {
                ours_call().await;
            }
            ours.push(started.elapsed() / u32::try_from(calls).unwrap());
            let started = Instant::now();
            for _ in 0..calls {
                bare_call().await;
            }
            direct.push(started.elapsed() / u32::try_from(calls).unwrap());
        }
        ours.sort();
        direct.sort();
        let (ours, direct) = (ours[ROUNDS / 2], direct[ROUNDS / 2]);
        println!("echo over stdio, {ROUNDS} rounds of {calls} calls each way (median round):");
        println!("  bare rmcp client   {:>8.1} µs/call", micros(direct));
        println!("  pp_mcp Connection  {:>8.1} µs/call", micros(ours));
        println!(
            "  overhead           {:>8.1} µs/call",
            micros(ours) - micros(direct)
        );
        println!(
            "start (spawn + initialize): bare {:.0} ms, Connection {:.0} ms",
            micros(bare_start) / 1000.0,
            micros(ours_start) / 1000.0
        );
        connection.shutdown().await;
        bare.cancel().await.unwrap();
    });
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}
