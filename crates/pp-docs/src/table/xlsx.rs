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

#[cfg(test)]
pub(crate) mod tests {
    use std::io::Write;

    use super::*;
    use crate::table::{Cell, ColumnType};

    /// A two-sheet workbook: `Sales` with a date column (built-in format 14), numbers, a
    /// formula with a cached value and one without; `Notes` with an inline string.
    pub(crate) fn workbook(date1904: bool) -> Vec<u8> {
        let files = [
            (
                "[Content_Types].xml",
                r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName="/xl/worksheets/sheet2.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/><Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>"#.to_owned(),
            ),
            (
                "_rels/.rels",
                r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#.to_owned(),
            ),
            (
                "xl/workbook.xml",
                format!(
                    r#"<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><workbookPr date1904="{}"/><sheets><sheet name="Sales" sheetId="1" r:id="rId1"/><sheet name="Notes" sheetId="2" r:id="rId2"/></sheets></workbook>"#,
                    u8::from(date1904)
                ),
            ),
            (
                "xl/_rels/workbook.xml.rels",
                r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet2.xml"/><Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/><Relationship Id="rId4" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>"#.to_owned(),
            ),
            (
                "xl/styles.xml",
                r#"<?xml version="1.0" encoding="UTF-8"?><styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts><fills count="1"><fill><patternFill patternType="none"/></fill></fills><borders count="1"><border/></borders><cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs><cellXfs count="2"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/><xf numFmtId="14" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/></cellXfs></styleSheet>"#.to_owned(),
            ),
            (
                "xl/sharedStrings.xml",
                r#"<?xml version="1.0" encoding="UTF-8"?><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="4" uniqueCount="4"><si><t>day</t></si><si><t>amount</t></si><si><t>total</t></si><si><t>note</t></si></sst>"#.to_owned(),
            ),
            (
                "xl/worksheets/sheet1.xml",
                r#"<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="C1" t="s"><v>2</v></c></row><row r="2"><c r="A2" s="1"><v>45292</v></c><c r="B2"><v>10</v></c><c r="C2"><f>B2*2</f><v>20</v></c></row><row r="3"><c r="A3" s="1"><v>45293</v></c><c r="B3"><v>2.5</v></c><c r="C3"><f>SUM(B2:B3)</f></c></row></sheetData></worksheet>"#.to_owned(),
            ),
            (
                "xl/worksheets/sheet2.xml",
                r#"<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="s"><v>3</v></c></row><row r="2"><c r="A2" t="inlineStr"><is><t>hello</t></is></c></row></sheetData></worksheet>"#.to_owned(),
            ),
        ];
        let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, content) in files {
            writer
                .start_file(name, zip::write::SimpleFileOptions::default())
                .unwrap();
            writer.write_all(content.as_bytes()).unwrap();
        }
        writer.finish().unwrap().into_inner()
    }

    #[test]
    fn dates_cached_formula_values_and_formulas_without_one() {
        let table = load(&workbook(false), None, 100).unwrap();
        assert_eq!(table.sheets, ["Sales", "Notes"]);
        assert_eq!(table.sheet.as_deref(), Some("Sales"));
        assert_eq!(table.column_names(), ["day", "amount", "total"]);
        assert_eq!(table.columns[0].kind, ColumnType::Date);
        assert_eq!(
            table.columns[0].values,
            [
                Cell::Text("2024-01-01".to_owned()),
                Cell::Text("2024-01-02".to_owned())
            ]
        );
        assert_eq!(table.columns[1].kind, ColumnType::Float);
        assert_eq!(
            table.columns[2].values,
            [
                Cell::Text("20".to_owned()),
                Cell::Text(format!("=SUM(B2:B3){NO_CACHED_VALUE}"))
            ],
            "the cached value, and a formula without one said so, never empty"
        );
    }

    #[test]
    fn the_1904_date_system_is_honoured() {
        let table = load(&workbook(true), None, 100).unwrap();
        assert_eq!(
            table.columns[0].values[0],
            Cell::Text("2028-01-02".to_owned()),
            "1,462 days after the 1900 system's date"
        );
    }

    #[test]
    fn sheets_are_chosen_by_name_and_unknown_ones_listed() {
        let table = load(&workbook(false), Some("notes"), 100).unwrap();
        assert_eq!(table.sheet.as_deref(), Some("Notes"));
        assert_eq!(table.columns[0].values, [Cell::Text("hello".to_owned())]);
        let error = load(&workbook(false), Some("Missing"), 100).unwrap_err();
        assert!(error.to_string().contains("Sales, Notes"), "{error}");
        let table = load(&workbook(false), None, 1).unwrap();
        assert_eq!(table.row_count, 1);
        assert!(table.truncated);
    }

    #[test]
    fn junk_is_a_clear_error() {
        let error = load(b"PK\x03\x04 not really", None, 10).unwrap_err();
        assert!(matches!(error, DocsError::Malformed(_)), "{error}");
    }
}
