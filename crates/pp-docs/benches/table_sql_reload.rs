//! What dropping the service's SQL table cache costs: a second query on the same table,
//! answered from a table already loaded in SQLite (the cache `analyze_table` had while
//! SQL ran in the service) against the whole job in the parser child (parse, load into
//! SQLite, query: what every SQL call does now). Generated CSV (category, region, amount,
//! date), `SELECT category, sum(amount), count(*) FROM t GROUP BY category`, median of 3;
//! wall time.
//!
//! Run with `cargo bench -p pp-docs --bench table_sql_reload -- <rows>` (default
//! 1,000,000). This binary is its own parser child (`table_sql_reload __parse`). Prints
//! plain text; no harness.
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a benchmark binary: prints figures"
)]

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use pp_docs::table::{self, SqlLimits, SqlTable, ops::Query};
use pp_docs::{Format, Job, JobOutput, Parser};

const RUNS: usize = 3;
const SQL: &str = "SELECT category, sum(amount), count(*) FROM t GROUP BY category";

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("__parse") {
        return ExitCode::from(pp_docs::child::main());
    }
    let rows: usize = std::env::args()
        .skip(1)
        .find_map(|argument| argument.parse().ok())
        .unwrap_or(1_000_000);
    let csv = generate(rows);
    println!(
        "table_sql_reload: {rows} rows, {:.1} MB CSV; {SQL}; median of {RUNS} (wall)",
        csv.len() as f64 / 1e6
    );

    let mut parses = Vec::new();
    let mut loads = Vec::new();
    let mut cached = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let parsed = table::load(csv.as_bytes(), Format::Csv, None, usize::MAX).unwrap();
        parses.push(start.elapsed());
        let start = Instant::now();
        let mut database = SqlTable::load(&parsed, SqlLimits::default()).unwrap();
        loads.push(start.elapsed());
        drop(parsed);
        // The first query warms SQLite's caches, as the cache's first call did.
        database.query(SQL, 100).unwrap();
        let start = Instant::now();
        let result = database.query(SQL, 100).unwrap();
        cached.push(start.elapsed());
        assert_eq!(result.rows.len(), 20);
    }

    let query: Query =
        serde_json::from_value(serde_json::json!({"op": "sql", "sql": SQL})).unwrap();
    let job = Job::Analyze {
        format: Format::Csv,
        sheet: None,
        max_rows: 1_000_000,
        query: Box::new(query),
        limits: SqlLimits::default(),
    };
    let parser = Parser::new(std::env::current_exe().unwrap(), vec!["__parse".to_owned()]);
    let mut reloads = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let output = parser.run(&job, csv.as_bytes()).unwrap();
        reloads.push(start.elapsed());
        let JobOutput::Analysis(analysis) = output else {
            panic!("not an analysis");
        };
        assert_eq!(analysis.result.rows.len(), 20);
    }
    let (parse, load, cached, reload) = (
        median(&mut parses),
        median(&mut loads),
        median(&mut cached),
        median(&mut reloads),
    );
    println!("in process: parse {parse:>8.3?}   load into SQLite {load:>8.3?}");
    println!("second query, table cached (before):   {cached:>8.3?}");
    println!("second query, child reloads (now):     {reload:>8.3?}");
    ExitCode::SUCCESS
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    values[values.len() / 2]
}

/// A CSV of `rows` rows from a fixed pseudo-random sequence (as `table_groupby`'s).
fn generate(rows: usize) -> String {
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
        let day = next() % 28 + 1;
        let month = next() % 12 + 1;
        writeln!(
            text,
            "cat_{category:02},{region},{}.{:02},2024-{month:02}-{day:02}",
            cents / 100,
            cents % 100
        )
        .unwrap();
    }
    text
}
