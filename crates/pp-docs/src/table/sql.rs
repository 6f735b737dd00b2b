//! SQL over a [`Table`] on an in-memory SQLite database with every door to files shut.
//!
//! SQL is a way out of the workspace jail unless it is closed: `ATTACH` (of a file or a
//! `file:` URI) opens or creates any file, `VACUUM INTO` writes one, `load_extension`
//! runs native code, pragmas change what the connection may do. So, in layers:
//!
//! 1. The database is in memory, opened without URI filenames; the table is loaded
//!    (`CREATE TABLE t` and prepared inserts in one transaction) before anything else.
//! 2. Connection settings: `SQLITE_LIMIT_ATTACHED = 0` (no `ATTACH`, hence no
//!    `VACUUM INTO`), defensive mode, no triggers or views, untrusted schema, attach may
//!    neither create nor write; limits on value length, SQL length, columns, expression
//!    depth; `temp_store = MEMORY`, a small page cache, `max_page_count` frozen at the
//!    loaded size, and `query_only = 1`, all set before the authorizer locks pragmas.
//!    Extension loading is never enabled.
//! 3. The authorizer allows a `SELECT`, reading tables (but not the `pragma_*` table
//!    functions, `sqlite_dbpage` or `dbstat`), recursive CTEs and
//!    functions other than those that load code or name files (`load_extension`,
//!    `readfile`, `writefile`, `edit`, `fts3_tokenizer`); it denies everything else:
//!    `ATTACH`, `DETACH`, every `PRAGMA`, writes, `CREATE`, `DROP`, `ALTER`,
//!    transactions.
//! 4. A query must start with `SELECT`, `WITH` or `VALUES`, be a single statement and
//!    be read-only (`sqlite3_stmt_readonly`); at most `max_rows` rows are read, and a
//!    progress handler stops it at the time limit.
//!
//! The process-wide `sqlite3_hard_heap_limit64` is not used: it would cap the store's
//! database too. Memory is bounded by the value-length limit, the page limits and the
//! time limit.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::types::{Value, ValueRef};
use rusqlite::{Connection, OpenFlags, ffi};

use super::bounded::{Gather, RawCell};
use super::ops::ResultSet;
use super::{Cell, ColumnType, Table, TableInfo};
use crate::DocsError;

/// What one SQL connection and its queries may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SqlLimits {
    /// How long one query may run (the progress handler; the parser child is killed
    /// shortly after, should one function call run on).
    pub timeout: Duration,
    /// The longest string or blob a query may make (bytes); also the longest cell.
    pub max_value_bytes: i32,
    /// The longest query (bytes).
    pub max_sql_bytes: i32,
    /// The page cache (KiB).
    pub cache_kib: i64,
    /// The most characters of JSON the rows of one answer take: rows and cells are cut
    /// to it while they are read ([`super::bounded`]).
    pub max_answer_chars: usize,
}

impl Default for SqlLimits {
    /// 5 s per query, 16 MiB values, 100 KB of SQL, a 16 MiB page cache, answers of
    /// 100,000 characters.
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(5),
            max_value_bytes: 16 << 20,
            max_sql_bytes: 100_000,
            cache_kib: 16 * 1024,
            max_answer_chars: 100_000,
        }
    }
}

/// The most columns a table may have for SQL.
const MAX_COLUMNS: usize = 2000;

/// Functions refused: they load native code or read and write files (most are not
/// compiled in; they are refused by name all the same).
const DENIED_FUNCTIONS: [&str; 5] = [
    "load_extension",
    "readfile",
    "writefile",
    "edit",
    "fts3_tokenizer",
];

