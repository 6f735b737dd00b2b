//! `analyze_table`: CSV, XLSX sheets and JSON arrays as a [`Table`], the operations on
//! it ([`ops`]), and SQL over it on a jailed in-memory SQLite ([`sql`]).
//!
//! Loading ([`load`]) runs in the parser child: hostile files never parse in the
//! service. `analyze_table` runs [`analyze`] there too (`Job::Analyze`): the table is
//! read, the operation or the SQL query runs on it in the child, and only the answer,
//! cut while it is gathered ([`bounded`]), goes back to the service.
//!
//! Types are inferred per column ([`ColumnType`]): `integer`, `float`, `boolean`,
//! `date` (ISO `YYYY-MM-DD` or `YYYY-MM-DD HH:MM:SS`, stored as text) or `text`. A
//! column is of the narrowest type every non-empty cell fits; empty cells are nulls.

pub mod bounded;
mod csv;
mod infer;
mod json;
pub mod ops;
pub mod sql;
mod xlsx;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{DocsError, Format};

pub use ops::{Query, ResultSet};
pub use sql::{SqlLimits, SqlTable};

/// What an XLSX formula cell without a cached value reads as: the formula followed by
/// this suffix (e.g. `=SUM(A1:A3) (formula, no cached value)`), never an empty cell.
pub const NO_CACHED_VALUE: &str = " (formula, no cached value)";

/// A table read from a file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Table {
    /// The columns, in file order; every column holds `row_count` values.
    pub columns: Vec<Column>,
    /// The number of rows read.
    pub row_count: usize,
    /// Whether the file has more rows than were read (the `max_rows` cap).
    pub truncated: bool,
    /// XLSX: every sheet's name, in workbook order; empty for other formats.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sheets: Vec<String>,
    /// XLSX: the sheet read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sheet: Option<String>,
    /// CSV: the text encoding the bytes were decoded from (`UTF-8`, `GBK`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// CSV: the field delimiter found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<char>,
}

/// What a call's answer says of the table it ran on (everything but the values).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableInfo {
    /// Rows read.
    pub rows: usize,
    /// Columns.
    pub columns: usize,
    /// Whether the file has more rows than were read.
    pub truncated: bool,
    /// XLSX: the sheet read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sheet: Option<String>,
    /// XLSX: every sheet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sheets: Vec<String>,
    /// CSV: the encoding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// CSV: the delimiter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<char>,
}

impl Table {
    /// The table without its values.
    pub fn info(&self) -> TableInfo {
        TableInfo {
            rows: self.row_count,
            columns: self.columns.len(),
            truncated: self.truncated,
            sheet: self.sheet.clone(),
            sheets: self.sheets.clone(),
            encoding: self.encoding.clone(),
            delimiter: self.delimiter,
        }
    }

    /// The index of the column called `name`, or a [`DocsError::BadRequest`] that lists
    /// the columns.
    pub fn column_index(&self, name: &str) -> Result<usize, DocsError> {
        self.columns
            .iter()
            .position(|column| column.name == name)
            .ok_or_else(|| {
                DocsError::BadRequest(format!(
                    "unknown column {name:?}; the columns are: {}",
                    self.column_names().join(", ")
                ))
            })
    }

    /// The column names.
    pub fn column_names(&self) -> Vec<&str> {
        self.columns
            .iter()
            .map(|column| column.name.as_str())
            .collect()
    }
}

/// One column: its name, inferred type and values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// The header (made unique: `name_2` for a repeated header, `column_3` for an empty
    /// one).
    pub name: String,
    /// The inferred type.
    #[serde(rename = "type")]
    pub kind: ColumnType,
    /// One value per row.
    pub values: Vec<Cell>,
}

pp_types::wire_enum! {
    /// A column's inferred type.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum ColumnType {
        /// Whole numbers (64-bit).
        Integer => "integer",
        /// Numbers with a fraction (64-bit floating point).
        Float => "float",
        /// `true` / `false`.
        Boolean => "boolean",
        /// Dates (and date-times) as ISO text.
        Date => "date",
        /// Anything else.
        Text => "text",
    }
}

impl ColumnType {
    /// Whether the type is numeric.
    pub fn is_numeric(self) -> bool {
        matches!(self, ColumnType::Integer | ColumnType::Float)
    }
}

/// One value. Serialised as the plain JSON value (`null`, a number, a boolean, a
/// string); dates are ISO strings.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Empty.
    Null,
    /// A boolean.
    Bool(bool),
    /// A whole number.
    Int(i64),
    /// A floating-point number (never NaN or infinite).
    Float(f64),
    /// Text, or a date as ISO text.
    Text(String),
}

impl Cell {
    /// The value as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Cell::Null => serde_json::Value::Null,
            Cell::Bool(value) => serde_json::Value::Bool(*value),
            Cell::Int(value) => serde_json::Value::from(*value),
            Cell::Float(value) => serde_json::Number::from_f64(*value)
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
            Cell::Text(value) => serde_json::Value::String(value.clone()),
        }
    }

    /// The value as a number, if it is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            #[expect(clippy::cast_precision_loss, reason = "statistics are approximate")]
            Cell::Int(value) => Some(*value as f64),
            Cell::Float(value) => Some(*value),
            _ => None,
        }
    }

    /// The value as text (numbers and booleans formatted; null is empty).
    pub fn to_text(&self) -> String {
        match self {
            Cell::Null => String::new(),
            Cell::Bool(value) => value.to_string(),
            Cell::Int(value) => value.to_string(),
            Cell::Float(value) => value.to_string(),
            Cell::Text(value) => value.clone(),
        }
    }
}

