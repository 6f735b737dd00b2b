//! `team-soak`: the multi-process team test of issue 15 (see `docs/testing.md`).
//!
//! Up to three processes (`serve` A, `serve` B, `worker` C) share one store — a fresh
//! PostgreSQL schema with `--store-url`, else one SQLite file — in team mode, each host
//! mapping the same workspace names (`ws0`…`ws3`) to folders of its own. Every process's
//! model is one loopback OpenAI-compatible mock that plays a short conversation per task:
//! reads, then (for `--approval-percent` of the tasks) a `write_file` of a unique file
//! that stops for approval. This binary is the fourth process: it creates the tasks as a
//! member through both serves, follows the global event feed over SSE, resolves every
//! approval from two approvers at once (one per serve; exactly one may win), retries
//! interrupted tasks, and with `--kill` SIGKILLs the worker once ~30 % of the tasks
//! ended, then serve B right after an approved write once ~60 % ended (with two
//! processes, B at ~30 %; `serve_kill.rs`). The end checks (`verify.rs`) cross-check tasks, the feed, the audit and
//! the host folders; any violation exits 1.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line test driver reports on the terminal"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod serve_kill;
mod verify;

use clap::Parser;
use pp_test_support::http::{Endpoint, Response};
use pp_test_support::mock::{MockServer, Recorded, Reply};
use pp_test_support::process::{Pocketpilot, Rng, Serve, default_bin};
use serde_json::{Value, json};
use tokio::sync::{Semaphore, watch};

/// Multi-process team test: serves and a worker on one store.
#[derive(Debug, Parser)]
struct Args {
    /// Scripted tasks (at most 1000).
    #[arg(long, default_value_t = 1000)]
    tasks: usize,
    /// Processes: 1 = `serve` A; 2 = A + `serve` B; 3 = A + B + `worker` C.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=3))]
    processes: u8,
    /// Percent of the tasks that write a file and so stop for approval.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u8).range(0..=100))]
    approval_percent: u8,
    /// SIGKILL the worker once ~30 % of the tasks ended, then serve B right after an
    /// approved write (B ran it) once ~60 % ended (with two processes: B at ~30 %); no
    /// restart.
    #[arg(long)]
    kill: bool,
    /// A `postgres://` admin URL: the run gets a fresh schema there (dropped at the end
    /// unless `--keep`). Without it every process shares one SQLite file.
    #[arg(long, value_name = "URL")]
    store_url: Option<String>,
    /// The `pocketpilot` binary (default: target/<this build's profile>/pocketpilot).
    #[arg(long, value_name = "PATH")]
    bin: Option<PathBuf>,
    /// Give up (and fail) after this many seconds.
    #[arg(long, default_value_t = 900)]
    max_secs: u64,
    /// Seed for the file contents and the order of the two racing resolves (printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Keep the temporary directory and the schema (both are kept when a check fails).
    #[arg(long)]
    keep: bool,
    /// How long the mock model takes to answer each call, in milliseconds (a real model
    /// takes hundreds): throughput is then bound by latency, not by the CPU.
    #[arg(long, default_value_t = 0)]
    model_latency_ms: u64,
    /// `[tasks] workers` of each process.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    workers: u16,
}

/// Workspace names every host maps to a folder of its own.
const WORKSPACES: usize = 4;
/// Host letters: A and B serve, C is the worker.
const HOSTS: [&str; 3] = ["A", "B", "C"];
pub(crate) const REQUEST_LIMIT: Duration = Duration::from_secs(60);
const CLI_LIMIT: Duration = Duration::from_secs(120);
/// Tasks created at the same time.
const CREATE_CONCURRENCY: usize = 8;

/// The team's shared folder for workspace `name`, which every host mounts at its own path.
pub(crate) fn shared_workspace(root: &Path, name: &str) -> PathBuf {
    root.join("shared").join(name)
}

pub(crate) fn workspace_name(index: usize) -> String {
    format!("ws{}", index % WORKSPACES)
}

/// Whether task `index` writes (spread evenly: exactly ⌊N·P/100⌋ of N tasks).
pub(crate) fn writes(index: usize, percent: u8) -> bool {
    let percent = usize::from(percent);
    (index + 1) * percent / 100 > index * percent / 100
}

