//! Tables through the real parser child: the typed table crosses the process boundary
//! intact (types, nulls, dates, floats that look whole), and bad files come back as
//! clear errors. `analyze_table`'s jobs run there whole: a query that makes gigabytes
//! comes back cut without growing this process, one long SQL function call is killed
//! soon after the time limit, and a stop check ends a query at once.
//!
//! This binary is its own parser child: started as `table_child __parse` it runs
//! [`pp_docs::child::main`]; otherwise it runs the checks below (no libtest: its output
//! on stdout would corrupt the child's answer).
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::disallowed_methods,
    reason = "a hand-rolled test harness: it reports on stdout and reads /proc/self/status"
)]

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pp_docs::job::run_job;
use pp_docs::table::bounded::{CUT_MARK, json_chars};
use pp_docs::table::ops::Query;
use pp_docs::table::{Analysis, Cell, ColumnType, SqlLimits};
use pp_docs::{DocsError, Format, Job, JobOutput, Parser};

fn parser() -> Parser {
    Parser::new(std::env::current_exe().unwrap(), vec!["__parse".to_owned()])
}

fn job(format: Format, max_rows: usize) -> Job {
    Job::Table {
        format,
        sheet: None,
        max_rows,
    }
}

/// The child's table equals the in-process one.
fn same_through_the_child(format: Format, bytes: &[u8], max_rows: usize) -> pp_docs::table::Table {
    let job = job(format, max_rows);
    let child = parser().run(&job, bytes).unwrap();
    let local = run_job(&job, bytes).unwrap();
    assert_eq!(child, local);
    let JobOutput::Table(table) = child else {
        panic!("not a table: {child:?}");
    };
    table
}

fn a_gbk_csv_crosses_intact() {
    let mut text = "城市\t金额\t日期\t备注\n".to_owned();
    for index in 0..50_000 {
        writeln!(
            text,
            "城市{}\t{}.0\t2024-03-{:02}\t",
            index % 7,
            index,
            index % 28 + 1
        )
        .unwrap();
    }
    let (bytes, _, _) = encoding_rs::GBK.encode(&text);
    let table = same_through_the_child(Format::Csv, &bytes, 1_000_000);
    assert_eq!(table.row_count, 50_000);
    assert_eq!(table.encoding.as_deref(), Some("GBK"));
    assert_eq!(table.delimiter, Some('\t'));
    assert_eq!(table.columns[1].kind, ColumnType::Float);
    assert_eq!(
        table.columns[1].values[3],
        Cell::Float(3.0),
        "a whole float stays a float"
    );
    assert_eq!(table.columns[2].kind, ColumnType::Date);
    assert_eq!(table.columns[3].values[0], Cell::Null);
}

fn json_and_the_row_cap_cross_intact() {
    let table = same_through_the_child(
        Format::Json,
        br#"[{"a": 1, "b": true}, {"a": 2.5, "c": "x"}, {"a": null}]"#,
        2,
    );
    assert!(table.truncated);
    assert_eq!(table.row_count, 2);
    assert_eq!(
        table.columns[0].values,
        [Cell::Float(1.0), Cell::Float(2.5)]
    );
}

fn a_bad_file_is_a_clear_error() {
    let error = parser()
        .run(&job(Format::Json, 10), b"{\"not\": \"a table\"}")
        .unwrap_err();
    assert!(matches!(error, DocsError::Unsupported(_)), "{error:?}");
    let error = parser()
        .run(&job(Format::Xlsx, 10), b"PK\x03\x04junk")
        .unwrap_err();
    assert!(matches!(error, DocsError::Malformed(_)), "{error:?}");
}

/// A `Job::Analyze` running `sql` on a one-column CSV.
fn sql_job(sql: &str, limits: SqlLimits) -> Job {
    let query: Query =
        serde_json::from_value(serde_json::json!({"op": "sql", "sql": sql, "limit": 1000}))
            .unwrap();
    Job::Analyze {
        format: Format::Csv,
        sheet: None,
        max_rows: 1000,
        query: Box::new(query),
        limits,
    }
}

/// A field of /proc/self/status, in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Finding 3 of the security issue: 100 rows of a 16 MB text of NULs (1.6 GB, 9.6 GB
/// as JSON) took the service down when the query ran in it. Through the child the
/// answer is cut to its size and this process does not grow by more than 256 MiB.
fn a_zeroblob_flood_comes_back_cut_without_growing_the_caller() {
    // Peak RSS from here on (VmHWM reset, Linux ≥ 4.0).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = status_kib("VmRSS:");
    let limits = SqlLimits {
        max_answer_chars: 98_000,
        ..SqlLimits::default()
    };
    let job = sql_job(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 100) \
         SELECT CAST(zeroblob(16000000) AS TEXT) FROM c",
        limits,
    );
    let output = parser().run(&job, b"a\n1\n").unwrap();
    let peak = status_kib("VmHWM:");
    let JobOutput::Analysis(Analysis { result, .. }) = output else {
        panic!("not an analysis: {output:?}");
    };
    assert!(
        result.truncated && result.cut_for_size,
        "{:?}",
        result.rows.len()
    );
    assert!(result.cut_cells >= 1);
    assert!(!result.rows.is_empty());
    assert!(json_chars(&serde_json::json!(result.rows)) <= limits.max_answer_chars);
    assert!(result.rows[0][0].as_str().unwrap().ends_with(CUT_MARK));
    let grown_mib = peak.saturating_sub(before) >> 10;
    println!(
        "  caller grew by {grown_mib} MiB at peak (VmRSS before {before} KiB, VmHWM {peak} KiB)"
    );
    assert!(grown_mib < 256, "the caller grew by {grown_mib} MiB");
}

