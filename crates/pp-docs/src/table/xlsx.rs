//! XLSX sheets through `office_oxide`: cached values of formulas, dates from the cell's
//! number format (1900 or 1904 date system) as ISO text; the first non-empty row is the
//! header.

use office_oxide::xlsx::XlsxDocument;
use office_oxide::xlsx::cell::CellValue;
use office_oxide::xlsx::date::{DateTimeValue, is_date_cell};

use super::infer::{Value, typed_column, unique_names};
use super::{NO_CACHED_VALUE, Table};
use crate::DocsError;

/// The widest sheet read (columns); cells further right are ignored.
const MAX_COLUMNS: usize = 16_384;

/// Reads the sheet `sheet` (the first when `None`) of the workbook `bytes`.
pub(super) fn load(bytes: &[u8], sheet: Option<&str>, max_rows: usize) -> Result<Table, DocsError> {
    let mut document = XlsxDocument::from_reader(std::io::Cursor::new(bytes)).map_err(|error| {
        let message = error.to_string();
        if message.contains("encrypted") {
            DocsError::Encrypted
        } else {
            DocsError::Malformed(format!("the XLSX workbook cannot be read: {message}"))
        }
    })?;
    let names: Vec<String> = document
        .worksheets
        .iter()
        .map(|worksheet| worksheet.name.clone())
        .collect();
    let index = match sheet {
        None => 0,
        Some(wanted) => names
            .iter()
            .position(|name| name == wanted)
            .or_else(|| {
                names
                    .iter()
                    .position(|name| name.eq_ignore_ascii_case(wanted))
            })
            .ok_or_else(|| {
                DocsError::BadRequest(format!(
                    "no sheet {wanted:?} in this workbook; its sheets are: {}",
                    names.join(", ")
                ))
            })?,
    };
    if names.is_empty() {
        return Err(DocsError::Malformed(
            "the workbook has no sheets".to_owned(),
        ));
    }
    let date1904 = document.workbook.date1904;
    document.ensure_styles();
    let styles = document.styles.as_ref();
    let shared = &document.shared_strings;
    let worksheet = &document.worksheets[index];

    // Every row as values placed by column; empty rows are skipped.
    let mut rows: Vec<Vec<Value>> = Vec::new();
    let mut truncated = false;
    for row in &worksheet.rows {
        let mut values: Vec<Value> = Vec::new();
        for cell in &row.cells {
            let column = cell.reference.col as usize;
            if column >= MAX_COLUMNS {
                continue;
            }
            let value = match &cell.value {
                CellValue::Empty => match cell.formula() {
                    Some(formula) => Value::Text(format!("={formula}{NO_CACHED_VALUE}")),
                    None => Value::Null,
                },
                CellValue::Number(number) if is_date_cell(cell.style_index, styles) => {
                    match DateTimeValue::from_serial(*number, date1904) {
                        Some(date) => Value::Date(date.to_iso_string()),
                        None => number_value(*number),
                    }
                }
                CellValue::Number(number) => number_value(*number),
                CellValue::String(text) => Value::Text(text.clone()),
                CellValue::SharedString(at) => {
                    Value::Text(shared.get(*at).unwrap_or_default().to_owned())
                }
                CellValue::Boolean(value) => Value::Bool(*value),
                CellValue::Error(code) => Value::Text(code.clone()),
                CellValue::Date(date) => Value::Date(date.to_iso_string()),
            };
            if value == Value::Null {
                continue;
            }
            if values.len() <= column {
                values.resize(column + 1, Value::Null);
            }
            values[column] = value;
        }
        if values.is_empty() {
            continue;
        }
        // The header plus `max_rows` rows.
        if rows.len() > max_rows {
            truncated = true;
            break;
        }
        rows.push(values);
    }
    let mut rows = rows.into_iter();
    let header: Vec<String> = rows
        .next()
        .unwrap_or_default()
        .into_iter()
        .map(|value| match value {
            Value::Null => String::new(),
            Value::Bool(value) => value.to_string(),
            Value::Int(value) => value.to_string(),
            Value::Float(value) => value.to_string(),
            Value::Date(text) | Value::Text(text) => text,
        })
        .collect();
    let rows: Vec<Vec<Value>> = rows.collect();
    let width = rows
        .iter()
        .map(Vec::len)
        .max()
        .unwrap_or(0)
        .max(header.len());
    let mut header = header;
    header.resize(width, String::new());
    let row_count = rows.len();
    let mut columns: Vec<Vec<Value>> = vec![Vec::with_capacity(row_count); width];
    for row in rows {
        let mut row = row.into_iter();
        for column in &mut columns {
            column.push(row.next().unwrap_or(Value::Null));
        }
    }
    let columns = unique_names(header)
        .into_iter()
        .zip(columns)
        .map(|(name, values)| typed_column(name, values))
        .collect();
    Ok(Table {
        columns,
        row_count,
        truncated,
        sheet: Some(names[index].clone()),
        sheets: names,
        ..Table::default()
    })
}

/// A number: whole numbers (within f64's exact range) are integers.
fn number_value(number: f64) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if number.fract() == 0.0 && number.abs() < EXACT {
        #[expect(clippy::cast_possible_truncation, reason = "whole and within range")]
        let whole = number as i64;
        Value::Int(whole)
    } else if number.is_finite() {
        Value::Float(number)
    } else {
        Value::Null
    }
}
