//! Figures for `analyze_table`'s engine: load a generated 1M-row CSV (category, region,
//! amount, date) and group it by one column (sum, mean and count of `amount`), median of
//! 3 runs; then pandas (`read_csv` + `groupby().agg`) on the same file in the same run,
//! when a Python with pandas is found (`PP_BENCH_PYTHON`, else `target/bench-venv`, else
//! `python3`; `scripts/bench-docs.sh` makes the venv).
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
    let mut loads = Vec::new();
    let mut groups = Vec::new();
    let mut totals = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let bytes = std::fs::read(&path).unwrap();
        let table = table::load(&bytes, Format::Csv, None, usize::MAX).unwrap();
        let loaded = start.elapsed();
        let result = ops::run(&table, &query).unwrap();
        let total = start.elapsed();
        assert_eq!(result.total_rows, 20);
        loads.push(loaded);
        groups.push(total - loaded);
        totals.push(total);
    }
    let ours = (median(&mut loads), median(&mut groups), median(&mut totals));
    println!(
        "pp-docs   load {:>8.3} s   group_by {:>8.3} s   total {:>8.3} s",
        ours.0.as_secs_f64(),
        ours.1.as_secs_f64(),
        ours.2.as_secs_f64()
    );

    match pandas(&path) {
        Some((load, group, total)) => {
            println!(
                "pandas    load {load:>8.3} s   group_by {group:>8.3} s   total {total:>8.3} s"
            );
            println!(
                "ratio pandas / pp-docs: total {:.2}x, group_by {:.2}x, load {:.2}x ({})",
                total / ours.2.as_secs_f64(),
                group / ours.1.as_secs_f64(),
                load / ours.0.as_secs_f64(),
                if ours.2.as_secs_f64() < total {
                    "pp-docs faster"
                } else {
                    "pandas faster"
                }
            );
        }
        None => println!(
            "pandas: not found (run scripts/bench-docs.sh, or set PP_BENCH_PYTHON to a python with pandas)"
        ),
    }
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

/// pandas' median (load, group_by, total) seconds on `path`.
fn pandas(path: &Path) -> Option<(f64, f64, f64)> {
    let python = python()?;
    let script = r#"
import statistics, sys, time
import pandas as pd
loads, groups, totals = [], [], []
for _ in range(int(sys.argv[2])):
    start = time.perf_counter()
    frame = pd.read_csv(sys.argv[1])
    loaded = time.perf_counter()
    result = frame.groupby("category")["amount"].agg(["sum", "mean", "count"])
    done = time.perf_counter()
    assert len(result) == 20
    loads.append(loaded - start); groups.append(done - loaded); totals.append(done - start)
print(statistics.median(loads), statistics.median(groups), statistics.median(totals))
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
        [load, group, total] => Some((load, group, total)),
        _ => None,
    }
}
