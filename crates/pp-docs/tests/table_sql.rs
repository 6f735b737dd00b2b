//! The SQL jail under attack: every way out to files is refused with a clear message,
//! and nothing is created anywhere a query names.
#![allow(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    reason = "test helpers: they list the temporary directories the queries name with std::fs"
)]

use std::path::Path;
use std::time::Duration;

use pp_docs::table::{self, SqlLimits, SqlTable};
use pp_docs::{DocsError, Format};
use proptest::prelude::*;

fn sample() -> SqlTable {
    let table = table::load(
        b"city,amount,day\nBeijing,10,2024-01-01\nShanghai,20.5,2024-01-02\nBeijing,5,2024-02-01\n",
        Format::Csv,
        None,
        100,
    )
    .unwrap();
    SqlTable::load(&table, SqlLimits::default()).unwrap()
}

fn refused(sql: &str) -> String {
    match sample().query(sql, 100) {
        Err(DocsError::Sql(message)) => message,
        other => panic!("{sql:?} was not refused: {other:?}"),
    }
}

/// Every file in `dir`, recursively.
fn files_in(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_in(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn select_queries_work_on_t() {
    let mut sql = sample();
    let result = sql
        .query(
            "SELECT city, sum(amount) AS total, count(*) AS n FROM t GROUP BY city ORDER BY city",
            100,
        )
        .unwrap();
    assert_eq!(result.columns, ["city", "total", "n"]);
    assert_eq!(
        result.rows,
        vec![
            vec![
                serde_json::json!("Beijing"),
                serde_json::json!(15.0),
                serde_json::json!(2)
            ],
            vec![
                serde_json::json!("Shanghai"),
                serde_json::json!(20.5),
                serde_json::json!(1)
            ],
        ]
    );
    // Dates are ISO text, so SQLite's date functions work on them.
    let result = sql
        .query(
            "SELECT strftime('%m', day) AS month FROM t WHERE day >= '2024-02-01'",
            100,
        )
        .unwrap();
    assert_eq!(result.rows, vec![vec![serde_json::json!("02")]]);
    // A CTE, comments and a trailing semicolon are fine.
    let result = sql
        .query(
            "-- comment\n/* block */ WITH big AS (SELECT * FROM t WHERE amount > 6) SELECT count(*) FROM big;",
            100,
        )
        .unwrap();
    assert_eq!(result.rows, vec![vec![serde_json::json!(2)]]);
}

#[test]
fn the_row_cap_truncates_and_says_so() {
    let mut sql = sample();
    let result = sql
        .query(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c",
            50,
        )
        .unwrap();
    assert_eq!(result.rows.len(), 50);
    assert!(result.truncated);
}

#[test]
fn attach_of_a_file_or_uri_is_refused_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside.db");
    let uri = format!("file:{}?mode=rwc", dir.path().join("uri.db").display());
    for sql in [
        format!("ATTACH '{}' AS o", outside.display()),
        format!("ATTACH DATABASE '{uri}' AS o"),
        format!("ATTACH '{}' AS o", dir.path().join("x.db").display()).to_lowercase(),
        "ATTACH ':memory:' AS m".to_owned(),
    ] {
        let message = refused(&sql);
        assert!(message.contains("SELECT"), "{sql}: {message}");
    }
    // Behind a harmless first statement: the tail is checked (and refused) too.
    let message = refused(&format!("SELECT 1; ATTACH '{}' AS o", outside.display()));
    assert!(message.contains("ATTACH"), "{message}");
    assert_eq!(files_in(dir.path()), Vec::<std::path::PathBuf>::new());
}

#[test]
fn vacuum_into_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("copy.db");
    let message = refused(&format!("VACUUM INTO '{}'", target.display()));
    assert!(message.contains("SELECT"), "{message}");
    let message = refused(&format!(
        "/* hide */ VACUUM main INTO 'file:{}?mode=rwc'",
        target.display()
    ));
    assert!(message.contains("VACUUM"), "{message}");
    assert!(!target.exists());
    assert_eq!(files_in(dir.path()), Vec::<std::path::PathBuf>::new());
}

#[test]
fn load_extension_and_file_functions_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let library = dir.path().join("evil.so");
    for sql in [
        format!("SELECT load_extension('{}')", library.display()),
        format!("SELECT load_extension('{}', 'init')", library.display()),
        "SELECT LOAD_EXTENSION('libc.so.6')".to_owned(),
        format!("SELECT readfile('{}')", library.display()),
        format!("SELECT writefile('{}', 'x')", library.display()),
        "SELECT fts3_tokenizer('simple')".to_owned(),
    ] {
        let message = refused(&sql);
        assert!(
            message.contains("refused") || message.contains("no such function"),
            "{sql}: {message}"
        );
    }
    let message = refused("SELECT load_extension('x')");
    assert!(message.contains("load_extension() loads code"), "{message}");
    assert_eq!(files_in(dir.path()), Vec::<std::path::PathBuf>::new());
}

