//! Figures for `analyze_table`'s engine: load a generated 1M-row CSV (category, region,
//! amount, date) and group it by one column (sum, mean and count of `amount`), median of
//! 3 runs; then pandas (`read_csv` + `groupby().agg`) on the same file in the same run,
//! when a Python with pandas is found (`PP_BENCH_PYTHON`, else `target/bench-venv`, else
//! `python3`; `scripts/bench-docs.sh` makes the venv). Both CPU time (user + system of
//! the process, what counts on a shared machine) and wall time are printed; the verdict
//! compares CPU time.
//!
//! Run with `cargo bench -p pp-docs --bench table_groupby` (release). Prints plain text;
//! no harness. `-- <rows>` changes the row count.
#![allow(
    clippy::print_stdout,
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark binary: prints figures and writes its fixture with std::fs"
)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use pp_docs::Format;
use pp_docs::table::{self, Query, ops};

const RUNS: usize = 3;

fn main() {
    let rows: usize = std::env::args()
        .skip(1)
        .find_map(|argument| argument.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sales.csv");
    generate(&path, rows);
    let size = std::fs::metadata(&path).unwrap().len();
    println!(
        "table_groupby: {rows} rows, {:.1} MB CSV; group by category: sum, mean, count of amount; median of {RUNS}",
        size as f64 / 1e6
    );

    let query: Query = serde_json::from_value(serde_json::json!({
        "op": "group_by",
        "by": "category",
        "aggregates": [
            {"column": "amount", "fn": "sum"},
            {"column": "amount", "fn": "mean"},
            {"fn": "count"}
        ]
    }))
    .unwrap();
    // (wall, cpu) per run and phase.
    let mut loads = Vec::new();
    let mut groups = Vec::new();
    let mut totals = Vec::new();
    for _ in 0..RUNS {
        let (start, start_cpu) = (Instant::now(), cpu_time());
        let bytes = std::fs::read(&path).unwrap();
        let table = table::load(&bytes, Format::Csv, None, usize::MAX).unwrap();
        let (loaded, loaded_cpu) = (start.elapsed(), cpu_time() - start_cpu);
        let result = ops::run(&table, &query).unwrap();
        let (total, total_cpu) = (start.elapsed(), cpu_time() - start_cpu);
        assert_eq!(result.total_rows, 20);
        loads.push((loaded, loaded_cpu));
        groups.push((total - loaded, total_cpu - loaded_cpu));
        totals.push((total, total_cpu));
    }
    let ours = Figures::of(&loads, &groups, &totals);
    ours.print("pp-docs");

    match pandas(&path) {
        Some(theirs) => {
            theirs.print("pandas");
            for (clock, ours, theirs) in [
                ("cpu ", ours.cpu, theirs.cpu),
                ("wall", ours.wall, theirs.wall),
            ] {
                println!(
                    "ratio pandas / pp-docs ({clock}): total {:.2}x, group_by {:.2}x, load {:.2}x ({})",
                    theirs[2] / ours[2],
                    theirs[1] / ours[1],
                    theirs[0] / ours[0],
                    if ours[2] < theirs[2] {
                        "pp-docs faster"
                    } else {
                        "pandas faster"
                    }
                );
            }
        }
        None => println!(
            "pandas: not found (run scripts/bench-docs.sh, or set PP_BENCH_PYTHON to a python with pandas)"
        ),
    }
}

/// Median seconds of load, group_by and total, by wall clock and by CPU time.
struct Figures {
    wall: [f64; 3],
    cpu: [f64; 3],
}

impl Figures {
    fn of(
        loads: &[(Duration, Duration)],
        groups: &[(Duration, Duration)],
        totals: &[(Duration, Duration)],
    ) -> Self {
        let phase = |runs: &[(Duration, Duration)], cpu: bool| {
            let mut values: Vec<Duration> = runs
                .iter()
                .map(|&(wall, time)| if cpu { time } else { wall })
                .collect();
            median(&mut values).as_secs_f64()
        };
        Self {
            wall: [
                phase(loads, false),
                phase(groups, false),
                phase(totals, false),
            ],
            cpu: [phase(loads, true), phase(groups, true), phase(totals, true)],
        }
    }

    fn print(&self, who: &str) {
        for (clock, figures) in [("cpu ", self.cpu), ("wall", self.wall)] {
            println!(
                "{who:<8}  {clock}  load {:>7.3} s   group_by {:>7.3} s   total {:>7.3} s",
                figures[0], figures[1], figures[2]
            );
        }
    }
}

/// CPU time (user + system) of this process so far.
fn cpu_time() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(now.tv_sec).unwrap(),
        u32::try_from(now.tv_nsec).unwrap(),
    )
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    values[values.len() / 2]
}

