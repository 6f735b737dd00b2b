//! What the parent asks of the parser child, and what it answers: the protocol of
//! `pocketpilot __parse`.

use serde::{Deserialize, Serialize};

use crate::extract::{Document, ExtractOptions};
use crate::invoice::InvoiceDraft;
use crate::table::ops::Query;
use crate::table::{Analysis, SqlLimits, Table};
use crate::{DocsError, Format};

/// One piece of parsing work on one file's bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "job", rename_all = "snake_case")]
pub enum Job {
    /// A document's text.
    Extract {
        /// The format to read the bytes as.
        format: Format,
        /// Pages and size cap.
        options: ExtractOptions,
    },
    /// A table.
    Table {
        /// The format to read the bytes as.
        format: Format,
        /// The XLSX sheet (the first when `None`).
        sheet: Option<String>,
        /// The most rows to read.
        max_rows: usize,
    },
    /// One invoice.
    Invoice {
        /// The format to read the bytes as.
        format: Format,
    },
    /// `analyze_table`: a table read, then an operation or SQL run on it, all in this
    /// process; only the answer, cut to `limits.max_answer_chars`, leaves it.
    Analyze {
        /// The format to read the bytes as.
        format: Format,
        /// The XLSX sheet (the first when `None`).
        sheet: Option<String>,
        /// The most rows to read.
        max_rows: usize,
        /// The operation (boxed: it is far larger than the other jobs).
        query: Box<Query>,
        /// The SQL limits; `max_answer_chars` bounds every operation's answer.
        limits: SqlLimits,
    },
}

impl Job {
    /// How long the query of this job may run once the table is loaded (SQL only): the
    /// child says when it starts ([`run_job_reporting`]) and the parent kills it soon
    /// after this limit, should one function call run on past the progress handler.
    pub fn query_timeout(&self) -> Option<std::time::Duration> {
        match self {
            Job::Analyze { query, limits, .. } if query.op == crate::table::ops::Op::Sql => {
                Some(limits.timeout)
            }
            _ => None,
        }
    }
}

/// The answer to a [`Job`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "output", content = "value", rename_all = "snake_case")]
pub enum JobOutput {
    /// For [`Job::Extract`].
    Document(Document),
    /// For [`Job::Table`].
    Table(Table),
    /// For [`Job::Invoice`].
    Invoice(InvoiceDraft),
    /// For [`Job::Analyze`].
    Analysis(Analysis),
}

/// Runs `job` on `bytes` in this process (the child's body; tests call it directly).
pub fn run_job(job: &Job, bytes: &[u8]) -> Result<JobOutput, DocsError> {
    run_job_reporting(job, bytes, &mut || {})
}

/// [`run_job`], calling `query_starts` when a SQL query starts on the loaded table (the
/// child tells its parent then; see [`Job::query_timeout`]).
pub fn run_job_reporting(
    job: &Job,
    bytes: &[u8],
    query_starts: &mut dyn FnMut(),
) -> Result<JobOutput, DocsError> {
    match job {
        Job::Extract { format, options } => {
            crate::extract::extract(bytes, *format, options).map(JobOutput::Document)
        }
        Job::Table {
            format,
            sheet,
            max_rows,
        } => crate::table::load(bytes, *format, sheet.as_deref(), *max_rows).map(JobOutput::Table),
        Job::Invoice { format } => crate::invoice::read(bytes, *format).map(JobOutput::Invoice),
        Job::Analyze {
            format,
            sheet,
            max_rows,
            query,
            limits,
        } => crate::table::analyze(
            bytes,
            *format,
            sheet.as_deref(),
            *max_rows,
            query,
            *limits,
            query_starts,
        )
        .map(JobOutput::Analysis),
    }
}
