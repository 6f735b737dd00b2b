//! `soak`: the kill -9 soak of `pocketpilot serve` (see `docs/testing.md`).
//!
//! Scripted tasks, each in its own workspace, write two files and stop for approval
//! before each write. A killer SIGKILLs `serve` at random moments and restarts it; a
//! driver creates tasks over the API, approves them with `pocketpilot approvals approve`
//! and retries interrupted tasks with `pocketpilot tasks retry`. At the end every task,
//! file, approval, audit row and event is cross-checked; any violation exits 1.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line test driver reports on the terminal"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod verify;

use clap::Parser;
use pp_test_support::http::Endpoint;
use pp_test_support::process::{Pocketpilot, Rng, Serve, default_bin};
use serde_json::{Value, json};

use crate::verify::verify;

/// Kill -9 soak of `pocketpilot serve`.
#[derive(Debug, Parser)]
struct Args {
    /// Scripted tasks (one workspace each; at most 1000).
    #[arg(long, default_value_t = 100)]
    tasks: usize,
    /// SIGKILLs of `serve` (each followed by a restart).
    #[arg(long, default_value_t = 50)]
    kills: usize,
    /// The `pocketpilot` binary (default: target/<this build's profile>/pocketpilot).
    #[arg(long, value_name = "PATH")]
    bin: Option<PathBuf>,
    /// Give up (and fail) after this many seconds.
    #[arg(long, default_value_t = 900)]
    max_secs: u64,
    /// Longest random wait, in milliseconds, between a start and the next kill.
    #[arg(long, default_value_t = 1500)]
    max_kill_ms: u64,
    /// Percent of approvals resolved through `POST /api/approvals/{id}/resolve`, so the
    /// server (not the CLI) runs the write and a kill can land in the middle of it; the
    /// rest go through `pocketpilot approvals approve`.
    #[arg(long, default_value_t = 50)]
    api_approvals: u64,
    /// Percent of `approvals approve` processes also SIGKILLed at a random moment.
    #[arg(long, default_value_t = 10)]
    cli_kills: u64,
    /// Seed for the random kill points and choices (printed; replays the choices).
    #[arg(long)]
    seed: Option<u64>,
    /// Keep the temporary directory (it is always kept when a check fails).
    #[arg(long)]
    keep: bool,
}

/// The two writes of every task, with exactly this content.
const FILES: [&str; 2] = ["a.txt", "b.txt"];

fn content(file: &str) -> String {
    // Large enough that a torn write would be visible.
    (0..500).fold(String::new(), |mut text, line| {
        text.push_str(&format!("{file} line {line:05} of the soak\n"));
        text
    })
}

