//! `analyze_table`: schema, statistics, filters, sorting, groups and SQL over a CSV,
//! XLSX sheet or JSON array.
//!
//! ## What it does
//! Reads the file through the jail ([`super::input::read_document`]), parses it in the
//! parser child (`Job::Table`: hostile files never parse in the service) into a typed
//! table of at most [`MAX_TABLE_ROWS`] rows, then runs `op` here:
//! `schema`, `describe`, `head`, `filter`, `sort`, `group_by` on the table
//! ([`pp_docs::table::ops`]), or `sql` on a jailed in-memory SQLite copy of it
//! ([`pp_docs::table::sql`]), cached by file (path, sheet, size, content hash) in the
//! provider. The answer is `{path, op, columns, rows, truncated, total_rows, table}`
//! (`table`: rows and columns read, sheet and sheets, encoding, delimiter, whether the
//! file had more rows than were read), at most [`pp_docs::table::ops::MAX_LIMIT`] rows
//! and the provider's output character cap (rows are dropped to fit, and `truncated`
//! and `note` say so).
//!
//! ## Capabilities needed
//! `file:read` (allowed without approval), risk low; `path` is a path parameter.
//!
//! ## Example
//! ```json
//! {"path": "sales.csv", "op": "group_by", "by": "region",
//!  "aggregates": [{"column": "amount", "fn": "sum"}], "order_by": "sum(amount)",
//!  "descending": true, "limit": 5}
//! ```

use std::sync::Arc;

use pp_agent::ToolContext;
use pp_docs::table::ops::{AGGREGATE_FNS, CONDITION_OPS, MAX_LIMIT, OPS, Op, Query, ResultSet};
use pp_docs::table::{CacheKey, SqlCache, SqlLimits, SqlTable, Table, TableInfo};
use pp_docs::{DocsError, Format, Job, JobOutput};
use pp_gate::Jail;
use pp_types::{ToolOutput, ToolSpec};

use super::input::read_spec;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::input::read_document;
use super::provider::DocsSettings;
use crate::blocking::SyncTool;
use crate::files::common::{optional_str, required_str, respond};

/// The most rows read from one file.
pub(crate) const MAX_TABLE_ROWS: usize = 1_000_000;

/// What the model reads about the tool.
const DESCRIPTION: &str = "Analyze a table file in the workspace: CSV/TSV (any delimiter, \
UTF-8 or GBK), an XLSX sheet (`sheet`, default the first) or a JSON array. `op`: schema \
(columns, types, nulls), describe (count, nulls, distinct, min/max/mean, top values), head, \
filter (`where`), sort (`order_by`, `descending`), group_by (`by`, `aggregates` \
[{column, fn}] with fn count|sum|mean|min|max), or sql (one read-only SELECT in `sql`; the \
table is named t). `where` is a list of {column, op, value} with op = != < <= > >= \
contains starts_with in is_null not_null, all of which must hold. Returns {columns, rows, \
truncated, total_rows, table}; at most 1000 rows (`limit`, default 200, head 10).";

/// The `analyze_table` tool.
pub(crate) struct AnalyzeTable {
    jail: Arc<Jail>,
    settings: Arc<DocsSettings>,
    /// SQL tables by file version, shared by every segment of the provider.
    cache: Arc<SqlCache>,
    spec: ToolSpec,
}

