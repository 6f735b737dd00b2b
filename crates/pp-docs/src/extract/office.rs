//! DOCX, XLSX and PPTX with `office_oxide`, as Markdown: headings, lists, tables,
//! headers and footers (DOCX), one sheet (XLSX, cached values of formulas) or slide
//! (PPTX, with its speaker notes) per "page".

use std::io::Cursor;

use office_oxide::{DocumentFormat, OfficeError};

use super::{Extracted, select_pages, single_page};
use crate::{DocsError, Format};

/// The Markdown of an Office document.
pub(super) fn extract(
    bytes: &[u8],
    format: Format,
    pages: Option<&str>,
) -> Result<Extracted, DocsError> {
    let office_format = match format {
        Format::Docx => DocumentFormat::Docx,
        Format::Xlsx => DocumentFormat::Xlsx,
        _ => DocumentFormat::Pptx,
    };
    let document = office_oxide::Document::from_reader(Cursor::new(bytes.to_vec()), office_format)
        .map_err(|error| office_error(&error))?;
    if let Some(docx) = document.as_docx() {
        single_page(pages)?;
        return Ok(Extracted {
            pages: 1,
            title: title(docx.core_properties.as_ref()),
            encoding: None,
            text: document.to_markdown().trim().to_owned(),
        });
    }
    if let Some(xlsx) = document.as_xlsx() {
        let count = xlsx.worksheets.len();
        let mut parts = Vec::new();
        for page in select_pages(pages, count)? {
            let name = xlsx
                .worksheets
                .get(page - 1)
                .map(|sheet| sheet.name.as_str())
                .unwrap_or_default();
            let markdown = xlsx.sheet_to_markdown(page - 1).unwrap_or_default();
            let mut part = format!("--- sheet {page}: {name} ---\n{}", markdown.trim());
            if let Some(sheet) = xlsx.worksheets.get(page - 1) {
                part.push_str(&uncached_formulas(sheet));
            }
            parts.push(part);
        }
        return Ok(Extracted {
            pages: count,
            title: title(xlsx.core_properties.as_ref()),
            encoding: None,
            text: parts.join("\n\n"),
        });
    }
    if let Some(pptx) = document.as_pptx() {
        let count = pptx.slides.len();
        let mut parts = Vec::new();
        for page in select_pages(pages, count)? {
            let markdown = pptx.slide_to_markdown(page - 1).unwrap_or_default();
            parts.push(format!("--- slide {page} ---\n{}", markdown.trim()));
        }
        return Ok(Extracted {
            pages: count,
            title: title(pptx.core_properties.as_ref()),
            encoding: None,
            text: parts.join("\n\n"),
        });
    }
    Err(DocsError::Unsupported(format!(
        "the file is not a {format} document (it holds a {:?} document)",
        document.format()
    )))
}

/// A note naming the formula cells of `sheet` that have no cached value (the table
/// shows them empty; PocketPilot computes no formulas), or nothing.
fn uncached_formulas(sheet: &office_oxide::xlsx::Worksheet) -> String {
    use office_oxide::xlsx::CellValue;
    let uncached: Vec<String> = sheet
        .rows
        .iter()
        .flat_map(|row| &row.cells)
        .filter(|cell| match &cell.value {
            CellValue::Empty => true,
            CellValue::String(text) => text.is_empty(),
            _ => false,
        })
        .filter_map(|cell| {
            let formula = cell.formula()?;
            Some(format!("{} ={formula}", cell.reference))
        })
        .take(50)
        .collect();
    if uncached.is_empty() {
        return String::new();
    }
    format!(
        "\n[formula cells without a cached value (shown empty; not computed): {}]",
        uncached.join(", ")
    )
}

/// The title in the document's core properties, if it has a non-empty one.
fn title(properties: Option<&office_oxide::core::properties::CoreProperties>) -> Option<String> {
    properties
        .and_then(|properties| properties.title.as_deref())
        .map(str::trim)
        .filter(|title| !title.is_empty())
        .map(str::to_owned)
}

/// The error for a document `office_oxide` refused.
fn office_error(error: &OfficeError) -> DocsError {
    let message = error.to_string();
    let lower = message.to_lowercase();
    if lower.contains("password") || lower.contains("encrypted") {
        return DocsError::Encrypted;
    }
    if lower.contains("limit") || lower.contains("decompress") || lower.contains("ratio") {
        return DocsError::Malformed(format!(
            "{message} (the package expands beyond the safe size: a zip bomb?)"
        ));
    }
    DocsError::Malformed(message)
}
