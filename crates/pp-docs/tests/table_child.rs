//! Tables through the real parser child: the typed table crosses the process boundary
//! intact (types, nulls, dates, floats that look whole), and bad files come back as
//! clear errors.
//!
//! This binary is its own parser child: started as `table_child __parse` it runs
//! [`pp_docs::child::main`]; otherwise it runs the checks below (no libtest: its output
//! on stdout would corrupt the child's answer).
#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a hand-rolled test harness: it reports on stdout"
)]

use std::fmt::Write as _;
use std::process::ExitCode;

use pp_docs::job::run_job;
use pp_docs::table::{Cell, ColumnType};
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

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("__parse") {
        return ExitCode::from(pp_docs::child::main());
    }
    let checks: [(&str, fn()); 3] = [
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