impl AnalyzeTable {
    pub(crate) fn new(jail: Arc<Jail>, settings: Arc<DocsSettings>, cache: Arc<SqlCache>) -> Self {
        let spec = read_spec(
            "analyze_table",
            DESCRIPTION,
            json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "CSV, TSV, XLSX or JSON file, relative to the workspace root"
                    },
                    "sheet": {
                        "type": "string",
                        "description": "XLSX: the sheet's name (default: the first sheet)"
                    },
                    "op": {"type": "string", "enum": OPS},
                    "columns": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Columns to show (default: all)"
                    },
                    "where": {
                        "type": "array",
                        "description": "Conditions, all of which must hold",
                        "items": {
                            "type": "object",
                            "properties": {
                                "column": {"type": "string"},
                                "op": {"type": "string", "enum": CONDITION_OPS},
                                "value": {"description": "A number, string, boolean, or an array for `in`; none for is_null/not_null"}
                            },
                            "required": ["column", "op"],
                            "additionalProperties": false
                        }
                    },
                    "by": {
                        "description": "group_by: the key column(s)",
                        "anyOf": [
                            {"type": "string"},
                            {"type": "array", "items": {"type": "string"}}
                        ]
                    },
                    "aggregates": {
                        "type": "array",
                        "description": "group_by: what to compute per group (default: count); result columns are named like sum(amount)",
                        "items": {
                            "type": "object",
                            "properties": {
                                "column": {"type": "string", "description": "Optional for count"},
                                "fn": {"type": "string", "enum": AGGREGATE_FNS}
                            },
                            "required": ["fn"],
                            "additionalProperties": false
                        }
                    },
                    "order_by": {
                        "type": "string",
                        "description": "Column to sort by (group_by: any result column)"
                    },
                    "descending": {"type": "boolean"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                    "sql": {
                        "type": "string",
                        "description": "op sql: one read-only SELECT (SQLite dialect) on the table t"
                    }
                },
                "required": ["path", "op"],
                "additionalProperties": false
            }),
        );
        Self {
            jail,
            settings,
            cache,
            spec,
        }
    }

    fn run(&self, arguments: &Value) -> Result<String, ToolOutput> {
        let path = required_str(arguments, "path")?;
        let sheet = optional_str(arguments, "sheet")?;
        let query = parse_query(arguments)?;
        let sql = match (query.op, query.sql.as_deref()) {
            (Op::Sql, Some(sql)) => Some(sql),
            (Op::Sql, None) => {
                return Err(ToolOutput::error(
                    "op \"sql\" needs `sql`: one SELECT on the table t, e.g. \
                     SELECT region, sum(amount) FROM t GROUP BY region",
                ));
            }
            _ => None,
        };
        let (bytes, format) = read_document(&self.jail, path, self.settings.max_input_bytes)?;
        if !matches!(
            format,
            Format::Csv | Format::Xlsx | Format::Json | Format::Txt
        ) {
            return Err(ToolOutput::error(format!(
                "`{path}` is {format}, not a table; analyze_table reads csv, tsv, xlsx and \
                 json (use extract_document for other documents)"
            )));
        }
        let failed = |error: DocsError| ToolOutput::error(format!("`{path}`: {error}"));
        let (result, info) = match sql {
            Some(sql) => {
                let key = CacheKey {
                    path: format!(
                        "{}/{}",
                        self.jail.root().display(),
                        self.jail
                            .check(path)
                            .map(|relative| relative.to_string_lossy().into_owned())
                            .unwrap_or_else(|_| path.to_owned())
                    ),
                    sheet: sheet.map(str::to_owned),
                    size: bytes.len() as u64,
                    version: hex(&Sha256::digest(&bytes)),
                };
                let table = self
                    .cache
                    .get_or_load(&key, || {
                        let table = self.load(&bytes, format, sheet)?;
                        SqlTable::load(&table, SqlLimits::default())
                    })
                    .map_err(failed)?;
                let mut table = table
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let limit = query
                    .limit
                    .unwrap_or(pp_docs::table::ops::DEFAULT_LIMIT)
                    .min(MAX_LIMIT);
                let result = table.query(sql, limit).map_err(failed)?;
                (result, table.info().clone())
            }
            None => {
                let table = self.load(&bytes, format, sheet).map_err(failed)?;
                let result = pp_docs::table::ops::run(&table, &query).map_err(failed)?;
                (result, table.info())
            }
        };
        answer(
            path,
            query.op,
            result,
            &info,
            self.settings.max_output_chars,
        )
    }

    /// Parses the table in the parser child.
    fn load(&self, bytes: &[u8], format: Format, sheet: Option<&str>) -> Result<Table, DocsError> {
        let job = Job::Table {
            format,
            sheet: sheet.map(str::to_owned),
            max_rows: MAX_TABLE_ROWS,
        };
        match self.settings.parser.run(&job, bytes)? {
            JobOutput::Table(table) => Ok(table),
            _ => Err(DocsError::Process(
                "the parser answered something else than a table".to_owned(),
            )),
        }
    }
}

