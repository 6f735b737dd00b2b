//! `load`: the load test of `pocketpilot serve` (see `docs/testing.md`).
//!
//! `serve` runs against a loopback OpenAI-compatible mock (configured with a `[model]`
//! table, no `--script`) that plays a 5-step conversation per task: tool reads and, for
//! every second task, a `write_file` that stops for approval. All tasks are created at
//! once; each approval is then resolved twice at the same moment (exactly one 2xx and one
//! 409 expected); 50 clients follow the global event stream throughout. Any lost approval,
//! double execution or lost event exits 1.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line test driver reports on the terminal"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod checks;

use clap::Parser;
use pp_test_support::http::Endpoint;
use pp_test_support::mock::{MockServer, Recorded, Reply};
use pp_test_support::process::{Pocketpilot, Serve, cpu_time, default_bin};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::{Barrier, Semaphore, watch};

use crate::checks::{check_events, check_executions};

/// Load test of `pocketpilot serve` against a loopback OpenAI-compatible server.
#[derive(Debug, Parser)]
struct Args {
    /// Concurrent tasks of 5 model steps each; every second one writes (at most 1000).
    #[arg(long, default_value_t = 1000)]
    tasks: usize,
    /// Clients following `GET /api/events` during the whole run.
    #[arg(long, default_value_t = 50)]
    sse_clients: usize,
    /// `[tasks] workers` of the server.
    #[arg(long, default_value_t = 8)]
    workers: usize,
    /// The `pocketpilot` binary (default: target/<this build's profile>/pocketpilot).
    #[arg(long, value_name = "PATH")]
    bin: Option<PathBuf>,
    /// Give up (and fail) after this many seconds.
    #[arg(long, default_value_t = 900)]
    max_secs: u64,
    /// Keep the temporary directory (it is always kept when a check fails).
    #[arg(long)]
    keep: bool,
    /// How long the mock model takes to answer each call, in milliseconds (a real model
    /// takes hundreds): the run is then bound by latency, not by the CPU.
    #[arg(long, default_value_t = 0)]
    model_latency_ms: u64,
    /// At most this many resolve requests in flight (0: all of them released together).
    #[arg(long, default_value_t = 0)]
    resolve_concurrency: usize,
}

const REQUEST_LIMIT: Duration = Duration::from_secs(60);

/// The task number and whether it writes, from the prompt `load task N write|read`.
fn parse_prompt(prompt: &str) -> Option<(usize, bool)> {
    let (_, rest) = prompt.split_once("load task ")?;
    let mut words = rest.split_whitespace();
    let number = words.next()?.parse().ok()?;
    Some((number, words.next() == Some("write")))
}

fn prompt(index: usize) -> String {
    let kind = if index.is_multiple_of(2) {
        "write"
    } else {
        "read"
    };
    format!("load task {index} {kind}")
}

fn output_name(index: usize) -> String {
    format!("out-{index:04}.txt")
}

fn output_content(index: usize) -> String {
    format!("written by load task {index}\n")
}

/// What the mock reads of a chat request: the messages' roles and the user's prompt
/// (the tool definitions, most of the body, are skipped unread).
#[derive(Deserialize)]
struct ChatRequest {
    messages: Vec<ChatMessage>,
}

#[derive(Deserialize)]
struct ChatMessage {
    role: String,
    #[serde(default)]
    content: Value,
}

