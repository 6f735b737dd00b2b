//! PDF with `pdf_oxide`: positioned spans laid out as on the page ([`crate::layout`]),
//! so labels drawn first and values drawn later still come out on one line.
//!
//! `pdf_oxide` reads the Chinese font classes real invoices use (non-embedded CID fonts
//! with `UniGB-UCS2-H`, Type0/Identity-H subsets, even without their ToUnicode map). An
//! encrypted PDF that does not open with the empty password is refused; a page without
//! text says so (no OCR). Rotated pages get no handling of ours (`pdf_oxide` turns their
//! spans; untested).

use pdf_oxide::PdfDocument;

use super::{Extracted, select_pages};
use crate::DocsError;
use crate::layout::{LayoutSpan, PageLayout};

/// The text of a PDF, laid out.
pub(super) fn extract(bytes: &[u8], pages: Option<&str>) -> Result<Extracted, DocsError> {
    let document = open(bytes)?;
    let count = page_count(&document)?;
    let selected = select_pages(pages, count)?;
    let layouts = selected
        .iter()
        .map(|&page| page_layout(&document, page, count))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Extracted {
        pages: count,
        title: title(&document),
        encoding: None,
        text: crate::layout::render(&layouts),
    })
}

/// The positioned text of `pages` (numbered from 1; all when `None`) of the PDF in
/// `bytes`. A page number beyond the document is a [`DocsError::BadRequest`] naming the
/// page count; an encrypted PDF (one that does not open with the empty password) is
/// [`DocsError::Encrypted`]; a broken one [`DocsError::Malformed`].
pub fn pdf_pages(bytes: &[u8], pages: Option<&[usize]>) -> Result<Vec<PageLayout>, DocsError> {
    let document = open(bytes)?;
    let count = page_count(&document)?;
    let selected: Vec<usize> = match pages {
        Some(pages) => pages.to_vec(),
        None => (1..=count).collect(),
    };
    selected
        .into_iter()
        .map(|page| page_layout(&document, page, count))
        .collect()
}

/// The document, opened (and unlocked with the empty password when it has one).
fn open(bytes: &[u8]) -> Result<PdfDocument, DocsError> {
    if !bytes.starts_with(b"%PDF")
        && !bytes
            .get(..1024)
            .is_some_and(|head| contains(head, b"%PDF-"))
    {
        return Err(DocsError::Malformed(
            "this is not a PDF (no `%PDF-` header)".to_owned(),
        ));
    }
    let document = PdfDocument::from_bytes(bytes.to_vec()).map_err(|error| pdf_error(&error))?;
    if document.is_encrypted() {
        // Owner-password-only files (permissions, no secret) open with the empty password.
        if !matches!(document.authenticate(b""), Ok(true)) {
            return Err(DocsError::Encrypted);
        }
    }
    Ok(document)
}

/// The number of pages.
fn page_count(document: &PdfDocument) -> Result<usize, DocsError> {
    match document.page_count() {
        Ok(0) => Err(DocsError::Malformed("the PDF has no pages".to_owned())),
        Ok(count) => Ok(count),
        Err(error) => Err(pdf_error(&error)),
    }
}

/// Page `page` (from 1) of `count`, its spans in top-left coordinates.
fn page_layout(document: &PdfDocument, page: usize, count: usize) -> Result<PageLayout, DocsError> {
    if page == 0 || page > count {
        let noun = if count == 1 { "page" } else { "pages" };
        return Err(DocsError::BadRequest(format!(
            "the document has {count} {noun}; page {page} does not exist"
        )));
    }
    let index = page - 1;
    let (x0, y0, x1, y1) = document
        .get_page_media_box(index)
        .unwrap_or((0.0, 0.0, 612.0, 792.0));
    let (left, top) = (x0.min(x1), y0.max(y1));
    let spans = document
        .extract_spans(index)
        .map_err(|error| pdf_error(&error))?
        .into_iter()
        .filter(|span| !span.text.trim().is_empty())
        .map(|span| LayoutSpan {
            x: span.bbox.x - left,
            // pdf_oxide's bbox: y is the bottom edge, upward from the page's bottom.
            y: top - (span.bbox.y + span.bbox.height),
            width: span.bbox.width,
            height: span.bbox.height,
            text: span.text,
        })
        .collect();
    Ok(PageLayout {
        page,
        width: (x1 - x0).abs(),
        height: (y1 - y0).abs(),
        spans,
    })
}

/// The title in the document's information dictionary, if any.
fn title(document: &PdfDocument) -> Option<String> {
    let info = document.trailer().as_dict()?.get("Info")?;
    let info = document.resolve_object(info).ok()?;
    let title = info.as_dict()?.get("Title")?;
    let title = document.resolve_object(title).ok()?;
    let title = pdf_string(title.as_string()?);
    let title = title.trim();
    (!title.is_empty()).then(|| title.to_owned())
}

/// A PDF text string: UTF-16BE with a BOM, UTF-8 with a BOM, else PDFDocEncoding (read
/// as Latin-1, which it matches for the printable characters).
fn pdf_string(bytes: &[u8]) -> String {
    if let Some(utf16) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        let units: Vec<u16> = utf16
            .chunks_exact(2)
            .map(|pair| u16::from_be_bytes([pair[0], pair[1]]))
            .collect();
        return String::from_utf16_lossy(&units);
    }
    if let Some(utf8) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        return String::from_utf8_lossy(utf8).into_owned();
    }
    bytes.iter().map(|&byte| char::from(byte)).collect()
}

/// Whether `needle` occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// The error for a PDF `pdf_oxide` refused.
fn pdf_error(error: &pdf_oxide::Error) -> DocsError {
    let message = error.to_string();
    let lower = message.to_lowercase();
    if lower.contains("encrypt") || lower.contains("password") {
        return DocsError::Encrypted;
    }
    DocsError::Malformed(message)
}