/// A table loaded into a jailed in-memory SQLite database, named `t`.
pub struct SqlTable {
    connection: Connection,
    info: TableInfo,
    limits: SqlLimits,
    /// Why the authorizer refused the last statement (the first reason).
    refusal: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for SqlTable {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SqlTable")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

fn sql_error(context: &str) -> impl Fn(rusqlite::Error) -> DocsError + '_ {
    move |error| DocsError::Sql(format!("{context}: {error}"))
}

/// `name` as a quoted SQL identifier.
fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl SqlTable {
    /// Loads `table` into a new jailed connection.
    pub fn load(table: &Table, limits: SqlLimits) -> Result<Self, DocsError> {
        if table.columns.len() > MAX_COLUMNS {
            return Err(DocsError::BadRequest(format!(
                "the table has {} columns; SQL works on tables of at most {MAX_COLUMNS}",
                table.columns.len()
            )));
        }
        // No SQLITE_OPEN_URI: a name is never read as a `file:` URI.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut connection =
            Connection::open_in_memory_with_flags(flags).map_err(sql_error("cannot open"))?;
        let setup = sql_error("cannot set up the database");
        for (config, on) in [
            (DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true),
            (DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false),
            (DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, false),
            (DbConfig::SQLITE_DBCONFIG_ENABLE_VIEW, false),
            (DbConfig::SQLITE_DBCONFIG_ENABLE_ATTACH_CREATE, false),
            (DbConfig::SQLITE_DBCONFIG_ENABLE_ATTACH_WRITE, false),
            (DbConfig::SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, false),
        ] {
            connection.set_db_config(config, on).map_err(&setup)?;
        }
        for (limit, value) in [
            (Limit::SQLITE_LIMIT_ATTACHED, 0),
            (Limit::SQLITE_LIMIT_LENGTH, limits.max_value_bytes),
            (Limit::SQLITE_LIMIT_SQL_LENGTH, limits.max_sql_bytes),
            (Limit::SQLITE_LIMIT_COLUMN, 2000),
            (Limit::SQLITE_LIMIT_EXPR_DEPTH, 200),
            (Limit::SQLITE_LIMIT_COMPOUND_SELECT, 50),
            (Limit::SQLITE_LIMIT_FUNCTION_ARG, 100),
            (Limit::SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 10_000),
            (Limit::SQLITE_LIMIT_VARIABLE_NUMBER, MAX_COLUMNS as i32),
            (Limit::SQLITE_LIMIT_TRIGGER_DEPTH, 1),
            (Limit::SQLITE_LIMIT_WORKER_THREADS, 0),
        ] {
            connection.set_limit(limit, value).map_err(&setup)?;
        }
        fill(&mut connection, table)?;
        connection
            .execute_batch(&format!(
                "PRAGMA temp_store = MEMORY; PRAGMA cache_size = -{}; PRAGMA trusted_schema = OFF;",
                limits.cache_kib
            ))
            .map_err(&setup)?;
        let pages: i64 = connection
            .query_row("PRAGMA page_count", [], |row| row.get(0))
            .map_err(&setup)?;
        connection
            .execute_batch(&format!(
                "PRAGMA max_page_count = {}; PRAGMA query_only = 1;",
                pages.max(1)
            ))
            .map_err(&setup)?;
        let refusal = Arc::new(Mutex::new(None));
        let reasons = Arc::clone(&refusal);
        connection
            .authorizer(Some(move |context: AuthContext<'_>| {
                match authorize(&context) {
                    Ok(()) => Authorization::Allow,
                    Err(reason) => {
                        let mut slot = reasons.lock().unwrap_or_else(PoisonError::into_inner);
                        slot.get_or_insert(reason);
                        Authorization::Deny
                    }
                }
            }))
            .map_err(&setup)?;
        Ok(Self {
            connection,
            info: table.info(),
            limits,
            refusal,
        })
    }

    /// The table loaded.
    pub fn info(&self) -> &TableInfo {
        &self.info
    }

    /// Runs one read-only query, returning at most `max_rows` rows.
    pub fn query(&mut self, sql: &str, max_rows: usize) -> Result<ResultSet, DocsError> {
        let refuse = |message: String| Err(DocsError::Sql(message));
        if sql.len() > usize::try_from(self.limits.max_sql_bytes).unwrap_or(0) {
            return refuse(format!(
                "the query is {} bytes; at most {} are allowed",
                sql.len(),
                self.limits.max_sql_bytes
            ));
        }
        match first_keyword(sql).to_ascii_lowercase().as_str() {
            "select" | "with" | "values" => {}
            "" => {
                return refuse("the query is empty; write one SELECT on the table `t`".to_owned());
            }
            other => {
                return refuse(format!(
                    "only a SELECT on the table `t` is allowed (read-only, one statement), not \
                     {}",
                    other.to_ascii_uppercase()
                ));
            }
        }
        *self.refusal.lock().unwrap_or_else(PoisonError::into_inner) = None;
        let deadline = Instant::now() + self.limits.timeout;
        self.connection
            .progress_handler(1000, Some(move || Instant::now() > deadline))
            .map_err(sql_error("cannot set the time limit"))?;
        let result = self.run(sql, max_rows);
        self.connection
            .progress_handler(0, None::<fn() -> bool>)
            .map_err(sql_error("cannot clear the time limit"))?;
        result
    }