/// The mock's reply: step = the number of assistant turns already in the conversation.
fn conversation(request: &Recorded) -> Reply {
    let Ok(body) = serde_json::from_slice::<ChatRequest>(&request.body) else {
        return Reply::json(
            400,
            &json!({"error": {"message": "body is not a chat request"}}),
        );
    };
    let messages = body.messages;
    let task = messages
        .iter()
        .filter(|message| message.role == "user")
        .find_map(|message| message.content.as_str().and_then(parse_prompt));
    let Some((index, writes)) = task else {
        return Reply::json(
            400,
            &json!({"error": {"message": "not a load-test prompt"}}),
        );
    };
    let step = messages
        .iter()
        .filter(|message| message.role == "assistant")
        .count();
    let call = |name: &str, arguments: Value| {
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": format!("call_{index}_{step}"), "type": "function",
            "function": {"name": name, "arguments": arguments.to_string()}
        }]})
    };
    let (message, finish) = match step {
        0 => (call("list_files", json!({"path": "."})), "tool_calls"),
        1 => (call("read_file", json!({"path": "seed.txt"})), "tool_calls"),
        2 => (call("list_files", json!({"path": "."})), "tool_calls"),
        3 if writes => (
            call(
                "write_file",
                json!({"path": output_name(index), "content": output_content(index)}),
            ),
            "tool_calls",
        ),
        3 => (call("read_file", json!({"path": "seed.txt"})), "tool_calls"),
        _ => (
            json!({"role": "assistant", "content": format!("task {index} done")}),
            "stop",
        ),
    };
    Reply::json(
        200,
        &json!({
            "id": format!("chatcmpl-{index}-{step}"), "object": "chat.completion",
            "created": 1, "model": "mock",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        }),
    )
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(args).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("load: error: {error}");
            ExitCode::from(2)
        }
    }
}

/// Writes the config (model = the mock, one workspace) and the seed file.
#[expect(
    clippy::disallowed_methods,
    reason = "the load test builds its own temporary tree"
)]
fn setup(root: &Path, bin: &Path, model_url: &str, workers: usize) -> std::io::Result<Pocketpilot> {
    let workspace = root.join("ws");
    std::fs::create_dir_all(&workspace)?;
    std::fs::write(workspace.join("seed.txt"), "seed for the load test\n")?;
    let config_dir = root.join("config");
    std::fs::create_dir_all(&config_dir)?;
    let config = format!(
        "[model]\nprovider = \"openai\"\nmodel = \"mock\"\nbase_url = {base}\nstream = false\n\
         timeout_secs = 300\nmax_retries = 2\n\n\
         [tasks]\nworkers = {workers}\ntimeout_secs = 3600\n\n\
         [discovery]\nenabled = false\n\n\
         [[workspace]]\nname = \"load\"\npath = {path}\ndefault = true\n",
        base = serde_json::to_string(&format!("{model_url}/v1"))?,
        path = serde_json::to_string(&workspace.to_string_lossy())?,
    );
    let config_file = config_dir.join("pocketpilot.toml");
    std::fs::write(&config_file, config)?;
    Ok(Pocketpilot {
        bin: bin.to_path_buf(),
        home: root.join("home"),
        config: config_file,
        log: root.join("serve.log"),
    })
}

/// One SSE client's view.
#[derive(Debug, Default)]
struct Seen {
    seqs: Vec<u64>,
    reconnects: usize,
    errors: Vec<String>,
}