impl Serialize for Cell {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Cell::Null => serializer.serialize_none(),
            Cell::Bool(value) => serializer.serialize_bool(*value),
            Cell::Int(value) => serializer.serialize_i64(*value),
            Cell::Float(value) if value.is_finite() => serializer.serialize_f64(*value),
            Cell::Float(_) => serializer.serialize_none(),
            Cell::Text(value) => serializer.serialize_str(value),
        }
    }
}

impl<'de> Deserialize<'de> for Cell {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CellVisitor;
        impl Visitor<'_> for CellVisitor {
            type Value = Cell;
            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("null, a boolean, a number or a string")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Cell, E> {
                Ok(Cell::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Cell, E> {
                Ok(Cell::Null)
            }
            fn visit_bool<E: de::Error>(self, value: bool) -> Result<Cell, E> {
                Ok(Cell::Bool(value))
            }
            fn visit_i64<E: de::Error>(self, value: i64) -> Result<Cell, E> {
                Ok(Cell::Int(value))
            }
            fn visit_u64<E: de::Error>(self, value: u64) -> Result<Cell, E> {
                Ok(i64::try_from(value).map_or_else(
                    |_| {
                        #[expect(clippy::cast_precision_loss, reason = "beyond i64")]
                        let float = value as f64;
                        Cell::Float(float)
                    },
                    Cell::Int,
                ))
            }
            fn visit_f64<E: de::Error>(self, value: f64) -> Result<Cell, E> {
                Ok(Cell::Float(value))
            }
            fn visit_str<E: de::Error>(self, value: &str) -> Result<Cell, E> {
                Ok(Cell::Text(value.to_owned()))
            }
            fn visit_string<E: de::Error>(self, value: String) -> Result<Cell, E> {
                Ok(Cell::Text(value))
            }
        }
        deserializer.deserialize_any(CellVisitor)
    }
}

/// Reads `bytes` as a table of `format` (`sheet` for XLSX: by name, the first when
/// `None`), at most `max_rows` rows (`truncated` says when there were more).
pub fn load(
    bytes: &[u8],
    format: Format,
    sheet: Option<&str>,
    max_rows: usize,
) -> Result<Table, DocsError> {
    if sheet.is_some() && format != Format::Xlsx {
        return Err(DocsError::BadRequest(format!(
            "`sheet` is for XLSX workbooks only; this file is {format}"
        )));
    }
    match format {
        Format::Csv | Format::Txt => csv::load(bytes, max_rows),
        Format::Xlsx => xlsx::load(bytes, sheet, max_rows),
        Format::Json => json::load(bytes, max_rows),
        other => Err(DocsError::Unsupported(format!(
            "{other} is not a table format; analyze_table reads csv, tsv, xlsx and json"
        ))),
    }
}

/// What [`analyze`] answers: the operation's result and what was read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// The rows, cut to the answer's size.
    pub result: ResultSet,
    /// The table read (without its values).
    pub table: TableInfo,
}

/// Reads `bytes` as a table ([`load`]) and runs `query` on it: an operation
/// ([`ops::run`]) or SQL ([`SqlTable`], `query_starts` called once the table is loaded
/// and the query starts). The rows are cut to `limits.max_answer_chars` characters.
pub fn analyze(
    bytes: &[u8],
    format: Format,
    sheet: Option<&str>,
    max_rows: usize,
    query: &Query,
    limits: SqlLimits,
    query_starts: &mut dyn FnMut(),
) -> Result<Analysis, DocsError> {
    let table = load(bytes, format, sheet, max_rows)?;
    let info = table.info();
    let result = match (query.op, query.sql.as_deref()) {
        (ops::Op::Sql, Some(sql)) => {
            let mut database = SqlTable::load(&table, limits)?;
            // SQLite holds its own copy now.
            drop(table);
            let limit = query
                .limit
                .unwrap_or(ops::DEFAULT_LIMIT)
                .min(ops::MAX_LIMIT);
            query_starts();
            database.query(sql, limit)?
        }
        (ops::Op::Sql, None) => {
            return Err(DocsError::BadRequest(
                "op \"sql\" needs `sql`: one SELECT on the table t".to_owned(),
            ));
        }
        _ => ops::run(&table, query)?.bounded(limits.max_answer_chars),
    };
    Ok(Analysis {
        result,
        table: info,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_round_trip_as_plain_json() {
        let cells = vec![
            Cell::Null,
            Cell::Bool(true),
            Cell::Int(-3),
            Cell::Float(1.5),
            Cell::Float(2.0),
            Cell::Text("x".to_owned()),
        ];
        let json = serde_json::to_string(&cells).unwrap();
        assert_eq!(json, r#"[null,true,-3,1.5,2.0,"x"]"#);
        let back: Vec<Cell> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, cells);
    }

    #[test]
    fn non_table_formats_and_sheets_outside_xlsx_are_refused() {
        let error = load(b"%PDF", Format::Pdf, None, 10).unwrap_err();
        assert!(matches!(error, DocsError::Unsupported(_)), "{error}");
        let error = load(b"a\n1\n", Format::Csv, Some("x"), 10).unwrap_err();
        assert!(error.to_string().contains("XLSX"), "{error}");
    }
}
