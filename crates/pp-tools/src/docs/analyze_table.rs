//! `analyze_table`: schema, statistics, filters, sorting, groups and SQL over a CSV,
//! XLSX sheet or JSON array.
//!
//! ## What it does
//! Reads the file through the jail ([`super::input::read_document`]) and hands it to the
//! parser child with the query (`Job::Analyze`): the child parses it into a typed table
//! of at most [`MAX_TABLE_ROWS`] rows and runs `op` on it there — `schema`,
//! `describe`, `head`, `filter`, `sort`, `group_by` ([`pp_docs::table::ops`]), or `sql`
//! on a jailed in-memory SQLite copy ([`pp_docs::table::sql`]) — so neither a hostile
//! file nor a hostile query runs in the service. Tables are not cached: every call
//! parses the file again (a SQL table lived in the service before, and one query could
//! take the service's memory with it). The child cuts rows and cells to the output cap
//! while it reads them; it is killed at its limits, soon after a SQL query's time limit
//! and on the task's interrupt. The answer is `{path, op, columns, rows, truncated,
//! total_rows, table}` (`table`: rows and columns read, sheet and sheets, encoding,
//! delimiter, whether the file had more rows than were read), at most
//! [`pp_docs::table::ops::MAX_LIMIT`] rows and the provider's output character cap
//! (rows are dropped and cells cut to fit, and `truncated` and `note` say so).
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
use pp_docs::table::SqlLimits;
use pp_docs::table::ops::{
    AGGREGATE_FNS, Aggregate, CONDITION_OPS, Condition, MAX_LIMIT, OPS, Op, Query,
};
use pp_docs::{DocsError, Format, Job, JobOutput};
use pp_gate::Jail;
use pp_types::{ToolOutput, ToolSpec};

use super::input::read_spec;
use serde::Deserialize;
use serde_json::{Value, json};

use super::input::read_document;
use super::settings::DocsSettings;
use super::table_answer::answer;
use crate::args::parse;
use crate::blocking::SyncTool;
use crate::files::common::respond;

/// The most rows read from one file.
pub(crate) const MAX_TABLE_ROWS: usize = 1_000_000;

/// Characters of the output cap kept for the answer's envelope (path, columns, table)
/// when the child cuts the rows: at most this, at most half the cap.
const ENVELOPE_CHARS: usize = 2_000;

/// What the model reads about the tool.
const DESCRIPTION: &str = "Analyze a table file in the workspace: CSV/TSV (any delimiter, \
UTF-8 or GBK), an XLSX sheet (`sheet`, default the first) or a JSON array. `op`: schema \
(columns, types, nulls), describe (count, nulls, distinct, min/max/mean, top values), head, \
filter (`where`), sort (`order_by`, `descending`), group_by (`by`, `aggregates` \
[{column, fn}] with fn count|sum|mean|min|max), or sql (one read-only SELECT in `sql`; the \
table is named t). `where` is a list of {column, op, value} with op = != < <= > >= \
contains starts_with in is_null not_null, all of which must hold. Returns {columns, rows, \
truncated, total_rows, table}; at most 1000 rows (`limit`, default 200, head 10).";

/// The arguments of `analyze_table`: the file, and the query the child runs on it.
#[derive(Debug, Deserialize)]
pub(crate) struct Arguments<'a> {
    /// The table file, relative to the workspace root.
    pub(crate) path: &'a str,
    /// XLSX: the sheet (default: the first).
    #[serde(borrow)]
    pub(crate) sheet: Option<&'a str>,
    /// The operation.
    pub(crate) op: Op,
    /// The columns to show (default: all).
    pub(crate) columns: Option<Vec<String>>,
    /// Conditions every row kept must meet.
    #[serde(rename = "where")]
    pub(crate) conditions: Option<Vec<Condition>>,
    /// `group_by`: the key column or columns.
    pub(crate) by: Option<OneOrMany>,
    /// `group_by`: what to compute per group (default: count).
    pub(crate) aggregates: Option<Vec<Aggregate>>,
    /// The column to sort by.
    pub(crate) order_by: Option<String>,
    /// Sort from the largest (default false).
    pub(crate) descending: Option<bool>,
    /// The most rows to return.
    pub(crate) limit: Option<usize>,
    /// `sql`: one `SELECT` on the table `t`.
    pub(crate) sql: Option<String>,
}

/// `by`: one column or a list of them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum OneOrMany {
    /// One column.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl Arguments<'_> {
    /// The query the parser child runs.
    fn query(self) -> Query {
        Query {
            op: self.op,
            columns: self.columns,
            conditions: self.conditions.unwrap_or_default(),
            by: match self.by {
                None => Vec::new(),
                Some(OneOrMany::One(one)) => vec![one],
                Some(OneOrMany::Many(many)) => many,
            },
            aggregates: self.aggregates.unwrap_or_default(),
            order_by: self.order_by,
            descending: self.descending.unwrap_or(false),
            limit: self.limit,
            sql: self.sql,
        }
    }
}

/// The `analyze_table` tool.
pub(crate) struct AnalyzeTable {
    jail: Arc<Jail>,
    settings: Arc<DocsSettings>,
    spec: ToolSpec,
}

impl AnalyzeTable {
    pub(crate) fn new(jail: Arc<Jail>, settings: Arc<DocsSettings>) -> Self {
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
            spec,
        }
    }

    fn run(&self, context: &ToolContext, arguments: &Value) -> Result<String, ToolOutput> {
        let arguments: Arguments<'_> = parse(arguments)?;
        let (path, sheet) = (arguments.path, arguments.sheet);
        let query = arguments.query();
        if query.op == Op::Sql && query.sql.is_none() {
            return Err(ToolOutput::error(
                "op \"sql\" needs `sql`: one SELECT on the table t, e.g. \
                 SELECT region, sum(amount) FROM t GROUP BY region",
            ));
        }
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
        if context.should_stop() {
            return Err(ToolOutput::error(
                "not run: the task was cancelled or ran out of time",
            ));
        }
        let op = query.op;
        let job = analyze_job(format, sheet, query, self.settings.max_output_chars);
        let failed = |error: DocsError| ToolOutput::error(format!("`{path}`: {error}"));
        // The child parses, queries and cuts; it is killed at its limits, soon after
        // the query's time limit, at the task's deadline and on its interrupt.
        let output = self
            .settings
            .parser
            .run_until(&job, &bytes, context.deadline, &|| context.should_stop())
            .map_err(failed)?;
        drop(bytes);
        let JobOutput::Analysis(analysis) = output else {
            return Err(failed(DocsError::Process(
                "the parser answered something else than an analysis".to_owned(),
            )));
        };
        answer(
            path,
            op,
            analysis.result,
            &analysis.table,
            self.settings.max_output_chars,
        )
    }
}

/// The job the child runs for `query` on a file of `format`: rows cut to the output cap
/// less room for the answer's envelope.
pub(crate) fn analyze_job(
    format: Format,
    sheet: Option<&str>,
    query: Query,
    max_output_chars: usize,
) -> Job {
    Job::Analyze {
        format,
        sheet: sheet.map(str::to_owned),
        max_rows: MAX_TABLE_ROWS,
        query: Box::new(query),
        limits: SqlLimits {
            max_answer_chars: max_output_chars
                .saturating_sub(ENVELOPE_CHARS.min(max_output_chars / 2)),
            ..SqlLimits::default()
        },
    }
}

impl SyncTool for AnalyzeTable {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, context: &ToolContext, arguments: &Value) -> ToolOutput {
        respond(self.run(context, arguments))
    }
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "the tests make workspace files and the fake parser's files behind the jail's back"
)]
mod tests;