#[test]
fn every_pragma_is_refused() {
    for sql in [
        "PRAGMA writable_schema = 1",
        "PRAGMA query_only = 0",
        "PRAGMA table_info(t)",
        "PRAGMA temp_store_directory = '/tmp'",
        "pragma max_page_count = 1000000",
        "PRAGMA main.journal_mode = WAL",
    ] {
        let message = refused(sql);
        assert!(message.contains("only a SELECT"), "{sql}: {message}");
    }
    // The table-valued pragma functions cannot read anything either.
    let message = refused("SELECT name FROM pragma_table_info('t')");
    assert!(message.contains("pragmas are not allowed"), "{message}");
    let message = refused("SELECT * FROM pragma_database_list");
    assert!(message.contains("pragmas are not allowed"), "{message}");
    // The connection is still read-only afterwards.
    let message = refused("WITH x AS (SELECT 1) DELETE FROM t");
    assert!(message.contains("refused"), "{message}");
}

#[test]
fn writes_and_schema_changes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for sql in [
        "CREATE TABLE x (a)".to_owned(),
        "CREATE TEMP TABLE x AS SELECT * FROM t".to_owned(),
        "INSERT INTO t VALUES ('x', 1, '2024-01-01')".to_owned(),
        "UPDATE t SET amount = 0".to_owned(),
        "DELETE FROM t".to_owned(),
        "DROP TABLE t".to_owned(),
        "ALTER TABLE t RENAME TO u".to_owned(),
        "CREATE VIEW v AS SELECT 1".to_owned(),
        "CREATE TRIGGER g AFTER INSERT ON t BEGIN SELECT 1; END".to_owned(),
        "CREATE VIRTUAL TABLE f USING fts5(a)".to_owned(),
        "BEGIN".to_owned(),
        "SAVEPOINT s".to_owned(),
        "REINDEX".to_owned(),
        "ANALYZE".to_owned(),
        "DETACH main".to_owned(),
        format!(
            "WITH c AS (SELECT 1) INSERT INTO t SELECT '{}', 1, 2",
            dir.path().display()
        ),
    ] {
        let message = refused(&sql);
        assert!(!message.is_empty(), "{sql}");
    }
    // The table is unchanged.
    let result = sample().query("SELECT count(*) FROM t", 10).unwrap();
    assert_eq!(result.rows, vec![vec![serde_json::json!(3)]]);
    assert_eq!(files_in(dir.path()), Vec::<std::path::PathBuf>::new());
}

#[test]
fn trailing_statements_are_refused() {
    let mut sql = sample();
    let error = sql
        .query("SELECT 1; DROP TABLE t", 10)
        .unwrap_err()
        .to_string();
    assert!(error.contains("refused"), "{error}");
    let result = sql.query("SELECT count(*) FROM t", 10).unwrap();
    assert_eq!(result.rows, vec![vec![serde_json::json!(3)]], "nothing ran");
    let message = refused("SELECT 1; SELECT 2");
    assert!(message.contains("one statement"), "{message}");
    assert!(refused("").contains("empty"));
    assert!(refused("  -- only a comment").contains("empty"));
}

#[test]
fn a_query_that_never_ends_is_stopped_at_the_time_limit() {
    let table = table::load(b"a\n1\n", Format::Csv, None, 10).unwrap();
    let limits = SqlLimits {
        timeout: Duration::from_millis(300),
        ..SqlLimits::default()
    };
    let mut sql = SqlTable::load(&table, limits).unwrap();
    let error = sql
        .query(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
            10,
        )
        .unwrap_err();
    assert!(
        error.to_string().contains("hit its 0.3 s time limit"),
        "{error}"
    );
    // The connection works again after the stop.
    let result = sql.query("SELECT a FROM t", 10).unwrap();
    assert_eq!(result.rows, vec![vec![serde_json::json!(1)]]);
}

#[test]
fn huge_values_are_refused_by_the_size_limit() {
    for sql in [
        "SELECT zeroblob(2000000000)",
        "SELECT length(randomblob(1000000000))",
        "SELECT length(printf('%.*c', 100000000, 'x'))",
        "SELECT length(replace(hex(zeroblob(10000000)), '0', 'aaaa'))",
    ] {
        let message = refused(sql);
        assert!(
            message.contains("byte limit") || message.contains("too big"),
            "{sql}: {message}"
        );
    }
}

#[test]
fn a_query_longer_than_the_limit_is_refused() {
    let long = format!("SELECT {} 1", " ".repeat(200_000));
    assert!(refused(&long).contains("bytes"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Any query either fails with a SQL error or answers at most the cap of rows, and
    /// never creates a file in the directory it names.
    #[test]
    fn any_query_fails_or_stays_in_the_cap_and_creates_nothing(
        prefix in prop::sample::select(vec![
            "SELECT", "ATTACH", "VACUUM INTO", "PRAGMA", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT",
            "INSERT INTO", "CREATE TABLE", "SELECT load_extension(", "DROP TABLE", "VALUES(",
        ]),
        middle in "[ a-z0-9_*(),'=;:./?-]{0,40}",
        name_file in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("made.db");
        let named = if name_file { format!(" '{}' ", file.display()) } else { String::new() };
        let sql = format!("{prefix}{named}{middle} x FROM c");
        let table = table::load(b"a,b\n1,x\n2,y\n", Format::Csv, None, 10).unwrap();
        let limits = SqlLimits { timeout: Duration::from_millis(200), ..SqlLimits::default() };
        let mut jail = SqlTable::load(&table, limits).unwrap();
        match jail.query(&sql, 7) {
            Ok(result) => prop_assert!(result.rows.len() <= 7),
            Err(error) => prop_assert!(matches!(error, DocsError::Sql(_)), "{error:?}"),
        }
        prop_assert!(files_in(dir.path()).is_empty(), "{sql}");
    }
}
