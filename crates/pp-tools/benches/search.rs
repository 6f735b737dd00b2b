//! Figures for `search_files`: search time on a generated 10,000-file tree.
//!
//! Run with `scripts/bench-search.sh` (or `cargo bench -p pp-tools --bench search`;
//! release). Prints plain text; no harness. The tree: 100 folders of 100 text files
//! (about 40 lines, 2 KiB each), one file in 100 holding a rare word, every file a common
//! one, plus 1,000 `.log` files a `.gitignore` excludes. The files are written just
//! before, so the page cache is warm: the figures are the walk, the opens and the search,
//! not the disk.
#![allow(
    clippy::print_stdout,
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark binary: prints figures and builds its fixture with std::fs"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use pp_agent::ToolContext;
use pp_gate::Jail;
use pp_test_support::TempTree;
use pp_tools::SearchLimits;
use pp_types::ToolOutput;
use serde_json::json;

const FOLDERS: usize = 100;
const FILES_PER_FOLDER: usize = 100;
const RUNS: usize = 7;

fn main() {
    let tree = TempTree::new();
    let started = Instant::now();
    let bytes = generate(&tree);
    println!(
        "search_files bench: {} files ({:.1} MiB) + 1000 ignored, written in {:.2} s",
        FOLDERS * FILES_PER_FOLDER,
        bytes as f64 / (1024.0 * 1024.0),
        started.elapsed().as_secs_f64()
    );
    let jail = Arc::new(Jail::new(tree.workspace()).unwrap());
    let limits = SearchLimits {
        max_duration: Duration::from_secs(60),
        ..SearchLimits::default()
    };
    let tool = pp_tools::search_tool(jail, limits);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let cases = [
        (
            "rare literal, every file searched (100 matches)",
            json!({"pattern": "zanzibar", "max_results": 1000}),
        ),
        (
            "no match, every file searched",
            json!({"pattern": "nowhere-to-be-found"}),
        ),
        (
            "regex, case-sensitive (100 matches)",
            json!({"pattern": "zan[a-z]+bar", "regex": true, "case_sensitive": true, "max_results": 1000}),
        ),
        (
            "common word, stops at max_results 100",
            json!({"pattern": "ledger"}),
        ),
        (
            "rare literal with context 2",
            json!({"pattern": "zanzibar", "context": 2, "max_results": 1000}),
        ),
        (
            "glob *.md (one file in 10)",
            json!({"pattern": "zanzibar", "glob": "*.md", "max_results": 1000}),
        ),
        (
            "one folder (100 files)",
            json!({"pattern": "zanzibar", "path": "f042"}),
        ),
    ];
    for (name, arguments) in cases {
        let mut times = Vec::with_capacity(RUNS);
        let mut lines = 0;
        for _ in 0..RUNS {
            let started = Instant::now();
            let output = runtime.block_on(tool.execute(&ToolContext::default(), &arguments));
            times.push(started.elapsed());
            lines = result_lines(&output);
        }
        times.sort();
        println!(
            "  {name:<48} median {:>8.1} ms  (min {:.1}, max {:.1})  {lines} lines",
            ms(times[RUNS / 2]),
            ms(times[0]),
            ms(times[RUNS - 1])
        );
    }
}

/// Writes the tree; returns the bytes of the searched files.
fn generate(tree: &TempTree) -> usize {
    tree.file(".gitignore", "*.log\n");
    let mut bytes = 0;
    for folder in 0..FOLDERS {
        for file in 0..FILES_PER_FOLDER {
            let index = folder * FILES_PER_FOLDER + file;
            let extension = if index.is_multiple_of(10) {
                "md"
            } else {
                "txt"
            };
            let mut text = String::new();
            for line in 0..40 {
                text.push_str(&format!(
                    "{index:05}:{line:02} the quick brown fox jumps over the lazy dog, \
                     entry {line} of the ledger\n"
                ));
            }
            if index % 100 == 10 {
                text.push_str("a rare word: zanzibar\n");
            }
            bytes += text.len();
            tree.file(&format!("f{folder:03}/n{file:03}.{extension}"), &text);
            if file.is_multiple_of(10) {
                tree.file(&format!("f{folder:03}/n{file:03}.log"), &text);
            }
        }
    }
    bytes
}

fn result_lines(output: &ToolOutput) -> usize {
    match output {
        ToolOutput::Success { content } => content.lines().count(),
        other => panic!("the search failed: {other:?}"),
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
