//! Figures for `extract_document` on PDF: the committed 200-page fixture
//! (`tests/fixtures/docs/bench-200-pages.pdf`: mixed Chinese/Latin, CID font
//! `STSong-Light` with `UniGB-UCS2-H`) extracted in-process with
//! [`pp_docs::extract::extract`], median of 3 runs (CPU time of this process and wall
//! time); then pypdf on the same file in the same run (`page.extract_text()` over every
//! page, CPU time measured inside the Python process around the extraction only, median
//! of 3), when a Python with pypdf is found: `PP_BENCH_PYTHON`, else
//! `target/fixtures-venv/bin/python` (made by `scripts/fixtures/make.sh --venv`), else the
//! comparison is skipped with a message. Prints pages/s for both and the CPU-time ratio
//! (the issue's goal: ≥ 3× pypdf).
//!
//! Run with `cargo bench -p pp-docs --bench extract_pdf` (release) or
//! `bash scripts/bench-docs.sh`. Prints plain text; no harness; nothing is asserted on
//! time.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark binary: prints figures, reads its fixture with std::fs, panics on setup failure"
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use pp_docs::Format;
use pp_docs::extract::{ExtractOptions, extract};

const RUNS: usize = 3;
const PAGES: usize = 200;

/// pypdf's side: extracts every page `runs` times, prints one JSON line with the CPU and
/// wall seconds of each run, the page count and the characters of the last run's text.
const PYPDF: &str = r#"
import json, sys, time
import pypdf
path, runs = sys.argv[1], int(sys.argv[2])
cpu, wall = [], []
for _ in range(runs):
    c0, w0 = time.process_time(), time.perf_counter()
    reader = pypdf.PdfReader(path)
    text = "\n".join(page.extract_text() for page in reader.pages)
    cpu.append(time.process_time() - c0)
    wall.append(time.perf_counter() - w0)
print(json.dumps({"cpu": cpu, "wall": wall, "pages": len(reader.pages), "chars": len(text),
                  "version": pypdf.__version__, "last_line": text.strip().splitlines()[-1]}))
"#;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("tests/fixtures/docs/bench-200-pages.pdf");
    let bytes = std::fs::read(&path).unwrap();
    println!(
        "extract_pdf: {} ({} pages, {:.0} KB); median of {RUNS}",
        path.strip_prefix(root).unwrap_or(&path).display(),
        PAGES,
        bytes.len() as f64 / 1024.0
    );

    let options = ExtractOptions {
        pages: None,
        max_chars: usize::MAX,
    };
    let mut cpu = Vec::new();
    let mut wall = Vec::new();
    let mut last = None;
    for _ in 0..RUNS {
        let (c0, w0) = (cpu_time(), Instant::now());
        let document = match extract(&bytes, Format::Pdf, &options) {
            Ok(document) => document,
            Err(error) => {
                eprintln!("pp-docs could not extract the fixture: {error}");
                std::process::exit(1);
            }
        };
        wall.push(w0.elapsed());
        cpu.push(cpu_time().saturating_sub(c0));
        last = Some(document);
    }
    let document = last.expect("at least one run");
    let ours_cpu = median(&mut cpu);
    let ours_wall = median(&mut wall);
    println!(
        "pp-docs  cpu {:>7.3} s  wall {:>7.3} s  {:>7.0} pages/s (cpu)  {} pages, {} chars",
        ours_cpu.as_secs_f64(),
        ours_wall.as_secs_f64(),
        PAGES as f64 / ours_cpu.as_secs_f64(),
        document.pages,
        document.text.chars().count()
    );
    // Not timed: a wrong reading would make the figures meaningless, so say so.
    let wanted = "第200页第40行 PocketPilot 文档提取基准 benchmark line 40 金额 7840.00 元";
    if document.pages != PAGES || !squeezed(&document.text).contains(&squeezed(wanted)) {
        println!("warning: pp-docs' text lacks the last line of page {PAGES} ({wanted})");
    }

    let Some(python) = python(root) else {
        println!(
            "pypdf: skipped (no Python with pypdf: set PP_BENCH_PYTHON or run \
             `bash scripts/fixtures/make.sh --venv`)"
        );
        return;
    };
    let output = Command::new(&python)
        .args(["-c", PYPDF])
        .arg(&path)
        .arg(RUNS.to_string())
        .output()
        .unwrap();
    if !output.status.success() {
        println!(
            "pypdf: skipped ({} failed: {})",
            python.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
        return;
    }
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let seconds = |key: &str| {
        let mut runs: Vec<Duration> = report[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|value| Duration::from_secs_f64(value.as_f64().unwrap()))
            .collect();
        median(&mut runs)
    };
    let (theirs_cpu, theirs_wall) = (seconds("cpu"), seconds("wall"));
    println!(
        "pypdf    cpu {:>7.3} s  wall {:>7.3} s  {:>7.0} pages/s (cpu)  {} pages, {} chars (pypdf {})",
        theirs_cpu.as_secs_f64(),
        theirs_wall.as_secs_f64(),
        PAGES as f64 / theirs_cpu.as_secs_f64(),
        report["pages"],
        report["chars"],
        report["version"].as_str().unwrap_or("?")
    );
    println!(
        "CPU-time ratio pypdf / pp-docs: {:.2}x (goal >= 3x); wall ratio {:.2}x",
        theirs_cpu.as_secs_f64() / ours_cpu.as_secs_f64(),
        theirs_wall.as_secs_f64() / ours_wall.as_secs_f64()
    );
}

/// This process's CPU time (user + system, all threads).
fn cpu_time() -> Duration {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}

fn median(runs: &mut [Duration]) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

/// `text` without whitespace, so spacing choices do not matter for the sanity check.
fn squeezed(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// A Python that can import pypdf.
fn python(root: &Path) -> Option<PathBuf> {
    let candidates = std::env::var_os("PP_BENCH_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([root.join("../../target/fixtures-venv/bin/python")]);
    candidates.into_iter().find(|python| {
        Command::new(python)
            .args(["-c", "import pypdf"])
            .output()
            .is_ok_and(|output| output.status.success())
    })
}