    fn run(&self, sql: &str, max_rows: usize) -> Result<ResultSet, DocsError> {
        let mut statement = self
            .connection
            .prepare(sql)
            .map_err(|error| self.explain(error))?;
        if !statement.readonly() {
            return Err(DocsError::Sql(
                "only read-only queries are allowed: the table cannot be changed".to_owned(),
            ));
        }
        let columns: Vec<String> = statement.column_names().map(str::to_owned).collect();
        let width = columns.len();
        // Cells are cut and rows counted against the answer's size as they are read:
        // nothing bigger than the answer is ever held (a row may be 16 MB of NULs).
        let mut gather = Gather::new(self.limits.max_answer_chars, max_rows);
        let mut truncated = false;
        let mut rows = statement.query([]).map_err(|error| self.explain(error))?;
        while let Some(row) = rows.next().map_err(|error| self.explain(error))? {
            if gather.is_full() {
                truncated = true;
                break;
            }
            let values = (0..width)
                .map(|index| row.get_ref(index))
                .collect::<Result<Vec<ValueRef<'_>>, _>>()
                .map_err(|error| self.explain(error))?;
            // Texts are cut from SQLite's own bytes; other values are small.
            let made: Vec<serde_json::Value> = values
                .iter()
                .map(|value| match value {
                    ValueRef::Text(_) => serde_json::Value::Null,
                    other => json_of(*other),
                })
                .collect();
            let cells: Vec<RawCell<'_>> = values
                .iter()
                .zip(&made)
                .map(|(value, made)| match value {
                    ValueRef::Text(text) => RawCell::Text(text),
                    _ => RawCell::Json(made),
                })
                .collect();
            if !gather.push(&cells) {
                truncated = true;
                break;
            }
        }
        let (rows, cut_cells, cut_for_size) = gather.finish();
        let total_rows = rows.len();
        Ok(ResultSet {
            columns,
            rows,
            truncated,
            total_rows,
            cut_cells,
            cut_for_size,
        })
    }

    /// A SQLite error as a message for the model.
    #[expect(
        clippy::needless_pass_by_value,
        reason = "used as map_err(|e| self.explain(e))"
    )]
    fn explain(&self, error: rusqlite::Error) -> DocsError {
        let refusal = self
            .refusal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(reason) = refusal
            && !matches!(error, rusqlite::Error::MultipleStatement)
        {
            return DocsError::Sql(format!("refused: {reason}"));
        }
        let message = match &error {
            // The tail was prepared too (and may have been refused): say what matters.
            rusqlite::Error::MultipleStatement => {
                "only one statement per call: remove everything after the first `;`".to_owned()
            }
            rusqlite::Error::SqliteFailure(failure, _) => match failure.code {
                rusqlite::ErrorCode::OperationInterrupted => {
                    time_limit_message(self.limits.timeout)
                }
                rusqlite::ErrorCode::TooBig => format!(
                    "a value grew past the {}-byte limit (huge strings or blobs are refused)",
                    self.limits.max_value_bytes
                ),
                rusqlite::ErrorCode::DiskFull | rusqlite::ErrorCode::OutOfMemory => {
                    "the query needs more memory than allowed".to_owned()
                }
                rusqlite::ErrorCode::AuthorizationForStatementDenied => {
                    "refused: only a SELECT on the table `t` is allowed".to_owned()
                }
                _ if failure.extended_code == ffi::SQLITE_ERROR => {
                    format!("{error} (the table is `t`; a SELECT is all that runs)")
                }
                _ => error.to_string(),
            },
            _ => error.to_string(),
        };
        DocsError::Sql(message)
    }
}

/// What a query stopped at its time limit answers (by the progress handler in the
/// child, or by the parent killing the child when one function call runs on).
pub fn time_limit_message(timeout: Duration) -> String {
    format!(
        "the query hit its {} s time limit and was stopped; make it simpler (filter first, \
         avoid unbounded recursion and work on huge strings)",
        timeout.as_secs_f64()
    )
}

