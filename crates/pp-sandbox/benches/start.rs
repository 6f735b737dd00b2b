//! Start overhead of a confined command: `true` started directly, through the sandbox
//! child unconfined (limits and a cleared environment only), and confined (Landlock
//! too). Prints the median and the 90th percentile of each over 200 runs.
//!
//! `cargo bench -p pp-sandbox --bench start`. This binary is its own sandbox child
//! (`start __sandbox SPEC`).
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a bench: prints its figures and stops on a broken setup"
)]

use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use pp_sandbox::{End, ResourceLimits, RunOptions, Sandbox, Spec};

const RUNS: usize = 200;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("__sandbox") {
        return ExitCode::from(pp_sandbox::child::main(
            args.get(2).map_or("", String::as_str),
        ));
    }
    let support = pp_sandbox::probe();
    println!("kernel: {}", support.describe());
    let workspace = tempfile::tempdir().unwrap();
    let workspace = workspace.path().canonicalize().unwrap();
    let sandbox = Sandbox::new(
        std::env::current_exe().unwrap(),
        vec!["__sandbox".to_owned()],
    );
    let options = RunOptions {
        stdin: None,
        timeout: Duration::from_secs(30),
        output_bytes: 1 << 16,
    };
    let spec = |confine: bool| {
        let mut spec = Spec::new(
            vec!["true".to_owned()],
            workspace.clone(),
            workspace.clone(),
            ResourceLimits::default(),
        );
        spec.confine = confine;
        spec
    };
    let direct = measure(|| {
        let status = Command::new("true")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .status()
            .unwrap();
        assert!(status.success());
    });
    report("direct spawn of `true`", &direct, None);
    let unconfined_spec = spec(false);
    let run = |spec: &Spec| {
        let finished = sandbox.run(spec, &options, &|| false).unwrap();
        assert_eq!(finished.end, End::Exited(0));
    };
    if !support.usable() {
        let unconfined = measure(|| run(&unconfined_spec));
        report("sandbox child, unconfined", &unconfined, Some(&direct));
        println!("confined: skipped, no usable Landlock here");
        return ExitCode::SUCCESS;
    }
    // Interleaved, so a change in the machine's load hits both alike.
    let confined_spec = spec(true);
    let (mut unconfined, mut confined) = (Vec::new(), Vec::new());
    for round in 0..RUNS + 10 {
        let started = Instant::now();
        run(&unconfined_spec);
        let first = started.elapsed();
        let started = Instant::now();
        run(&confined_spec);
        let second = started.elapsed();
        if round >= 10 {
            unconfined.push(first);
            confined.push(second);
        }
    }
    unconfined.sort();
    confined.sort();
    report("sandbox child, unconfined", &unconfined, Some(&direct));
    report(
        "sandbox child, confined (Landlock)",
        &confined,
        Some(&direct),
    );
    println!(
        "Landlock itself: {:+.2} ms at the median (confined - unconfined)",
        (median(&confined).as_secs_f64() - median(&unconfined).as_secs_f64()) * 1000.0
    );
    ExitCode::SUCCESS
}

fn measure(mut once: impl FnMut()) -> Vec<Duration> {
    for _ in 0..10 {
        once();
    }
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            once();
            started.elapsed()
        })
        .collect();
    times.sort();
    times
}

fn median(times: &[Duration]) -> Duration {
    times[times.len() / 2]
}

fn report(what: &str, times: &[Duration], baseline: Option<&[Duration]>) {
    let p90 = times[times.len() * 9 / 10];
    let over = baseline.map_or(String::new(), |baseline| {
        format!(
            ", +{:.2} ms over a direct spawn",
            (median(times).as_secs_f64() - median(baseline).as_secs_f64()) * 1000.0
        )
    });
    println!(
        "{what}: median {:.2} ms, p90 {:.2} ms over {RUNS} runs{over}",
        median(times).as_secs_f64() * 1000.0,
        p90.as_secs_f64() * 1000.0
    );
}