fn prompt(index: usize, writes: bool) -> String {
    let kind = if writes { "write" } else { "read" };
    format!("team task {index} {kind}")
}

/// The task number and whether it writes, from the prompt `team task N write|read`.
fn parse_prompt(prompt: &str) -> Option<(usize, bool)> {
    let (_, rest) = prompt.split_once("team task ")?;
    let mut words = rest.split_whitespace();
    let number = words.next()?.parse().ok()?;
    Some((number, words.next() == Some("write")))
}

pub(crate) fn output_name(index: usize) -> String {
    format!("task-{index}.txt")
}

pub(crate) fn output_content(index: usize, seed: u64) -> String {
    format!("written once by team task {index} (run {seed:x})\n")
}

/// The mock's reply: step = the number of assistant turns already in the conversation,
/// so a task resumed by another process continues where it stopped.
fn conversation(request: &Recorded, seed: u64) -> Reply {
    let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
        return Reply::json(400, &json!({"error": {"message": "body is not JSON"}}));
    };
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let task = messages
        .iter()
        .filter(|message| message["role"] == "user")
        .find_map(|message| message["content"].as_str().and_then(parse_prompt));
    let Some((index, writes)) = task else {
        return Reply::json(
            400,
            &json!({"error": {"message": "not a team-soak prompt"}}),
        );
    };
    let step = messages
        .iter()
        .filter(|message| message["role"] == "assistant")
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
        2 if writes => (
            call(
                "write_file",
                json!({"path": output_name(index), "content": output_content(index, seed)}),
            ),
            "tool_calls",
        ),
        _ => (
            json!({"role": "assistant", "content": format!("team task {index} done")}),
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

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(args).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("team-soak: error: {error}");
            ExitCode::from(2)
        }
    }
}

/// The database every process shares.
#[derive(Debug)]
enum Backend {
    Sqlite(PathBuf),
    /// The admin URL, the schema of this run, and the URL the processes get.
    Postgres {
        admin: String,
        schema: String,
        url: String,
    },
}

impl Backend {
    fn name(&self) -> &'static str {
        match self {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres { .. } => "postgres",
        }
    }

    fn url(&self) -> String {
        match self {
            Backend::Sqlite(path) => format!("sqlite://{}", path.display()),
            Backend::Postgres { url, .. } => url.clone(),
        }
    }
}

/// Runs `psql` on the admin URL (the binary needs no PostgreSQL client of its own).
async fn psql(admin: &str, sql: &str) -> std::io::Result<()> {
    let output = tokio::process::Command::new("psql")
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", admin, "-c", sql])
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|error| std::io::Error::other(format!("psql (PostgreSQL's client): {error}")))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "psql `{sql}`: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}

/// `admin` with `options=-csearch_path=<schema>` added to its query string.
fn with_search_path(admin: &str, schema: &str) -> String {
    let separator = if admin.contains('?') { '&' } else { '?' };
    format!("{admin}{separator}options=-csearch_path%3D{schema}")
}

/// One host: its `pocketpilot` (home, config, log) and its folders.
#[derive(Debug, Clone)]
pub(crate) struct Host {
    pub(crate) pocketpilot: Pocketpilot,
    pub(crate) root: PathBuf,
}

/// The soak's team key (64 hex characters; a test key, not a secret).
const TEAM_KEY: &str = "5e1f0c3a9b7d2e4f6a8c0b1d3e5f7a9c2b4d6e8f0a1c3e5b7d9f1a2c4e6b8d0f";

