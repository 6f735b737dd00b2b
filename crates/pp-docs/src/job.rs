//! What the parent asks of the parser child, and what it answers: the protocol of
//! `pocketpilot __parse`.

use serde::{Deserialize, Serialize};

use crate::extract::{Document, ExtractOptions};
use crate::invoice::InvoiceDraft;
use crate::table::Table;
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
}

/// Runs `job` on `bytes` in this process (the child's body; tests call it directly).
pub fn run_job(job: &Job, bytes: &[u8]) -> Result<JobOutput, DocsError> {
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
    }
}