fn script() -> Value {
    json!([
        {"content": "Looking first.", "tool_calls": [{"name": "list_files", "arguments": {"path": "."}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": FILES[0], "content": content(FILES[0])}}]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": FILES[0]}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": FILES[1], "content": content(FILES[1])}}]},
        {"content": "Done: both files written."}
    ])
}

fn workspace_name(index: usize) -> String {
    format!("w{index:04}")
}

/// What the driver and the killer share.
#[derive(Debug, Default)]
struct Shared {
    /// The live server, `None` while it is down.
    endpoint: Option<Endpoint>,
    kills: usize,
    killer_done: bool,
    /// Approvals `approvals approve` reported as decided (exit 0 or 3).
    approved: BTreeSet<String>,
    /// Unexpected CLI outcomes (not violations by themselves; the end checks decide).
    cli_notes: Vec<String>,
    retries: usize,
    request_errors: usize,
    /// Resolutions sent through the API, through the CLI, and CLI processes killed.
    api_resolves: usize,
    cli_resolves: usize,
    cli_killed: usize,
    /// Signalled when the driver has just sent approvals (the killer may aim at them).
    burst: Arc<tokio::sync::Notify>,
}

type SharedState = Arc<Mutex<Shared>>;

fn lock(shared: &SharedState) -> std::sync::MutexGuard<'_, Shared> {
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(args).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("soak: error: {error}");
            ExitCode::from(2)
        }
    }
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
    let seed = args.seed.unwrap_or_else(Rng::clock_seed);
    let temp = tempfile::Builder::new().prefix("pp-soak-").tempdir()?;
    let root = temp.path().to_path_buf();
    let pocketpilot = setup(&root, &bin, args.tasks)?;
    println!(
        "soak: {} tasks, {} kills, seed {seed}, binary {}, data in {}",
        args.tasks,
        args.kills,
        bin.display(),
        root.display()
    );

    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.max_secs);
    let shared: SharedState = Arc::default();
    let first = start_serve(&pocketpilot).await?;
    lock(&shared).endpoint = Some(first.endpoint.clone());

    let killer = tokio::spawn(killer(
        pocketpilot.clone(),
        first,
        Arc::clone(&shared),
        args.kills,
        args.max_kill_ms,
        Rng::new(seed),
        deadline,
    ));
    let drove = drive(
        &pocketpilot,
        &shared,
        &args,
        Rng::new(seed.rotate_left(17) ^ 0x5eed),
        deadline,
    )
    .await;
    let serve = killer
        .await
        .map_err(|error| std::io::Error::other(format!("the killer task failed: {error}")))??;
    let wall = started.elapsed();
    // One more (uncounted) restart, so the start-up sweep removes the temp files of
    // writers that were killed (the documented clean-up) before the workspaces are checked.
    serve.kill()?;
    let serve = start_serve(&pocketpilot).await?;

    let mut violations = Vec::new();
    if let Err(message) = drove {
        violations.push(message);
    }
    let summary = {
        let shared = lock(&shared);
        if shared.kills < args.kills {
            violations.push(format!(
                "only {} of {} kills happened before the deadline",
                shared.kills, args.kills
            ));
        }
        for note in &shared.cli_notes {
            eprintln!("note: {note}");
        }
        format!(
            "kills survived: {} of serve, {} of `approvals approve`; tasks: {}; retries: {}; \
             resolved via API {}, via CLI {}; requests refused while down: {}",
            shared.kills,
            shared.cli_killed,
            args.tasks,
            shared.retries,
            shared.api_resolves,
            shared.cli_resolves,
            shared.request_errors
        )
    };
    let approved = lock(&shared).approved.clone();
    let report = verify(&pocketpilot, &serve.endpoint, &root, args.tasks, &approved).await?;
    violations.extend(report.violations);
    drop(serve);

    println!("{summary}");
    println!("task states: {:?}", report.states);
    println!(
        "approvals: {} approved, {} stale, {} executions audited, {} files written again \
         after a crash",
        report.approved, report.stale, report.executions, report.reasked
    );
    println!("wall time: {:.1} s", wall.as_secs_f64());
    if violations.is_empty() {
        println!("soak: OK");
        if args.keep {
            println!("kept {}", temp.keep().display());
        }
        Ok(true)
    } else {
        for violation in &violations {
            eprintln!("VIOLATION: {violation}");
        }
        eprintln!(
            "soak: FAILED with {} violation(s) (seed {seed}); data kept in {}",
            violations.len(),
            temp.keep().display()
        );
        Ok(false)
    }
}

/// Writes the config (one workspace per task), the script and the folders.
#[expect(
    clippy::disallowed_methods,
    reason = "the soak builds its own temporary tree"
)]
fn setup(root: &Path, bin: &Path, tasks: usize) -> std::io::Result<Pocketpilot> {
    let config_dir = root.join("config");
    std::fs::create_dir_all(&config_dir)?;
    let mut config = String::from("[tasks]\nworkers = 2\nlease_secs = 2\n");
    for index in 0..tasks {
        let path = root.join("ws").join(workspace_name(index));
        std::fs::create_dir_all(&path)?;
        let quoted = serde_json::to_string(&path.to_string_lossy())?;
        config.push_str(&format!(
            "\n[[workspace]]\nname = \"{}\"\npath = {quoted}\ndefault = {}\n",
            workspace_name(index),
            index == 0
        ));
    }
    let config_file = config_dir.join("pocketpilot.toml");
    std::fs::write(&config_file, config)?;
    std::fs::write(root.join("script.json"), script().to_string())?;
    Ok(Pocketpilot {
        bin: bin.to_path_buf(),
        home: root.join("home"),
        config: config_file,
        log: root.join("serve.log"),
    })
}

async fn start_serve(pocketpilot: &Pocketpilot) -> std::io::Result<Serve> {
    let pocketpilot = pocketpilot.clone();
    tokio::task::spawn_blocking(move || {
        let script = pocketpilot
            .config
            .parent()
            .and_then(Path::parent)
            .map(|root| root.join("script.json"))
            .unwrap_or_default();
        let script = script.to_string_lossy().into_owned();
        pocketpilot.serve(&["--script", &script], Duration::from_secs(30))
    })
    .await
    .map_err(|error| std::io::Error::other(format!("start serve: {error}")))?
}