/// Follows `/api/events` until `stop` changes; reconnects with `Last-Event-ID` like a browser.
async fn follow(
    endpoint: Endpoint,
    seen: Arc<Mutex<Seen>>,
    opened: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
) {
    let mut last: Option<u64> = None;
    let mut first = true;
    loop {
        let seen_for_events = Arc::clone(&seen);
        let opened = Arc::clone(&opened);
        let was_first = first;
        let stream = endpoint.sse(
            "/api/events",
            last,
            move || {
                if was_first {
                    opened.add_permits(1);
                }
            },
            |seq| {
                if let Ok(mut seen) = seen_for_events.lock() {
                    seen.seqs.push(seq);
                }
                true
            },
        );
        let ended = tokio::select! {
            result = stream => result,
            _ = stop.changed() => return,
        };
        first = false;
        if let Ok(mut seen) = seen.lock() {
            if let Err(error) = ended {
                seen.errors.push(error.to_string());
            }
            seen.reconnects += 1;
            last = seen.seqs.last().copied().or(last);
        }
        if *stop.borrow() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() as f64 * fraction).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

async fn run(args: Args) -> std::io::Result<bool> {
    if args.tasks == 0 || args.tasks > 1000 {
        return Err(std::io::Error::other("--tasks must be 1..=1000"));
    }
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let bin = args.bin.clone().unwrap_or_else(|| default_bin(profile));
    if !bin.is_file() {
        return Err(std::io::Error::other(format!(
            "{} not found: build it (cargo build -p pp-cli --release) or pass --bin",
            bin.display()
        )));
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.max_secs);
    let temp = tempfile::Builder::new().prefix("pp-load-").tempdir()?;
    let root = temp.path().to_path_buf();
    let latency = Duration::from_millis(args.model_latency_ms);
    let mock = MockServer::start_with(move |request| conversation(request).delayed(latency)).await;
    let pocketpilot = setup(&root, &bin, &mock.url(), args.workers)?;
    println!(
        "load: {} tasks x 5 steps, {} SSE clients, {} workers, model latency {} ms, \
         resolves in flight {}, binary {}, data in {}",
        args.tasks,
        args.sse_clients,
        args.workers,
        args.model_latency_ms,
        in_flight(args.resolve_concurrency),
        bin.display(),
        root.display()
    );
    let serve = {
        let pocketpilot = pocketpilot.clone();
        tokio::task::spawn_blocking(move || pocketpilot.serve(&[], Duration::from_secs(60)))
            .await
            .map_err(|error| std::io::Error::other(format!("start serve: {error}")))??
    };
    let endpoint = serve.endpoint.clone();
    let health = endpoint.get_json("/api/health", REQUEST_LIMIT).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle_kib = serve.memory_kib("VmHWM").unwrap_or(0);

    let mut violations: Vec<String> = Vec::new();
    let outcome = exercise(&args, &serve, &endpoint, &root, deadline, &mut violations).await;
    let under_load_kib = serve.memory_kib("VmHWM").unwrap_or(0);
    drop(serve);
    let figures = match outcome {
        Ok(figures) => Some(figures),
        Err(error) => {
            violations.push(format!("the run stopped early: {error}"));
            None
        }
    };

    println!("model: {}", health["model"]);
    println!("model calls answered by the mock: {}", mock.served());
    if let Some(figures) = &figures {
        println!(
            "tasks: {} in {:.1} s = {:.1} tasks/s (created at once, {} approvals)",
            args.tasks,
            figures.tasks_secs,
            args.tasks as f64 / figures.tasks_secs.max(0.001),
            figures.approvals
        );
        print_phases(&figures.marks, args.tasks);
        println!(
            "resolve latency ({} requests, 2 per approval, {} in flight): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            figures.latencies.len(),
            in_flight(args.resolve_concurrency),
            percentile(&figures.latencies, 0.50).as_secs_f64() * 1000.0,
            percentile(&figures.latencies, 0.99).as_secs_f64() * 1000.0,
            figures
                .latencies
                .last()
                .copied()
                .unwrap_or_default()
                .as_secs_f64()
                * 1000.0,
        );
        println!(
            "events: {} stored; each of {} SSE clients saw them all ({} reconnects)",
            figures.events, args.sse_clients, figures.reconnects
        );
    }
    println!(
        "serve peak RSS (VmHWM): idle {:.1} MiB, under load {:.1} MiB",
        idle_kib as f64 / 1024.0,
        under_load_kib as f64 / 1024.0
    );
    println!("wall time: {:.1} s", started.elapsed().as_secs_f64());
    if violations.is_empty() {
        println!("load: OK");
        if args.keep {
            println!("kept {}", temp.keep().display());
        }
        Ok(true)
    } else {
        for violation in violations.iter().take(50) {
            eprintln!("VIOLATION: {violation}");
        }
        eprintln!(
            "load: FAILED with {} violation(s); data kept in {}",
            violations.len(),
            temp.keep().display()
        );
        Ok(false)
    }
}

/// A moment of the run: seconds since the first create, and the CPU time (user +
/// system) serve and this process (the mock model, every client) had used by then.
#[derive(Debug, Clone, Copy)]
struct Mark {
    secs: f64,
    cpu: [Duration; 2],
}

/// Measured figures.
#[derive(Debug)]
struct Figures {
    tasks_secs: f64,
    /// The first create; every task created; every writer waiting for approval (and
    /// every reader done); every resolve answered; every task completed.
    marks: [Mark; 5],
    approvals: usize,
    latencies: Vec<Duration>,
    events: usize,
    reconnects: usize,
}

async fn exercise(
    args: &Args,
    serve: &Serve,
    endpoint: &Endpoint,
    root: &Path,
    deadline: Instant,
    violations: &mut Vec<String>,
) -> std::io::Result<Figures> {
    // The SSE clients connect before the first task exists, so each must see every event.
    let (stop, stopped) = watch::channel(false);
    let opened = Arc::new(Semaphore::new(0));
    let mut clients = Vec::new();
    for _ in 0..args.sse_clients {
        let seen = Arc::new(Mutex::new(Seen::default()));
        clients.push(Arc::clone(&seen));
        tokio::spawn(follow(
            endpoint.clone(),
            seen,
            Arc::clone(&opened),
            stopped.clone(),
        ));
    }
    let all_open = opened.acquire_many(u32::try_from(args.sse_clients).unwrap_or(u32::MAX));
    match tokio::time::timeout(Duration::from_secs(30), all_open).await {
        Ok(Ok(permits)) => permits.forget(),
        _ => return Err(std::io::Error::other("the SSE clients did not all connect")),
    }

    // Create every task at once.
    let cpu = || [serve.pid(), std::process::id()].map(|pid| cpu_time(pid).unwrap_or_default());
    let created_at = Instant::now();
    let start = Mark {
        secs: 0.0,
        cpu: cpu(),
    };
    let mark = || Mark {
        secs: created_at.elapsed().as_secs_f64(),
        cpu: cpu(),
    };
    let creates: Vec<_> = (0..args.tasks)
        .map(|index| {
            let endpoint = endpoint.clone();
            tokio::spawn(async move {
                let body = json!({"prompt": prompt(index)});
                let response = endpoint
                    .request("POST", "/api/tasks", Some(&body), REQUEST_LIMIT)
                    .await?;
                let task = response.ok_json()?;
                Ok::<_, std::io::Error>((index, task["id"].as_str().unwrap_or("").to_owned()))
            })
        })
        .collect();
    let mut task_ids: BTreeMap<usize, String> = BTreeMap::new();
    for create in creates {
        match create.await {
            Ok(Ok((index, id))) if !id.is_empty() => {
                task_ids.insert(index, id);
            }
            Ok(Ok((index, _))) => violations.push(format!("task {index}: created without an id")),
            Ok(Err(error)) => violations.push(format!("create a task: {error}")),
            Err(error) => violations.push(format!("create a task: {error}")),
        }
    }
    if task_ids.len() != args.tasks {
        return Err(std::io::Error::other("not every task was created"));
    }
    let writers = args.tasks.div_ceil(2);
    let created = mark();

    // Wait for every writer to stop for approval and every reader to finish.
    let pending = loop {
        let pending = endpoint
            .get_json("/api/approvals?state=pending&limit=1000", REQUEST_LIMIT)
            .await?;
        let pending: Vec<String> = pending["approvals"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|card| card["id"].as_str().map(str::to_owned))
            .collect();
        let failed = count(endpoint, "failed").await? + count(endpoint, "timed_out").await?;
        if failed > 0 {
            return Err(std::io::Error::other(format!(
                "{failed} task(s) failed or timed out before approval (see GET /api/tasks?state=failed)"
            )));
        }
        let completed = count(endpoint, "completed").await?;
        if pending.len() == writers && completed == args.tasks - writers {
            break pending;
        }
        if pending.len() > writers {
            violations.push(format!(
                "{} pending approvals for {writers} writing tasks",
                pending.len()
            ));
            break pending;
        }
        if Instant::now() >= deadline {
            return Err(std::io::Error::other(format!(
                "deadline: {} of {writers} approvals pending, {completed} tasks completed",
                pending.len()
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };

    let waiting = mark();
    // Two resolves per approval, all released at the same moment; with
    // --resolve-concurrency at most that many in flight (each one's latency is timed from
    // its own start, not from the release).
    let barrier = Arc::new(Barrier::new(pending.len() * 2));
    let in_flight = Arc::new(Semaphore::new(match args.resolve_concurrency {
        0 => Semaphore::MAX_PERMITS,
        limit => limit,
    }));
    let resolves: Vec<_> = pending
        .iter()
        .flat_map(|id| [id.clone(), id.clone()])
        .map(|id| {
            let endpoint = endpoint.clone();
            let barrier = Arc::clone(&barrier);
            let in_flight = Arc::clone(&in_flight);
            tokio::spawn(async move {
                barrier.wait().await;
                let _permit = in_flight.acquire().await;
                let begun = Instant::now();
                let response = endpoint
                    .request(
                        "POST",
                        &format!("/api/approvals/{id}/resolve"),
                        Some(&json!({"decision": "approve"})),
                        REQUEST_LIMIT,
                    )
                    .await;
                (id, response, begun.elapsed())
            })
        })
        .collect();
    let mut outcomes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut latencies = Vec::new();
    for resolve in resolves {
        let (id, response, elapsed) = resolve
            .await
            .map_err(|error| std::io::Error::other(format!("a resolve task failed: {error}")))?;
        latencies.push(elapsed);
        let outcome = match response {
            Ok(response) if (200..300).contains(&response.status) => "2xx".to_owned(),
            Ok(response) if response.status == 409 => {
                let code = response.json().ok();
                let code = code
                    .as_ref()
                    .and_then(|body| body["error"]["code"].as_str())
                    .unwrap_or("?");
                format!("409 {code}")
            }
            Ok(response) => format!(
                "{}: {}",
                response.status,
                String::from_utf8_lossy(&response.body)
            ),
            Err(error) => format!("error: {error}"),
        };
        outcomes.entry(id).or_default().push(outcome);
    }
    latencies.sort();
    let resolved = mark();
    for (id, mut got) in outcomes {
        got.sort();
        if got != ["2xx", "409 already_resolved"] {
            violations.push(format!(
                "approval {id}: the two concurrent resolves got {got:?}, expected one 2xx and one 409 already_resolved"
            ));
        }
    }

    // Every task finishes.
    loop {
        let completed = count(endpoint, "completed").await?;
        if completed == args.tasks {
            break;
        }
        let stuck = count(endpoint, "failed").await?
            + count(endpoint, "timed_out").await?
            + count(endpoint, "interrupted").await?;
        if stuck > 0 || Instant::now() >= deadline {
            return Err(std::io::Error::other(format!(
                "{completed} of {} tasks completed; {stuck} failed, timed out or interrupted",
                args.tasks
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let completed = mark();
    let tasks_secs = completed.secs;

    check_executions(endpoint, &pending, root, args.tasks, violations).await?;
    let (events, reconnects) =
        check_events(endpoint, &task_ids, &clients, deadline, violations).await?;
    let _ = stop.send(true);
    Ok(Figures {
        tasks_secs,
        marks: [start, created, waiting, resolved, completed],
        approvals: pending.len(),
        latencies,
        events,
        reconnects,
    })
}

/// Where the time and the CPU went, phase by phase.
fn print_phases(marks: &[Mark; 5], tasks: usize) {
    let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    println!(
        "phase                     ends at   wall   serve CPU  load CPU  idle ({cores} cores)"
    );
    let names = [
        "create every task",
        "until writers wait",
        "resolve (2 per approval)",
        "until all completed",
    ];
    for (name, pair) in names.iter().zip(marks.windows(2)) {
        let [from, to] = [pair[0], pair[1]];
        let wall = to.secs - from.secs;
        let [serve, load] = [0, 1].map(|at| (to.cpu[at] - from.cpu[at]).as_secs_f64());
        let idle = (1.0 - (serve + load) / (wall * cores).max(0.001)).max(0.0) * 100.0;
        println!(
            "{name:<25} {:>6.2} s {wall:>5.2} s {serve:>8.2} s {load:>7.2} s  {idle:>4.0} %",
            to.secs
        );
    }
    let [first, last] = [marks[0], marks[4]];
    let serve = (last.cpu[0] - first.cpu[0]).as_secs_f64();
    println!(
        "serve CPU per task: {:.2} ms",
        serve * 1000.0 / tasks.max(1) as f64
    );
}

/// `--resolve-concurrency` for people: 0 is "all".
fn in_flight(limit: usize) -> String {
    match limit {
        0 => "all".to_owned(),
        limit => limit.to_string(),
    }
}

/// Tasks in `state` (at most 1000).
async fn count(endpoint: &Endpoint, state: &str) -> std::io::Result<usize> {
    let listed = endpoint
        .get_json(
            &format!("/api/tasks?state={state}&limit=1000"),
            REQUEST_LIMIT,
        )
        .await?;
    Ok(listed["tasks"].as_array().map_or(0, Vec::len))
}