/// A CSV of `rows` rows from a fixed pseudo-random sequence: 20 categories, 5 regions,
/// amounts with two decimals, dates in 2024.
fn generate(path: &Path, rows: usize) {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let regions = ["north", "south", "east", "west", "central"];
    let mut text = String::with_capacity(rows * 40);
    text.push_str("category,region,amount,date\n");
    for _ in 0..rows {
        let category = next() % 20;
        let region = regions[(next() % 5) as usize];
        let cents = next() % 100_000;
        let day = next() % 365;
        let (month, day_of_month) = month_day(day);
        writeln!(
            text,
            "cat_{category:02},{region},{}.{:02},2024-{month:02}-{day_of_month:02}",
            cents / 100,
            cents % 100
        )
        .unwrap();
    }
    std::fs::write(path, text).unwrap();
}

fn month_day(day_of_year: u64) -> (u64, u64) {
    let lengths = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let mut left = day_of_year;
    for (index, length) in lengths.iter().enumerate() {
        if left < *length {
            return (index as u64 + 1, left + 1);
        }
        left -= length;
    }
    (12, 31)
}

/// The Python to use: `PP_BENCH_PYTHON`, the bench venv, or `python3`, if it has pandas.
fn python() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-venv/bin/python");
    let candidates = [
        std::env::var_os("PP_BENCH_PYTHON").map(PathBuf::from),
        Some(venv),
        Some(PathBuf::from("python3")),
    ];
    candidates.into_iter().flatten().find(|python| {
        Command::new(python)
            .args(["-c", "import pandas"])
            .output()
            .is_ok_and(|output| output.status.success())
    })
}

/// pandas' median (load, group_by, total) seconds on `path`, by wall clock and CPU time.
fn pandas(path: &Path) -> Option<Figures> {
    let python = python()?;
    let script = r#"
import statistics, sys, time
import pandas as pd
runs = {"wall": ([], [], []), "cpu": ([], [], [])}
for _ in range(int(sys.argv[2])):
    start, start_cpu = time.perf_counter(), time.process_time()
    frame = pd.read_csv(sys.argv[1])
    loaded, loaded_cpu = time.perf_counter(), time.process_time()
    result = frame.groupby("category")["amount"].agg(["sum", "mean", "count"])
    done, done_cpu = time.perf_counter(), time.process_time()
    assert len(result) == 20
    for clock, (a, b, c) in (("wall", (start, loaded, done)), ("cpu", (start_cpu, loaded_cpu, done_cpu))):
        runs[clock][0].append(b - a); runs[clock][1].append(c - b); runs[clock][2].append(c - a)
for clock in ("wall", "cpu"):
    print(*(statistics.median(values) for values in runs[clock]))
"#;
    let output = Command::new(python)
        .args(["-c", script])
        .arg(path)
        .arg(RUNS.to_string())
        .output()
        .ok()?;
    if !output.status.success() {
        println!("pandas failed: {}", String::from_utf8_lossy(&output.stderr));
        return None;
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let figures: Vec<f64> = text
        .split_whitespace()
        .filter_map(|word| word.parse().ok())
        .collect();
    match figures[..] {
        [
            wall_load,
            wall_group,
            wall_total,
            cpu_load,
            cpu_group,
            cpu_total,
        ] => Some(Figures {
            wall: [wall_load, wall_group, wall_total],
            cpu: [cpu_load, cpu_group, cpu_total],
        }),
        _ => None,
    }
}