/// The authorizer's rule: `Ok` for what a read-only query on `t` needs.
fn authorize(context: &AuthContext<'_>) -> Result<(), String> {
    match context.action {
        AuthAction::Select | AuthAction::Recursive => Ok(()),
        // CTE and subquery names are reported as reads too, so any name may be read
        // except the pragma functions and the page-level virtual tables.
        AuthAction::Read { table_name, .. } => {
            let lower = table_name.to_ascii_lowercase();
            if lower.starts_with("pragma_") || lower == "sqlite_dbpage" || lower == "dbstat" {
                Err(format!(
                    "reading {table_name:?}: pragmas are not allowed (use op \"schema\" for the columns)"
                ))
            } else {
                Ok(())
            }
        }
        AuthAction::Function { function_name } => {
            if DENIED_FUNCTIONS
                .iter()
                .any(|denied| function_name.eq_ignore_ascii_case(denied))
            {
                Err(format!(
                    "the function {function_name}() loads code or touches files"
                ))
            } else {
                Ok(())
            }
        }
        AuthAction::Attach { .. } => {
            Err("ATTACH: SQL here reads the table `t` only and never opens a file".to_owned())
        }
        AuthAction::Detach { .. } => Err("DETACH: nothing is attached".to_owned()),
        AuthAction::Pragma { pragma_name, .. } => Err(format!(
            "PRAGMA {pragma_name}: pragmas are not allowed (use op \"schema\" for the columns)"
        )),
        AuthAction::Transaction { .. } | AuthAction::Savepoint { .. } => {
            Err("transactions: queries are read-only".to_owned())
        }
        _ => Err(
            "writing or changing the schema: only a SELECT on the table `t` is allowed".to_owned(),
        ),
    }
}

/// The first word of `sql` after whitespace and comments.
fn first_keyword(sql: &str) -> &str {
    let mut rest = sql;
    loop {
        rest = rest.trim_start();
        if let Some(comment) = rest.strip_prefix("--") {
            rest = comment.split_once('\n').map_or("", |(_, after)| after);
        } else if let Some(comment) = rest.strip_prefix("/*") {
            rest = comment.split_once("*/").map_or("", |(_, after)| after);
        } else {
            break;
        }
    }
    let end = rest
        .find(|character: char| !character.is_ascii_alphabetic())
        .unwrap_or(rest.len());
    &rest[..end]
}

/// A SQLite value as JSON (blobs described, not dumped).
fn json_of(value: ValueRef<'_>) -> serde_json::Value {
    match value {
        ValueRef::Null => serde_json::Value::Null,
        ValueRef::Integer(value) => serde_json::Value::from(value),
        ValueRef::Real(value) => Cell::Float(value).to_json(),
        // Texts are cut as they are read ([`RawCell::Text`]); this is for the others.
        ValueRef::Text(text) => serde_json::Value::from(String::from_utf8_lossy(text).into_owned()),
        ValueRef::Blob(blob) => serde_json::Value::from(format!("[blob: {} bytes]", blob.len())),
    }
}

/// Creates `t` and inserts every row, in one transaction.
fn fill(connection: &mut Connection, table: &Table) -> Result<(), DocsError> {
    let load = sql_error("cannot load the table");
    let definition: Vec<String> = table
        .columns
        .iter()
        .map(|column| {
            let affinity = match column.kind {
                ColumnType::Integer | ColumnType::Boolean => "INTEGER",
                ColumnType::Float => "REAL",
                ColumnType::Date | ColumnType::Text => "TEXT",
            };
            format!("{} {affinity}", quote(&column.name))
        })
        .collect();
    let transaction = connection.transaction().map_err(&load)?;
    if definition.is_empty() {
        transaction
            .execute_batch("CREATE TABLE t (\"empty\" TEXT)")
            .map_err(&load)?;
    } else {
        transaction
            .execute_batch(&format!("CREATE TABLE t ({})", definition.join(", ")))
            .map_err(&load)?;
        let marks = vec!["?"; table.columns.len()].join(", ");
        let mut insert = transaction
            .prepare(&format!("INSERT INTO t VALUES ({marks})"))
            .map_err(&load)?;
        for row in 0..table.row_count {
            let values = table
                .columns
                .iter()
                .map(|column| match &column.values[row] {
                    Cell::Null => Value::Null,
                    Cell::Bool(value) => Value::Integer(i64::from(*value)),
                    Cell::Int(value) => Value::Integer(*value),
                    Cell::Float(value) => Value::Real(*value),
                    Cell::Text(text) => Value::Text(text.clone()),
                });
            insert
                .execute(rusqlite::params_from_iter(values))
                .map_err(&load)?;
        }
    }
    transaction.commit().map_err(&load)
}