/// Writes a host's config: the mock model, team mode, the shared store, its folders.
#[expect(
    clippy::disallowed_methods,
    reason = "the team soak builds its own temporary tree"
)]
fn setup_host(
    root: &Path,
    name: &'static str,
    bin: &Path,
    model_url: &str,
    store_url: &str,
    workers: u16,
) -> std::io::Result<Host> {
    let host_root = root.join(format!("host-{name}"));
    std::fs::create_dir_all(&host_root)?;
    // The team key every serve seals channel secrets with (docs/team.md): one key, a
    // private copy on each host.
    let key_file = host_root.join("team.key");
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&key_file)?;
        std::io::Write::write_all(&mut file, TEAM_KEY.as_bytes())?;
    }
    let mut config = format!(
        "[model]\nprovider = \"openai\"\nmodel = \"mock\"\nbase_url = {base}\nstream = false\n\
         timeout_secs = 300\nmax_retries = 2\n\n\
         [tasks]\nworkers = {workers}\nlease_secs = 3\ntimeout_secs = 3600\n\n\
         [team]\nenabled = true\nkey_file = {key}\n\n\
         [store]\nurl = {store}\n\n\
         [discovery]\nenabled = false\n",
        base = serde_json::to_string(&format!("{model_url}/v1"))?,
        key = serde_json::to_string(&key_file.to_string_lossy())?,
        store = serde_json::to_string(store_url)?,
    );
    for index in 0..WORKSPACES {
        let workspace = workspace_name(index);
        // One name means the same files on every host (docs/team.md): each host reaches
        // the team's shared folder through a path of its own.
        let shared = shared_workspace(root, &workspace);
        if !shared.exists() {
            std::fs::create_dir_all(&shared)?;
            std::fs::write(shared.join("seed.txt"), format!("seed of {workspace}\n"))?;
        }
        let path = host_root.join(&workspace);
        std::os::unix::fs::symlink(&shared, &path)?;
        config.push_str(&format!(
            "\n[[workspace]]\nname = \"{workspace}\"\npath = {}\ndefault = {}\n",
            serde_json::to_string(&path.to_string_lossy())?,
            index == 0
        ));
    }
    let config_file = host_root.join("team.toml");
    std::fs::write(&config_file, config)?;
    Ok(Host {
        pocketpilot: Pocketpilot {
            bin: bin.to_path_buf(),
            home: host_root.join("home"),
            config: config_file,
            log: root.join(format!("{name}.log")),
        },
        root: host_root,
    })
}

/// The team's users: the tokens this binary acts with.
#[derive(Debug, Clone)]
pub(crate) struct Tokens {
    /// Owner: follows the feed, reads the audit, retries.
    pub(crate) admin: String,
    /// Approver racing through A.
    pub(crate) alice: String,
    /// Approver racing through B.
    pub(crate) bob: String,
    /// Member: creates the tasks.
    pub(crate) carol: String,
}

async fn cli_ok(host: &Host, args: &[&str]) -> std::io::Result<Value> {
    let output = host.pocketpilot.cli(args, CLI_LIMIT).await?;
    if output.code != Some(0) {
        return Err(std::io::Error::other(format!(
            "pocketpilot {}: exit {:?}: {}",
            args.join(" "),
            output.code,
            output.stderr.trim()
        )));
    }
    Ok(output.json().unwrap_or(Value::Null))
}

/// Adds the users with the CLI on the shared store (through host A's config).
async fn add_users(host: &Host) -> std::io::Result<Tokens> {
    let mut tokens = BTreeMap::new();
    for (name, role) in [
        ("admin", "owner"),
        ("alice", "approver"),
        ("bob", "approver"),
        ("carol", "member"),
    ] {
        let added = cli_ok(host, &["users", "add", name, "--role", role, "--json"]).await?;
        let token = added["token"]
            .as_str()
            .ok_or_else(|| std::io::Error::other(format!("users add {name}: no token: {added}")))?;
        tokens.insert(name, token.to_owned());
        if role != "owner" {
            for index in 0..WORKSPACES {
                cli_ok(host, &["users", "grant", name, &workspace_name(index)]).await?;
            }
        }
    }
    let take = |name: &str| tokens.get(name).cloned().unwrap_or_default();
    Ok(Tokens {
        admin: take("admin"),
        alice: take("alice"),
        bob: take("bob"),
        carol: take("carol"),
    })
}

/// A running process: `serve` (with its port) or `worker`.
#[derive(Debug)]
enum Process {
    Serve(Serve),
    Worker(Worker),
}

