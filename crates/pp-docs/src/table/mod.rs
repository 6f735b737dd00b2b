//! `analyze_table`: CSV, XLSX sheets and JSON arrays as a [`Table`], the operations on
//! it, and SQL over it on a jailed in-memory SQLite.

use serde::{Deserialize, Serialize};

use crate::{DocsError, Format};

/// A table read from a file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Table {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows of JSON values (`null`, numbers, strings, booleans).
    pub rows: Vec<Vec<serde_json::Value>>,
}

/// Reads `bytes` as a table of `format` (`sheet` for XLSX).
pub fn load(
    _bytes: &[u8],
    format: Format,
    _sheet: Option<&str>,
    _max_rows: usize,
) -> Result<Table, DocsError> {
    Err(DocsError::Unsupported(format!("{format} (not built yet)")))
}