/// SIGKILLs and restarts `serve` `kills` times at random moments; returns the last one.
async fn killer(
    pocketpilot: Pocketpilot,
    mut serve: Serve,
    shared: SharedState,
    kills: usize,
    max_kill_ms: u64,
    mut rng: Rng,
    deadline: Instant,
) -> std::io::Result<Serve> {
    for _ in 0..kills {
        if Instant::now() >= deadline {
            break;
        }
        if rng.range(0, 2) == 0 {
            tokio::time::sleep(Duration::from_millis(rng.range(0, max_kill_ms))).await;
        } else {
            // Aim at work in progress: just after the driver sent approvals to the server.
            let burst = Arc::clone(&lock(&shared).burst);
            let waited = Duration::from_millis(max_kill_ms.max(1));
            let _ = tokio::time::timeout(waited, burst.notified()).await;
            tokio::time::sleep(Duration::from_millis(rng.range(0, 30))).await;
        }
        if !serve.alive() {
            return Err(std::io::Error::other(
                "serve exited on its own (see serve.log)",
            ));
        }
        lock(&shared).endpoint = None;
        serve.kill()?;
        lock(&shared).kills += 1;
        serve = start_serve(&pocketpilot).await?;
        lock(&shared).endpoint = Some(serve.endpoint.clone());
    }
    lock(&shared).killer_done = true;
    Ok(serve)
}

fn endpoint(shared: &SharedState) -> Option<Endpoint> {
    lock(shared).endpoint.clone()
}

const REQUEST_LIMIT: Duration = Duration::from_secs(20);
const CLI_LIMIT: Duration = Duration::from_secs(60);