/// A `pocketpilot worker` child; SIGKILLed when dropped.
#[derive(Debug)]
struct Worker(Child);

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Process {
    fn port(&self) -> Option<u16> {
        match self {
            Process::Serve(serve) => Some(serve.endpoint.port),
            Process::Worker(_) => None,
        }
    }

    fn alive(&mut self) -> bool {
        match self {
            Process::Serve(serve) => serve.alive(),
            Process::Worker(worker) => matches!(worker.0.try_wait(), Ok(None)),
        }
    }

    /// SIGKILL, then reap.
    fn kill(self) -> std::io::Result<()> {
        match self {
            Process::Serve(serve) => serve.kill(),
            Process::Worker(mut worker) => {
                worker.0.kill()?;
                worker.0.wait()?;
                Ok(())
            }
        }
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "the worker's log is in the team soak's own temporary tree"
)]
async fn start(host: &Host, worker: bool) -> std::io::Result<Process> {
    let pocketpilot = host.pocketpilot.clone();
    tokio::task::spawn_blocking(move || {
        if worker {
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&pocketpilot.log)?;
            let child = pocketpilot
                .command(&["worker"])
                .stdin(Stdio::null())
                .stdout(Stdio::from(log.try_clone()?))
                .stderr(Stdio::from(log))
                .spawn()?;
            Ok(Process::Worker(Worker(child)))
        } else {
            pocketpilot
                .serve(&[], Duration::from_secs(60))
                .map(Process::Serve)
        }
    })
    .await
    .map_err(|error| std::io::Error::other(format!("start a process: {error}")))?
}

/// What the driver, the resolvers and the follower record.
#[derive(Debug, Default)]
pub(crate) struct Record {
    /// Task id → task number.
    pub(crate) tasks: BTreeMap<String, usize>,
    /// Approval id → the outcomes of its two racing resolves (`2xx`, `409 code`, …).
    pub(crate) races: BTreeMap<String, Vec<String>>,
    /// Seqs the SSE follower saw, in order.
    pub(crate) seen: Vec<u64>,
    pub(crate) reconnects: usize,
    pub(crate) sse_errors: Vec<String>,
    pub(crate) retries: usize,
    /// Tasks running when the victim was killed (`None`: no kill).
    pub(crate) running_at_kill: Option<usize>,
    /// The serve-kill round, once B was killed right after an approved write.
    pub(crate) serve_kill: Option<serve_kill::ServeKill>,
    pub(crate) notes: Vec<String>,
}

pub(crate) type Shared = Arc<Mutex<Record>>;