/// Finding 4: `instr` over megabytes is one function call that neither the progress
/// handler nor `sqlite3_interrupt` reaches (41.8 s against 5 s). The child is killed
/// soon after the time limit.
fn one_long_function_call_ends_within_the_time_limit_and_two_seconds() {
    let limits = SqlLimits::default();
    let job = sql_job(
        "SELECT instr(printf('%.*c', 2000000, 'a'), printf('%.*c', 1000000, 'a') || 'b')",
        limits,
    );
    let started = Instant::now();
    let error = parser().run(&job, b"a\n1\n").unwrap_err();
    let took = started.elapsed();
    println!("  ended after {:.2} s: {error}", took.as_secs_f64());
    assert!(matches!(error, DocsError::Sql(_)), "{error:?}");
    assert!(error.to_string().contains("5 s time limit"), "{error}");
    assert!(took < limits.timeout + Duration::from_secs(2), "{took:?}");
}

/// The task's interrupt (a stop check) ends a long query at once.
fn a_stop_ends_a_long_query_promptly() {
    let job = sql_job(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
        SqlLimits {
            timeout: Duration::from_secs(60),
            ..SqlLimits::default()
        },
    );
    let stopped = AtomicBool::new(false);
    let started = Instant::now();
    let error = std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(500));
            stopped.store(true, Ordering::SeqCst);
        });
        parser()
            .run_until(&job, b"a\n1\n", None, &|| stopped.load(Ordering::SeqCst))
            .unwrap_err()
    });
    let took = started.elapsed();
    println!("  stopped after {:.2} s", took.as_secs_f64());
    assert_eq!(error, DocsError::Interrupted);
    assert!(took < Duration::from_secs(3), "{took:?}");
}

/// An operation runs in the child as it does in process, and its answer is cut too.
fn an_analysis_through_the_child_equals_the_one_in_process() {
    let mut csv = "region,amount,note\n".to_owned();
    for index in 0..2000 {
        writeln!(csv, "r{},{index},{}", index % 3, "x".repeat(index % 50)).unwrap();
    }
    let query: Query = serde_json::from_value(serde_json::json!({
        "op": "group_by", "by": "region",
        "aggregates": [{"column": "amount", "fn": "sum"}]
    }))
    .unwrap();
    let job = Job::Analyze {
        format: Format::Csv,
        sheet: None,
        max_rows: 10_000,
        query: Box::new(query),
        limits: SqlLimits::default(),
    };
    let child = parser().run(&job, csv.as_bytes()).unwrap();
    assert_eq!(child, run_job(&job, csv.as_bytes()).unwrap());
    let JobOutput::Analysis(analysis) = child else {
        panic!("not an analysis: {child:?}");
    };
    assert_eq!(analysis.result.rows.len(), 3);
    assert_eq!(analysis.table.rows, 2000);

    let query: Query =
        serde_json::from_value(serde_json::json!({"op": "head", "limit": 1000})).unwrap();
    let job = Job::Analyze {
        format: Format::Csv,
        sheet: None,
        max_rows: 10_000,
        query: Box::new(query),
        limits: SqlLimits {
            max_answer_chars: 5_000,
            ..SqlLimits::default()
        },
    };
    let JobOutput::Analysis(analysis) = parser().run(&job, csv.as_bytes()).unwrap() else {
        panic!("not an analysis");
    };
    assert!(analysis.result.truncated && analysis.result.cut_for_size);
    assert!(json_chars(&serde_json::json!(analysis.result.rows)) <= 5_000);
}

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("__parse") {
        return ExitCode::from(pp_docs::child::main());
    }
    let checks: [(&str, fn()); 7] = [
        (
            "a_zeroblob_flood_comes_back_cut_without_growing_the_caller",
            a_zeroblob_flood_comes_back_cut_without_growing_the_caller,
        ),
        (
            "one_long_function_call_ends_within_the_time_limit_and_two_seconds",
            one_long_function_call_ends_within_the_time_limit_and_two_seconds,
        ),
        (
            "a_stop_ends_a_long_query_promptly",
            a_stop_ends_a_long_query_promptly,
        ),
        (
            "an_analysis_through_the_child_equals_the_one_in_process",
            an_analysis_through_the_child_equals_the_one_in_process,
        ),
        ("a_gbk_csv_crosses_intact", a_gbk_csv_crosses_intact),
        (
            "json_and_the_row_cap_cross_intact",
            json_and_the_row_cap_cross_intact,
        ),
        ("a_bad_file_is_a_clear_error", a_bad_file_is_a_clear_error),
    ];
    for (name, check) in checks {
        check();
        println!("test {name} ... ok");
    }
    println!("test result: ok. {} passed", checks.len());
    ExitCode::SUCCESS
}