/// Creates tasks in step with the kills, approves and retries until every task has ended.
async fn drive(
    pocketpilot: &Pocketpilot,
    shared: &SharedState,
    args: &Args,
    mut rng: Rng,
    deadline: Instant,
) -> Result<(), String> {
    let (tasks, kills) = (args.tasks, args.kills);
    loop {
        if Instant::now() >= deadline {
            return Err("the deadline passed before every task ended".into());
        }
        let (kills_done, killer_done) = {
            let shared = lock(shared);
            (shared.kills, shared.killer_done)
        };
        // Spread task creation over the kills so crashes land on work in progress.
        let allowed = if killer_done || kills == 0 {
            tasks
        } else {
            (tasks * (kills_done + 1)).div_ceil(kills + 1)
        };
        let listed = match endpoint(shared) {
            Some(endpoint) => create_tasks(&endpoint, allowed).await,
            None => None,
        };
        if listed.is_none() {
            lock(shared).request_errors += 1;
        }

        // Approvals and retries go through the CLI, which works whether or not a server runs.
        let pending = pocketpilot
            .cli(
                &["approvals", "list", "--json", "--limit", "1000"],
                CLI_LIMIT,
            )
            .await
            .and_then(|output| output.json());
        let mut ids: Vec<String> = match pending {
            Ok(value) => value["approvals"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|card| card["id"].as_str().map(str::to_owned))
                .collect(),
            Err(error) => {
                lock(shared)
                    .cli_notes
                    .push(format!("approvals list: {error}"));
                Vec::new()
            }
        };
        // A random few per round, a few at once.
        let mut batch = Vec::new();
        while !ids.is_empty() && batch.len() < 4 {
            let index = rng.range(0, ids.len() as u64) as usize;
            batch.push(ids.swap_remove(index));
        }
        let approvals = batch.into_iter().map(|id| {
            let pocketpilot = pocketpilot.clone();
            let via_api = rng.range(0, 100) < args.api_approvals;
            let kill_after = (rng.range(0, 100) < args.cli_kills)
                .then(|| Duration::from_millis(rng.range(0, 80)));
            let endpoint = endpoint(shared).filter(|_| via_api);
            async move {
                let resolved = match endpoint {
                    Some(endpoint) => Resolved::Api(
                        endpoint
                            .request(
                                "POST",
                                &format!("/api/approvals/{id}/resolve"),
                                Some(&json!({"decision": "approve"})),
                                REQUEST_LIMIT,
                            )
                            .await,
                    ),
                    None => Resolved::Cli(
                        pocketpilot
                            .cli_killed_after(&["approvals", "approve", &id], kill_after, CLI_LIMIT)
                            .await,
                    ),
                };
                (id, resolved)
            }
        });
        let running: Vec<_> = approvals.map(tokio::spawn).collect();
        lock(shared).burst.notify_one();
        for (id, resolved) in futures_join(running.into_iter()).await {
            let mut shared = lock(shared);
            match resolved {
                Resolved::Api(Ok(response)) if response.status == 202 => {
                    shared.api_resolves += 1;
                    shared.approved.insert(id);
                }
                Resolved::Api(Ok(response)) => shared.cli_notes.push(format!(
                    "POST resolve {id}: {} {}",
                    response.status,
                    String::from_utf8_lossy(&response.body)
                )),
                // The server was killed under the request: the end checks decide.
                Resolved::Api(Err(_)) => shared.request_errors += 1,
                Resolved::Cli(Ok(output)) if matches!(output.code, Some(0 | 3)) => {
                    shared.cli_resolves += 1;
                    shared.approved.insert(id);
                }
                Resolved::Cli(Ok(output)) if output.code.is_none() => shared.cli_killed += 1,
                Resolved::Cli(Ok(output)) => shared.cli_notes.push(format!(
                    "approvals approve {id}: exit {:?}: {}",
                    output.code,
                    output.stderr.trim()
                )),
                Resolved::Cli(Err(error)) => shared
                    .cli_notes
                    .push(format!("approvals approve {id}: {error}")),
            }
        }

        let interrupted = pocketpilot
            .cli(
                &[
                    "tasks",
                    "list",
                    "--state",
                    "interrupted",
                    "--json",
                    "--limit",
                    "1000",
                ],
                CLI_LIMIT,
            )
            .await
            .and_then(|output| output.json());
        if let Ok(value) = interrupted {
            for task in value["tasks"].as_array().into_iter().flatten() {
                let Some(id) = task["id"].as_str() else {
                    continue;
                };
                match pocketpilot
                    .cli(&["tasks", "retry", id, "--json"], CLI_LIMIT)
                    .await
                {
                    Ok(output) if output.code == Some(0) => lock(shared).retries += 1,
                    Ok(output) => lock(shared).cli_notes.push(format!(
                        "tasks retry {id}: exit {:?}: {}",
                        output.code,
                        output.stderr.trim()
                    )),
                    Err(error) => lock(shared)
                        .cli_notes
                        .push(format!("tasks retry {id}: {error}")),
                }
            }
        }

        if lock(shared).killer_done
            && let Some(states) = listed
            && states.len() == tasks
            && states.values().all(|state| terminal(state))
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How one approval was resolved.
#[derive(Debug)]
enum Resolved {
    Api(std::io::Result<pp_test_support::http::Response>),
    Cli(std::io::Result<pp_test_support::process::CliOutput>),
}

/// Waits for spawned tasks and returns their outputs in order.
async fn futures_join<T>(handles: impl Iterator<Item = tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut outputs = Vec::new();
    for handle in handles {
        if let Ok(output) = handle.await {
            outputs.push(output);
        }
    }
    outputs
}

fn terminal(state: &str) -> bool {
    matches!(state, "completed" | "failed" | "cancelled" | "timed_out")
}

/// Lists the tasks (workspace → state) and creates missing ones up to `allowed`; `None`
/// when the server did not answer.
async fn create_tasks(endpoint: &Endpoint, allowed: usize) -> Option<BTreeMap<String, String>> {
    let listed = endpoint
        .get_json("/api/tasks?limit=1000", REQUEST_LIMIT)
        .await
        .ok()?;
    let mut states = BTreeMap::new();
    for task in listed["tasks"].as_array()? {
        let workspace = task["workspace"].as_str()?.to_owned();
        states.insert(workspace, task["state"].as_str()?.to_owned());
    }
    let mut created = 0;
    for index in 0..allowed {
        let name = workspace_name(index);
        if states.contains_key(&name) || created >= 10 {
            continue;
        }
        let body = json!({"prompt": format!("soak task in {name}"), "workspace": name});
        let response = endpoint
            .request("POST", "/api/tasks", Some(&body), REQUEST_LIMIT)
            .await
            .ok()?;
        if response.status != 201 {
            return None;
        }
        created += 1;
    }
    (created == 0).then_some(states)
}