pub(crate) fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Record> {
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn run(args: Args) -> std::io::Result<bool> {
    if args.tasks == 0 || args.tasks > 1000 {
        return Err(std::io::Error::other("--tasks must be 1..=1000"));
    }
    if args.kill && args.processes < 2 {
        return Err(std::io::Error::other(
            "--kill needs --processes 2 or 3 (the victim is B or the worker C)",
        ));
    }
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let bin = args.bin.clone().unwrap_or_else(|| default_bin(profile));
    if !bin.is_file() {
        return Err(std::io::Error::other(format!(
            "{} not found: build it (cargo build -p pp-cli) or pass --bin",
            bin.display()
        )));
    }
    let seed = args.seed.unwrap_or_else(Rng::clock_seed);
    let temp = tempfile::Builder::new().prefix("pp-team-soak-").tempdir()?;
    let root = temp.path().to_path_buf();
    let backend = match &args.store_url {
        Some(admin) => {
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let schema = format!(
                "team_soak_{}_{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed) + seed % 1_000_000
            );
            psql(admin, &format!("CREATE SCHEMA {schema}")).await?;
            Backend::Postgres {
                url: with_search_path(admin, &schema),
                admin: admin.clone(),
                schema,
            }
        }
        None => Backend::Sqlite(root.join("team.db")),
    };
    let outcome = run_in(&args, &bin, seed, &root, &backend).await;
    let passed = matches!(outcome, Ok(true));
    let keep = args.keep || !passed;
    if let Backend::Postgres { admin, schema, .. } = &backend {
        if keep {
            println!("kept schema {schema}");
        } else if let Err(error) = psql(admin, &format!("DROP SCHEMA {schema} CASCADE")).await {
            eprintln!("team-soak: could not drop schema {schema}: {error}");
        }
    }
    if keep {
        println!("kept {}", temp.keep().display());
    }
    outcome
}

async fn run_in(
    args: &Args,
    bin: &Path,
    seed: u64,
    root: &Path,
    backend: &Backend,
) -> std::io::Result<bool> {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.max_secs);
    let latency = Duration::from_millis(args.model_latency_ms);
    let mock =
        MockServer::start_with(move |request| conversation(request, seed).delayed(latency)).await;
    let store_url = backend.url();
    let mut hosts = Vec::new();
    for name in HOSTS.iter().take(usize::from(args.processes)) {
        hosts.push(setup_host(
            root,
            name,
            bin,
            &mock.url(),
            &store_url,
            args.workers,
        )?);
    }
    let writers = (0..args.tasks)
        .filter(|index| writes(*index, args.approval_percent))
        .count();
    println!(
        "team-soak: {} tasks ({writers} stop for approval), {} process(es) ({}), {} workers \
         each, model latency {} ms, {} store, kill {}, seed {seed}, binary {}, data in {}",
        args.tasks,
        args.processes,
        ["serve A", "serve B", "worker C"][..usize::from(args.processes)].join(", "),
        args.workers,
        args.model_latency_ms,
        backend.name(),
        if args.kill { "yes" } else { "no" },
        bin.display(),
        root.display()
    );
    let tokens = add_users(&hosts[0]).await?;
    let mut processes = Vec::new();
    for (index, host) in hosts.iter().enumerate() {
        processes.push(Some(start(host, index == 2).await?));
    }
    let port = |index: usize| processes.get(index).and_then(|p| p.as_ref()?.port());
    let port_a = port(0).ok_or_else(|| std::io::Error::other("serve A has no port"))?;
    let port_b = port(1);
    let endpoint = |port: u16, token: &str| Endpoint {
        port,
        token: token.to_owned(),
    };
    let admin = endpoint(port_a, &tokens.admin);
    let creators: Vec<Endpoint> = [Some(port_a), port_b]
        .into_iter()
        .flatten()
        .map(|port| endpoint(port, &tokens.carol))
        .collect();
    let racers = [
        endpoint(port_a, &tokens.alice),
        endpoint(port_b.unwrap_or(port_a), &tokens.bob),
    ];
    let b_alive = Arc::new(AtomicBool::new(port_b.is_some()));
    let shared: Shared = Arc::default();

    // The follower connects before the first task exists and reads from seq 0.
    let (stop, stopped) = watch::channel(false);
    let (stop_follower, follower_stopped) = watch::channel(false);
    let opened = Arc::new(Semaphore::new(0));
    let follower = tokio::spawn(follow(
        admin.clone(),
        Arc::clone(&shared),
        Arc::clone(&opened),
        follower_stopped,
    ));
    match tokio::time::timeout(Duration::from_secs(30), opened.acquire()).await {
        Ok(Ok(permit)) => permit.forget(),
        _ => return Err(std::io::Error::other("the SSE follower did not connect")),
    }

    let first_create = Instant::now();
    let first_create_ms = pp_types::Timestamp::now().as_millis();
    let creating = tokio::spawn(create_tasks(
        creators,
        Arc::clone(&b_alive),
        Arc::clone(&shared),
        args.tasks,
        args.approval_percent,
    ));
    let (arm, armed_with) = tokio::sync::oneshot::channel();
    let resolving = tokio::spawn(resolve_loop(
        racers,
        admin.clone(),
        Arc::clone(&b_alive),
        Arc::clone(&shared),
        Rng::new(seed ^ 0x7ea4),
        stopped,
        (armed_with, root.to_path_buf()),
    ));
    let mut arm = Some(arm);
    // The serve-kill round: at ~60 % with a worker (killed at ~30 %), else at ~30 %.
    let serve_round_tenths = if args.processes == 3 { 6 } else { 3 };

    // Drive: watch the states, retry interrupted tasks, kill the worker at ~30 % and
    // hand B to the resolver for the serve-kill round.
    let victim = 2;
    let mut violations = Vec::new();
    let mut killed = false;
    let ended_at = loop {
        if Instant::now() >= deadline {
            violations.push("the deadline passed before every task completed".to_owned());
            break None;
        }
        let states = match task_states(&admin).await {
            Ok(states) => states,
            Err(error) => {
                lock(&shared).notes.push(format!("list tasks: {error}"));
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let count = |wanted: &str| states.values().filter(|state| *state == wanted).count();
        let completed = count("completed");
        let bad: Vec<String> = states
            .iter()
            .filter(|(_, state)| matches!(state.as_str(), "failed" | "cancelled" | "timed_out"))
            .map(|(id, state)| format!("{id} {state}"))
            .collect();
        if !bad.is_empty() {
            violations.push(format!(
                "{} task(s) ended without completing: {}",
                bad.len(),
                bad.iter().take(10).cloned().collect::<Vec<_>>().join(", ")
            ));
            break None;
        }
        if args.kill
            && args.processes > 1
            && completed * 10 >= args.tasks * serve_round_tenths
            && let (Some(arm), Some(serve_b)) =
                (arm.take(), processes.get_mut(1).and_then(Option::take))
        {
            println!(
                "serve-kill round armed with {completed} of {} tasks completed",
                args.tasks
            );
            let _ = arm.send(serve_b);
        }
        if args.kill && !killed && completed * 10 >= args.tasks * 3 && args.processes == 3 {
            let running = count("running");
            if let Some(process) = processes.get_mut(victim).and_then(Option::take) {
                if victim == 1 {
                    b_alive.store(false, Ordering::SeqCst);
                }
                let mut process = process;
                if !process.alive() {
                    violations.push(format!(
                        "{} exited on its own before the kill (see {}.log)",
                        HOSTS[victim], HOSTS[victim]
                    ));
                }
                process.kill()?;
                println!(
                    "killed {} (SIGKILL) with {completed} of {} tasks completed, {running} running",
                    HOSTS[victim], args.tasks
                );
            }
            lock(&shared).running_at_kill = Some(running);
            killed = true;
        }
        for (id, state) in &states {
            if state == "interrupted" {
                let answer = admin
                    .request(
                        "POST",
                        &format!("/api/tasks/{id}/retry"),
                        Some(&json!({})),
                        REQUEST_LIMIT,
                    )
                    .await;
                match answer {
                    Ok(response) if (200..300).contains(&response.status) => {
                        lock(&shared).retries += 1;
                    }
                    Ok(response) => lock(&shared).notes.push(format!(
                        "retry {id}: {} {}",
                        response.status,
                        String::from_utf8_lossy(&response.body)
                    )),
                    Err(error) => lock(&shared).notes.push(format!("retry {id}: {error}")),
                }
            }
        }
        let created = lock(&shared).tasks.len();
        if created == args.tasks && states.len() == args.tasks && completed == args.tasks {
            break Some(Instant::now());
        }
        for (index, process) in processes.iter_mut().enumerate() {
            if let Some(process) = process
                && !process.alive()
            {
                return Err(std::io::Error::other(format!(
                    "{} exited on its own (see {}.log)",
                    HOSTS[index], HOSTS[index]
                )));
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    match creating.await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => violations.push(format!("creating the tasks: {error}")),
        Err(error) => violations.push(format!("the creator failed: {error}")),
    }
    let _ = stop.send(true);
    let _ = resolving.await;
    let kills = usize::from(killed) + usize::from(lock(&shared).serve_kill.is_some());
    killed = kills > 0;
    if args.kill && args.processes > 1 && lock(&shared).serve_kill.is_none() {
        violations.push("the serve-kill round never killed B".to_owned());
    }

    let report = verify::verify(
        &verify::Context {
            admin: &admin,
            hosts: &hosts,
            shared: &shared,
            tasks: args.tasks,
            approval_percent: args.approval_percent,
            seed,
            killed,
            deadline,
        },
        &mut violations,
    )
    .await;
    let _ = stop_follower.send(true);
    let _ = follower.await;
    let report = report?;
    drop(processes);

    let record = lock(&shared);
    for note in record.notes.iter().take(20) {
        eprintln!("note: {note}");
    }
    // From the first create to the last stored `task_completed` (the store's clock is
    // this machine's); the driver's own observation when the feed has none.
    let secs = ended_at.map(|end| match report.last_completed_ms {
        Some(last) if last > first_create_ms => (last - first_create_ms) as f64 / 1000.0,
        _ => end.duration_since(first_create).as_secs_f64(),
    });
    println!(
        "races: {} approvals resolved by two approvers at once; retries: {}; SSE reconnects: {}",
        record.races.len(),
        record.retries,
        record.reconnects
    );
    for line in &report.lines {
        println!("{line}");
    }
    println!(
        "team-soak: {} store, {} process(es), {} tasks ({writers} approvals){}: {}; \
         wall {:.1} s",
        backend.name(),
        args.processes,
        args.tasks,
        match kills {
            0 => String::new(),
            1 => ", 1 killed".to_owned(),
            n => format!(", {n} killed"),
        },
        match secs {
            Some(secs) => format!(
                "{:.1} tasks/s ({} tasks in {secs:.1} s, first create to last end)",
                args.tasks as f64 / secs.max(0.001),
                args.tasks
            ),
            None => "did not finish".to_owned(),
        },
        started.elapsed().as_secs_f64()
    );
    drop(record);
    if violations.is_empty() {
        println!("team-soak: OK");
        Ok(true)
    } else {
        for violation in violations.iter().take(50) {
            eprintln!("VIOLATION: {violation}");
        }
        eprintln!(
            "team-soak: FAILED with {} violation(s) (seed {seed})",
            violations.len()
        );
        Ok(false)
    }
}

/// Every task's state (id → state); at most 1000 tasks.
async fn task_states(admin: &Endpoint) -> std::io::Result<BTreeMap<String, String>> {
    let listed = admin
        .get_json("/api/tasks?limit=1000", REQUEST_LIMIT)
        .await?;
    Ok(listed["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|task| {
            Some((
                task["id"].as_str()?.to_owned(),
                task["state"].as_str()?.to_owned(),
            ))
        })
        .collect())
}

/// Creates the tasks as the member, alternating between the serves (B only while alive).
async fn create_tasks(
    creators: Vec<Endpoint>,
    b_alive: Arc<AtomicBool>,
    shared: Shared,
    tasks: usize,
    percent: u8,
) -> std::io::Result<()> {
    let limit = Arc::new(Semaphore::new(CREATE_CONCURRENCY));
    let mut handles = Vec::new();
    for index in 0..tasks {
        let permit = Arc::clone(&limit)
            .acquire_owned()
            .await
            .map_err(|error| std::io::Error::other(error.to_string()))?;
        let on_b = index % 2 == 1 && creators.len() > 1 && b_alive.load(Ordering::SeqCst);
        let creator = creators[usize::from(on_b)].clone();
        let shared = Arc::clone(&shared);
        handles.push(tokio::spawn(async move {
            let _permit = permit;
            let body = json!({
                "prompt": prompt(index, writes(index, percent)),
                "workspace": workspace_name(index),
            });
            let task = creator
                .request("POST", "/api/tasks", Some(&body), REQUEST_LIMIT)
                .await?
                .ok_json()?;
            let id = task["id"]
                .as_str()
                .ok_or_else(|| std::io::Error::other(format!("created without an id: {task}")))?;
            lock(&shared).tasks.insert(id.to_owned(), index);
            Ok::<_, std::io::Error>(())
        }));
    }
    for handle in handles {
        handle
            .await
            .map_err(|error| std::io::Error::other(error.to_string()))??;
    }
    Ok(())
}

fn outcome(response: std::io::Result<Response>) -> String {
    match response {
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
    }
}

/// Lists pending approvals and resolves each new one twice at the same moment: alice
/// through A and bob through B (through A once B is gone), in a random order.
async fn resolve_loop(
    racers: [Endpoint; 2],
    admin: Endpoint,
    b_alive: Arc<AtomicBool>,
    shared: Shared,
    mut rng: Rng,
    stop: watch::Receiver<bool>,
    (mut armed_with, root): (tokio::sync::oneshot::Receiver<Process>, PathBuf),
) {
    let mut sent: BTreeSet<String> = BTreeSet::new();
    let mut running = Vec::new();
    // Serve B once the driver arms the serve-kill round, and since when.
    let mut serve_b: Option<(Process, Instant)> = None;
    while !*stop.borrow() {
        if let Ok(process) = armed_with.try_recv() {
            serve_b = Some((process, Instant::now()));
        }
        let pending = match admin
            .get_json("/api/approvals?state=pending&limit=1000", REQUEST_LIMIT)
            .await
        {
            Ok(pending) => pending,
            Err(error) => {
                lock(&shared).notes.push(format!("list approvals: {error}"));
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        if let Some((process, since)) = serve_b.take() {
            match serve_kill::pick(&pending, &sent) {
                Some((id, task)) => {
                    let (id, task) = (id.to_owned(), task.to_owned());
                    sent.insert(id.clone());
                    b_alive.store(false, Ordering::SeqCst);
                    serve_kill::approve_then_kill(
                        &racers[1], &admin, process, &id, &task, &root, &shared,
                    )
                    .await;
                }
                // No write to approve for a while (few writers): kill B anyway.
                None if since.elapsed() > Duration::from_secs(30) => {
                    b_alive.store(false, Ordering::SeqCst);
                    let _ = process.kill();
                    lock(&shared).notes.push(
                        "serve-kill round: no write approval came; B killed without one".to_owned(),
                    );
                }
                None => serve_b = Some((process, since)),
            }
        }
        let ids: Vec<String> = pending["approvals"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|card| card["id"].as_str().map(str::to_owned))
            .filter(|id| !sent.contains(id))
            .collect();
        for id in ids {
            sent.insert(id.clone());
            let alice = racers[0].clone();
            let mut bob = racers[1].clone();
            if !b_alive.load(Ordering::SeqCst) {
                bob.port = alice.port;
            }
            let bob_first = rng.range(0, 2) == 1;
            let shared = Arc::clone(&shared);
            running.push(tokio::spawn(async move {
                let path = format!("/api/approvals/{id}/resolve");
                let body = json!({"decision": "approve"});
                let one = alice.request("POST", &path, Some(&body), REQUEST_LIMIT);
                let two = bob.request("POST", &path, Some(&body), REQUEST_LIMIT);
                let (first, second) = if bob_first {
                    let (b, a) = tokio::join!(two, one);
                    (a, b)
                } else {
                    tokio::join!(one, two)
                };
                lock(&shared)
                    .races
                    .insert(id, vec![outcome(first), outcome(second)]);
            }));
        }
        running.retain(|handle| !handle.is_finished());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for handle in running {
        let _ = handle.await;
    }
}

/// Follows `/api/events` from seq 0 until `stop`; reconnects with `Last-Event-ID`.
async fn follow(
    endpoint: Endpoint,
    shared: Shared,
    opened: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
) {
    let mut last: u64 = 0;
    let mut first = true;
    loop {
        let for_events = Arc::clone(&shared);
        let opened = Arc::clone(&opened);
        let was_first = first;
        let stream = endpoint.sse(
            "/api/events",
            Some(last),
            move || {
                if was_first {
                    opened.add_permits(1);
                }
            },
            |seq| {
                lock(&for_events).seen.push(seq);
                true
            },
        );
        let ended = tokio::select! {
            result = stream => result,
            _ = stop.changed() => return,
        };
        first = false;
        {
            let mut record = lock(&shared);
            if let Err(error) = ended {
                record.sse_errors.push(error.to_string());
            }
            record.reconnects += 1;
            last = record.seen.last().copied().unwrap_or(last);
        }
        if *stop.borrow() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writers_are_spread_and_counted_exactly() {
        let count = |n: usize, p: u8| (0..n).filter(|index| writes(*index, p)).count();
        assert_eq!(count(1000, 50), 500);
        assert_eq!(count(1000, 0), 0);
        assert_eq!(count(1000, 100), 1000);
        assert_eq!(count(10, 30), 3);
        assert!(writes(1, 50) && !writes(0, 50));
    }

    #[test]
    fn prompts_round_trip() {
        assert_eq!(parse_prompt(&prompt(17, true)), Some((17, true)));
        assert_eq!(parse_prompt(&prompt(3, false)), Some((3, false)));
        assert_eq!(parse_prompt("something else"), None);
    }
}