/// The tool for one segment, as the provider registers it (off the async threads).
pub(crate) fn tool(
    scope: &crate::Scope<'_>,
    settings: &Arc<DocsSettings>,
    cache: &Arc<SqlCache>,
) -> Arc<dyn pp_agent::Tool> {
    Arc::new(crate::blocking::OffThread(Arc::new(AnalyzeTable::new(
        Arc::clone(scope.workspace),
        Arc::clone(settings),
        Arc::clone(cache),
    ))))
}

impl SyncTool for AnalyzeTable {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, _context: &ToolContext, arguments: &Value) -> ToolOutput {
        respond(self.run(arguments))
    }
}

/// The query part of the arguments (nulls count as absent).
fn parse_query(arguments: &Value) -> Result<Query, ToolOutput> {
    let mut arguments = arguments.clone();
    if let Value::Object(map) = &mut arguments {
        map.retain(|_, value| !value.is_null());
    }
    serde_json::from_value(arguments)
        .map_err(|error| ToolOutput::error(format!("bad arguments: {error}")))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The answer as JSON of at most `max_chars` characters: rows are dropped from the end
/// until it fits, and `truncated` and `note` say so.
pub(crate) fn answer(
    path: &str,
    op: Op,
    mut result: ResultSet,
    info: &TableInfo,
    max_chars: usize,
) -> Result<String, ToolOutput> {
    let mut note: Option<String> = None;
    if info.truncated {
        note = Some(format!(
            "only the first {} rows of the file were read; results cover those rows",
            info.rows
        ));
    }
    loop {
        let mut value = json!({
            "path": path,
            "op": op,
            "columns": result.columns,
            "rows": result.rows,
            "truncated": result.truncated,
            "total_rows": result.total_rows,
            "table": info,
        });
        if let Some(note) = &note {
            value["note"] = Value::from(note.as_str());
        }
        let text = serde_json::to_string(&value)
            .map_err(|error| ToolOutput::error(format!("cannot write the answer: {error}")))?;
        if text.chars().count() <= max_chars {
            return Ok(text);
        }
        if result.rows.is_empty() {
            return Err(ToolOutput::error(format!(
                "the answer is larger than {max_chars} characters even without rows; name \
                 fewer `columns`"
            )));
        }
        let keep = result.rows.len() / 2;
        result.rows.truncate(keep);
        result.truncated = true;
        let cut = format!(
            "rows cut to {keep} to fit the {max_chars}-character output limit; pass `columns` \
             or a smaller `limit`"
        );
        note = Some(match note {
            Some(first) if !first.starts_with("rows cut") => format!("{first}; {cut}"),
            _ => cut,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_over_the_cap_drop_rows_and_say_so() {
        let result = ResultSet {
            columns: vec!["a".to_owned()],
            rows: (0..100)
                .map(|index| vec![json!(format!("value {index}"))])
                .collect(),
            truncated: false,
            total_rows: 100,
        };
        let info = TableInfo {
            rows: 100,
            columns: 1,
            truncated: false,
            sheet: None,
            sheets: Vec::new(),
            encoding: Some("UTF-8".to_owned()),
            delimiter: Some(','),
        };
        let text = answer("t.csv", Op::Head, result, &info, 600).unwrap();
        assert!(text.chars().count() <= 600, "{text}");
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["truncated"], json!(true));
        assert!(
            value["note"].as_str().unwrap().contains("600-character"),
            "{value}"
        );
        let rows = value["rows"].as_array().unwrap().len();
        assert!(rows > 0 && rows < 100, "{rows}");
    }

    #[test]
    fn null_arguments_count_as_absent_and_bad_ones_are_named() {
        let query = parse_query(&json!({"path": "x.csv", "op": "head", "limit": null, "by": null}))
            .unwrap();
        assert_eq!(query.limit, None);
        let error = parse_query(&json!({"path": "x.csv", "op": "pivot"})).unwrap_err();
        let ToolOutput::Error { message } = error else {
            panic!("not an error: {error:?}");
        };
        assert!(message.contains("group_by"), "{message}");
    }
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "the tests make workspace files and the fake parser's files behind the jail's back"
)]
mod tool_tests {
    use std::path::PathBuf;

    use super::*;
    use pp_types::Risk;
    use pretty_assertions::assert_eq;

    /// A tool whose parser child is a shell script (run by the real runner) printing the
    /// answer `pp_docs::job::run_job` gives for `bytes` — the real wire format and the
    /// real table — and counting its runs in `runs`.
    struct Fixture {
        workspace: tempfile::TempDir,
        parser_dir: tempfile::TempDir,
        tool: AnalyzeTable,
    }

    impl Fixture {
        fn new() -> Self {
            let workspace = tempfile::tempdir().unwrap();
            let parser_dir = tempfile::tempdir().unwrap();
            let script = format!(
                "cat >/dev/null; echo run >> '{dir}/runs'; cat '{dir}/answer.json'",
                dir = parser_dir.path().display()
            );
            let parser = pp_docs::Parser::new(PathBuf::from("/bin/sh"), vec!["-c".into(), script]);
            let mut settings = DocsSettings::new(parser);
            settings.max_input_bytes = 1 << 20;
            let tool = AnalyzeTable::new(
                Arc::new(Jail::new(workspace.path()).unwrap()),
                Arc::new(settings),
                Arc::new(SqlCache::new(2)),
            );
            Self {
                workspace,
                parser_dir,
                tool,
            }
        }

        /// Writes the workspace file `name` and the answer the parser will give for it.
        fn file(&self, name: &str, bytes: &[u8], sheet: Option<&str>) {
            std::fs::write(self.workspace.path().join(name), bytes).unwrap();
            let job = Job::Table {
                format: Format::from_path(name).unwrap(),
                sheet: sheet.map(str::to_owned),
                max_rows: MAX_TABLE_ROWS,
            };
            let answer = match pp_docs::job::run_job(&job, bytes) {
                Ok(output) => json!({"ok": output}),
                Err(error) => json!({"error": error}),
            };
            std::fs::write(
                self.parser_dir.path().join("answer.json"),
                serde_json::to_vec(&answer).unwrap(),
            )
            .unwrap();
        }

        fn runs(&self) -> usize {
            std::fs::read_to_string(self.parser_dir.path().join("runs"))
                .unwrap_or_default()
                .lines()
                .count()
        }

        #[allow(clippy::needless_pass_by_value, reason = "tests pass json! literals")]
        fn call(&self, arguments: Value) -> ToolOutput {
            self.tool.call(&ToolContext::default(), &arguments)
        }

        fn ok(&self, arguments: Value) -> Value {
            match self.call(arguments) {
                ToolOutput::Success { content } => serde_json::from_str(&content).unwrap(),
                other => panic!("{other:?}"),
            }
        }

        fn error(&self, arguments: Value) -> String {
            match self.call(arguments) {
                ToolOutput::Error { message } => message,
                other => panic!("{other:?}"),
            }
        }
    }

    const SALES: &[u8] =
        b"region;amount;day\nnorth;10;2024-01-03\nsouth;4.5;2024-02-01\nnorth;2;2024-02-20\n";

    #[test]
    fn the_spec_lists_the_ops_and_functions() {
        let fixture = Fixture::new();
        let spec = fixture.tool.spec();
        assert_eq!(spec.name, "analyze_table");
        assert_eq!(spec.capability.as_ref().unwrap().as_str(), "file:read");
        assert_eq!(spec.risk, Risk::Low);
        assert_eq!(spec.path_params, ["path"]);
        assert_eq!(spec.parameters["properties"]["op"]["enum"], json!(OPS));
        assert_eq!(
            spec.parameters["properties"]["aggregates"]["items"]["properties"]["fn"]["enum"],
            json!(["count", "sum", "mean", "min", "max"])
        );
    }

    #[test]
    fn group_by_through_the_parser_child() {
        let fixture = Fixture::new();
        fixture.file("sales.csv", SALES, None);
        let value = fixture.ok(json!({
            "path": "sales.csv", "op": "group_by", "by": "region",
            "aggregates": [{"column": "amount", "fn": "sum"}],
            "order_by": "sum(amount)", "descending": true
        }));
        assert_eq!(value["columns"], json!(["region", "sum(amount)"]));
        assert_eq!(value["rows"], json!([["north", 12.0], ["south", 4.5]]));
        assert_eq!(value["table"]["delimiter"], json!(";"));
        assert_eq!(value["table"]["rows"], json!(3));
        assert_eq!(value["truncated"], json!(false));
        assert_eq!(fixture.runs(), 1);
    }

    #[test]
    fn sql_tables_are_cached_by_content_and_reloaded_when_it_changes() {
        let fixture = Fixture::new();
        fixture.file("sales.csv", SALES, None);
        let sql = json!({"path": "sales.csv", "op": "sql", "sql": "SELECT count(*) AS n FROM t"});
        assert_eq!(fixture.ok(sql.clone())["rows"], json!([[3]]));
        assert_eq!(fixture.ok(sql.clone())["rows"], json!([[3]]));
        assert_eq!(fixture.runs(), 1, "the second query used the cached table");
        fixture.file("sales.csv", b"region;amount\nwest;1\n", None);
        assert_eq!(fixture.ok(sql)["rows"], json!([[1]]));
        assert_eq!(fixture.runs(), 2, "a changed file is parsed again");
    }

    #[test]
    fn sql_escapes_are_refused_through_the_tool_and_create_nothing() {
        let fixture = Fixture::new();
        fixture.file("sales.csv", SALES, None);
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("out.db");
        for sql in [
            format!("ATTACH '{}' AS o", target.display()),
            format!("SELECT 1; ATTACH 'file:{}?mode=rwc' AS o", target.display()),
            format!("VACUUM INTO '{}'", target.display()),
            "SELECT load_extension('/tmp/evil.so')".to_owned(),
            "PRAGMA writable_schema = 1".to_owned(),
        ] {
            let message = fixture.error(json!({"path": "sales.csv", "op": "sql", "sql": sql}));
            assert!(
                message.starts_with("`sales.csv`: sql: "),
                "{sql}: {message}"
            );
        }
        assert!(!target.exists());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn bad_requests_are_clear_errors() {
        let fixture = Fixture::new();
        fixture.file("sales.csv", SALES, None);
        let message = fixture.error(json!({"path": "sales.csv", "op": "sql"}));
        assert!(message.contains("needs `sql`"), "{message}");
        let message =
            fixture.error(json!({"path": "sales.csv", "op": "sort", "order_by": "price"}));
        assert!(message.contains("region, amount, day"), "{message}");
        let message = fixture.error(json!({"path": "sales.csv", "op": "explode"}));
        assert!(message.contains("group_by"), "{message}");
        std::fs::write(fixture.workspace.path().join("notes.pdf"), "%PDF").unwrap();
        let message = fixture.error(json!({"path": "notes.pdf", "op": "schema"}));
        assert!(message.contains("not a table"), "{message}");
    }

    #[test]
    fn path_escapes_are_denied() {
        let fixture = Fixture::new();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.csv"), "a\n1\n").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.csv"),
            fixture.workspace.path().join("link.csv"),
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path(), fixture.workspace.path().join("dir")).unwrap();
        let absolute = outside.path().join("secret.csv");
        for path in [
            "../secret.csv",
            absolute.to_str().unwrap(),
            "link.csv",
            "dir/secret.csv",
        ] {
            let output = fixture.call(json!({"path": path, "op": "head"}));
            assert!(
                matches!(output, ToolOutput::Denied(_)),
                "{path}: {output:?}"
            );
        }
        assert_eq!(fixture.runs(), 0, "nothing was parsed");
    }

    #[test]
    fn a_parser_error_names_the_file() {
        let fixture = Fixture::new();
        fixture.file("broken.json", b"[{\"a\": ", None);
        let message = fixture.error(json!({"path": "broken.json", "op": "schema"}));
        assert!(
            message.starts_with("`broken.json`: the file cannot be read"),
            "{message}"
        );
    }
}
